"""How the command-line programs (``rlf``, ``python -m rlfactory_adapters.prepare_data``) end on a user's mistake:
one line naming the problem and the fix (followed by the detail the error carries on its next lines, such as the
last lines a server that died at start wrote to its stderr), exit status 2, and the traceback only with
``--debug``."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any

from rlfactory_envs.kernel.errors import ConfigError, MissingExtra
from rlfactory_envs.kernel.mcp.errors import TransportError, describe

USER_ERRORS = (ConfigError, TransportError, OSError, ValueError, MissingExtra)
"""What a user's mistake raises: a bad setting, option or file, a dead tool server or model endpoint, an extra not
installed."""

DEBUG_HELP = "show the full traceback of a failure instead of one line, and warnings where they are raised"


def run_command(prog: str, body: Callable[[], int], *, debug: bool) -> int:
    """``body()``'s exit status; a user's mistake printed as ``PROG: error: ...`` (status 2), an interrupt as
    status 130, warnings as ``PROG: warning: ...`` on one line each. With ``debug`` the exception propagates and
    warnings show where they were raised."""
    if debug:
        return body()

    def one_line_warning(message: Warning | str, *_: Any, **__: Any) -> None:
        print(f"{prog}: warning: {' '.join(str(message).split())}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = one_line_warning
        try:
            return body()
        except USER_ERRORS as exc:
            print(f"{prog}: error: {describe(exc)} (--debug shows the traceback)", file=sys.stderr)
            detail = str(exc).strip().splitlines()[1:]  # a dead server's last lines of stderr, indented
            if detail:
                print("\n".join(detail), file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"{prog}: interrupted", file=sys.stderr)
            return 130

