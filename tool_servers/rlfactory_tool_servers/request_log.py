"""A log line for every MCP request a server answers: a server middleware (``MCPServer.middleware``).

At ``INFO`` each request gives one line when it ends: its method, the tool it calls (``tools/call``), how long it
took and whether it failed (``is_error=true`` for an error result or an error answer, ``cancelled`` when the
client gave up). At ``DEBUG`` a request also gives a line when it starts, with its parameters cut to
``MAX_PARAMS_CHARS``, and so does each notification the client sends.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

logger = logging.getLogger("rlfactory_tool_servers.requests")

MAX_PARAMS_CHARS = 500


def _outcome(result: HandlerResult) -> str:
    failed = isinstance(result, dict) and result.get("isError") is True
    return f"is_error={'true' if failed else 'false'}"


def _params_text(params: Any) -> str:
    text = json.dumps(params, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_PARAMS_CHARS else text[:MAX_PARAMS_CHARS] + "..."


async def log_requests(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: log ``ctx``'s request (see the module's docstring)."""
    if ctx.request_id is None:
        logger.debug("notification %s params=%s", ctx.method, _params_text(ctx.params))
        return await call_next(ctx)
    if not logger.isEnabledFor(logging.INFO):
        return await call_next(ctx)
    tool = (ctx.params or {}).get("name") if ctx.method == "tools/call" else None
    what = f"{ctx.method} {tool}" if isinstance(tool, str) else ctx.method
    logger.debug("%s started, params=%s", what, _params_text(ctx.params))
    started = time.perf_counter()
    outcome = "cancelled"
    try:
        result = await call_next(ctx)
        outcome = _outcome(result)
        return result
    except Exception as exc:
        outcome = f"is_error=true ({type(exc).__name__}: {exc})"
        raise
    finally:
        logger.info("%s %.1f ms %s", what, (time.perf_counter() - started) * 1000, outcome)
