"""The error a user's own mistake raises: a bad setting, a missing file, a dead tool server, a broken reward."""


class ConfigError(ValueError):
    """An environment cannot be built as configured. The message is one line naming the problem and the fix; the
    ``rlf`` command prints it alone (no traceback) and exits non-zero."""
