"""JSON over HTTP for the doors: a body read within its byte limit and decoded, and errors as one-line answers."""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response


class RequestError(Exception):
    """A request the server refuses: the HTTP status and what is wrong, in one line."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.headers = headers or {}


_ENCODER = msgspec.json.Encoder(enc_hook=str)


def dump_json(payload: Any) -> bytes:
    """``payload`` as UTF-8 JSON: values JSON cannot hold written as their ``str``, NaN and infinities as null."""
    try:
        return _ENCODER.encode(payload)
    except ValueError:  # a lone surrogate, which UTF-8 cannot hold: written escaped
        return json.dumps(payload, default=str).encode()


_LONE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])")


def load_json(data: bytes | str) -> Any:
    """The JSON value ``data`` holds; ``ValueError`` (or ``RecursionError``, nested too deep) when it is not JSON
    or holds a string no Unicode text can be (a lone UTF-16 surrogate escape, ``"\\ud800"``)."""
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        if "surrogate" in str(exc) or _LONE_SURROGATE.search(raw):
            raise ValueError("a string holds a lone UTF-16 surrogate escape (\\ud800-\\udfff without its pair), "
                             "which is no Unicode character") from None
        raise


def json_response(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """``payload`` as JSON (``dump_json``)."""
    return Response(dump_json(payload), status, headers, media_type="application/json")


def error_response(error: RequestError, key: str = "detail") -> Response:
    return json_response({key: str(error)}, error.status, error.headers)


async def read_json(request: Request, limit: int, *, empty: Any = None) -> Any:
    """The request's JSON body, read up to ``limit`` bytes (413 past it, 400 when it is not JSON); ``empty`` for
    an empty body when given, else an empty body is a 400."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise RequestError(413, f"the body is over the limit of {limit} bytes (--max-request-bytes)")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestError(413, f"the body is over the limit of {limit} bytes (--max-request-bytes)")
        chunks.append(chunk)
    body = b"".join(chunks)
    if not body.strip() and empty is not None:
        return empty
    return decode_json(body)


def decode_json(body: bytes | str) -> Any:
    try:
        return load_json(body)
    except (ValueError, RecursionError) as exc:  # bad UTF-8 or JSON, or nested too deep
        raise RequestError(400, f"the body is not JSON ({' '.join(str(exc).split())[:200]})") from None


def type_name(value: Any) -> str:
    """How a message names a JSON value's type."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)
