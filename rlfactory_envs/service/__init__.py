"""Doors: any rlf env served to trainers that take environments as services.

``rlf serve env ID_OR_SPEC --protocol openenv|ors`` serves one env over OpenEnv's HTTP/WebSocket API
(``openenv``) or the Open Reward Standard (``ors``). A door is a thin translation over the same runtime and episodes:
every session is a light ``ToolEnv`` on the served env's one runtime (``episodes``), so the steps of all sessions
share one toolbox, and calls that arrive together are merged into one request per batched tool. Who may call, how
much a request, a frame and a session may take, and when an idle session is closed are the same for both
(``access``, ``episodes.ServiceLimits``).
"""
