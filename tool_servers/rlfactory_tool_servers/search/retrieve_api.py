"""Search-R1's retriever API, ``POST /retrieve``, on the search server's HTTP transport.

Request and answer are those of Search-R1's ``search_r1/search/retrieval_server.py``, so its training scripts (and
RL-Factory's search tool) can use this server as their ``search_url``::

    POST /retrieve  {"queries": ["q1", ...], "topk": 3, "return_scores": true}
    200  {"result": [[{"document": {"id": "...", "contents": "\\"Title\\"\\ntext"}, "score": 12.3}, ...], ...]}

one list per query, best passage first. Without ``return_scores`` (it defaults to false) each list holds the bare
documents ``{"id", "contents"}``. A missing, null or 0 ``topk`` means the server's default topk, as in Search-R1.
The checks are a search tool call's (``SearchTools.check``), and the passages the same.

Errors answer ``{"detail": "<what is wrong>"}`` (FastAPI's shape, as Search-R1's server answers), never a traceback:

- 400: the body is not JSON;
- 413: the body is larger than ``max_body_bytes`` (refused before it is parsed);
- 422: the JSON is not a request: not an object, ``queries`` not a list of strings, ``topk`` not an integer,
  ``return_scores`` not a boolean (no type coercion), more than ``max_queries`` queries, an empty or too long
  query, ``topk`` outside 1..``max_topk``;
- 405: ``GET /retrieve``, which says how to call it;
- 502: the passage source raised ``ToolError`` (a remote retriever it forwards to failed; the message says how);
- 500: anything else went wrong retrieving (logged on the server, not sent).

Retrieval and the encoding of the answer run in a worker thread, so the event loop keeps serving other requests.
"""

from __future__ import annotations

import json
import logging
from typing import Annotated, Any

import anyio.to_thread
import pydantic
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from rlfactory_tool_servers.search.passages import Passage
from rlfactory_tool_servers.search.tools import SearchTools

RETRIEVE_PATH = "/retrieve"
DEFAULT_MAX_QUERIES = 1024
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
_REPORTED_PROBLEMS = 5

logger = logging.getLogger(__name__)


class BodyTooLarge(Exception):
    """The request body is larger than the route accepts."""


def request_model(max_queries: int) -> type[pydantic.BaseModel]:
    """Search-R1's ``QueryRequest``, strict, with at most ``max_queries`` queries (unknown keys ignored, as there)."""
    return pydantic.create_model(
        "QueryRequest",
        queries=(Annotated[list[pydantic.StrictStr], pydantic.Field(max_length=max_queries)], ...),
        topk=(pydantic.StrictInt | None, None),
        return_scores=(pydantic.StrictBool, False),
    )


def add_retrieve_route(server: MCPServer, service: SearchTools, *, max_queries: int = DEFAULT_MAX_QUERIES,
                       max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
    """Answer Search-R1's ``POST /retrieve`` on ``server``'s HTTP transport from ``service`` (see the module)."""
    model = request_model(max_queries)
    limits = service.limits

    async def retrieve(request: Request) -> Response:
        if request.method != "POST":
            return error_response(405, 'use POST with a JSON body {"queries": [...], "topk": N, "return_scores": '
                                       "true|false}", headers={"Allow": "POST"})
        try:
            body = await read_body(request, max_body_bytes)
        except BodyTooLarge:
            return error_response(413, f"the request body is larger than {max_body_bytes} bytes")
        try:
            query_request: Any = model.model_validate_json(body)
        except pydantic.ValidationError as exc:
            problems = exc.errors(include_input=False, include_url=False)
            if problems[0]["type"] == "json_invalid":
                reason = problems[0].get("ctx", {}).get("error", problems[0]["msg"])
                return error_response(400, f"the request body is not JSON: {reason}")
            return error_response(422, describe_problems(problems))
        queries: list[str] = query_request.queries
        topk: int = query_request.topk or limits.default_topk
        if not 1 <= topk <= limits.max_topk:
            return error_response(422, f"topk must be between 1 and {limits.max_topk} (0 or null: the default, "
                                       f"{limits.default_topk}), got {topk}")
        for position, query in enumerate(queries):
            try:
                service.check(query, topk)
            except ToolError as exc:
                return error_response(422, f"queries[{position}]: {exc}")
        try:
            answer = await anyio.to_thread.run_sync(answer_json, service, queries, topk, query_request.return_scores)
        except ToolError as exc:
            return error_response(502, str(exc))
        except Exception:
            logger.exception("POST %s failed", RETRIEVE_PATH)
            return error_response(500, "retrieval failed with an internal error; the server's log has the details")
        return Response(answer, media_type="application/json")

    server.custom_route(RETRIEVE_PATH, methods=["GET", "POST"], name="retrieve")(retrieve)


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The request's body; ``BodyTooLarge`` as soon as it (or its declared length) exceeds ``max_bytes``."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise BodyTooLarge
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise BodyTooLarge
    return bytes(body)


def answer_json(service: SearchTools, queries: list[str], topk: int, return_scores: bool) -> bytes:
    """The ``{"result": ...}`` answer to checked ``queries``, encoded (blocking: it retrieves)."""
    found = service.retrieve(queries, topk)
    if return_scores:
        result: list[list[Any]] = [[{"document": document(passage), "score": float(passage.score)}
                                    for passage in passages] for passages in found]
    else:
        result = [[document(passage) for passage in passages] for passages in found]
    return json.dumps({"result": result}, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def document(passage: Passage) -> dict[str, str]:
    """A passage as the corpus row Search-R1's server answers with."""
    return {"id": passage.id, "contents": passage.contents}


def describe_problems(problems: list[Any]) -> str:
    """pydantic's validation errors in one line: ``where: what`` for the first few."""
    if problems[0]["type"] == "model_type":
        return 'the body must be a JSON object {"queries": [...], "topk": N, "return_scores": true|false}'
    parts = [f"{field_path(problem['loc'])}: {problem['msg']}" for problem in problems[:_REPORTED_PROBLEMS]]
    more = f" (and {len(problems) - _REPORTED_PROBLEMS} more)" if len(problems) > _REPORTED_PROBLEMS else ""
    return "invalid request: " + "; ".join(parts) + more


def field_path(loc: tuple[str | int, ...]) -> str:
    """``("queries", 2)`` -> ``queries[2]``."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"detail": message}, status_code=status, headers=headers)
