"""The error a user's own mistake raises: a bad setting, a missing file, a dead tool server, a broken reward.

Defined here, in the lowest layer that raises it (a reward's settings), so every layer above shares the one class;
``rlfactory_envs.kernel.errors`` hands it on."""


class ConfigError(ValueError):
    """An environment cannot be built as configured. The message is one line naming the problem and the fix; the
    ``rlf`` command prints it alone (no traceback) and exits non-zero."""
