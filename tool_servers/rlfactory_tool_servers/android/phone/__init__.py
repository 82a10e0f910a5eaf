"""A simulated Android phone for text agents: real state (contacts, messages, alarms, events, settings, notes,
expenses, tasks), real screens (trees of UI elements with AndroidWorld's attributes, a back stack, scrolling lists,
focused text fields, dialogs), AndroidWorld's action space, and parameterised tasks with success checks on the
final state. A library, not a server: the android tool server drives it, the env and its scripted policy read its
task templates, and the ADB backend (``adb``) gives a real device the same screen and actions.

- ``ui``: UI elements and how a screen is shown (T3A's numbered list, compact XML);
- ``state``: the phone's data, plain dataclasses;
- ``device``: the phone: apps, back stack, keyboard, dialogs, and the actions;
- ``apps``: one module per app, each rendering its screens from the state;
- ``tasks``: the task templates (parameters, setup, success check, reference plan);
- ``plans``: the steps a reference plan is written in, resolved against the screen text by a scripted policy.
"""
