"""Passages from a remote Search-R1-compatible retriever service (``POST /retrieve``).

Any server that speaks Search-R1's ``retrieval_server.py`` API will do: Search-R1's own, or another search server of
ours (its ``retrieve_api``). Each batch of at most ``max_batch`` queries is one request
``{"queries": [...], "topk": N, "return_scores": true}``; the answer ``{"result": [...]}`` holds one list per query,
best first, of either ``{"document": row, "score": x}`` or the bare ``row`` (a server that ignores
``return_scores``: the score is 0.0), where a row is a corpus row, ``{"id", "contents"}`` or ``{"id", "title",
"text"}`` (a missing id reads as ""). Extra passages beyond ``topk`` are dropped.

Connection failures and 5xx answers are retried ``retries`` times with exponential backoff; a timeout is not (the
retriever is busy, and asking again adds to its load). Every failure raises mcp's ``ToolError`` naming the URL and
what went wrong, which the search tool shows the model as the call's error. Answers larger than
``max_response_bytes`` are refused as they arrive, so a broken retriever cannot exhaust memory.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import httpx
from mcp.server.mcpserver.exceptions import ToolError
from tenacity import Retrying, before_sleep_log, retry_if_exception, stop_after_attempt, wait_exponential

from rlfactory_tool_servers.search.corpus import contents_of
from rlfactory_tool_servers.search.passages import Passage

DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
_ERROR_TEXT_CHARS = 300
_ERROR_BODY_BYTES = 4096
_ERRNO_PREFIX = re.compile(r"^\[Errno -?\d+\]\s*")
_RETRIED_TRANSPORT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.ReadError, httpx.WriteError,
                             httpx.RemoteProtocolError)

logger = logging.getLogger(__name__)


class RetrieverServerError(Exception):
    """The retriever answered with a 5xx status (worth asking again)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"HTTP {status}: {detail}")
        self.status = status
        self.detail = detail


def retriever_endpoint(url: str) -> str:
    """The ``/retrieve`` URL of the retriever at ``url`` (a URL without a path gets ``/retrieve``); ``ValueError``
    if ``url`` is not an http(s) URL with a host."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ValueError(f"retriever URL {url!r}: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"retriever URL {url!r}: expected http://HOST:PORT/retrieve")
    if parsed.path in ("", "/"):
        parsed = parsed.copy_with(path="/retrieve")
    return str(parsed)


class RemotePassages:
    """A ``PassageSource`` that asks the Search-R1 retriever at ``url`` (``http://host:port/retrieve``; a URL
    without a path gets ``/retrieve``). One pooled HTTP client, safe to call from several threads at once."""

    def __init__(self, url: str, *, timeout: float = 30.0, retries: int = 2, max_batch: int = 512,
                 backoff: float = 0.5, max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES) -> None:
        endpoint = retriever_endpoint(url)
        if timeout <= 0 or retries < 0 or max_batch < 1 or backoff < 0 or max_response_bytes < 1:
            raise ValueError("RemotePassages needs timeout > 0, retries >= 0, max_batch >= 1, backoff >= 0 and "
                             "max_response_bytes >= 1")
        self.url = endpoint
        self.timeout = timeout
        self.retries = retries
        self.max_batch = max_batch
        self.backoff = backoff
        self.max_response_bytes = max_response_bytes
        self._client = httpx.Client(timeout=timeout)

    def search(self, queries: list[str], topk: int) -> list[list[Passage]]:
        if topk < 1:
            raise ValueError(f"topk must be at least 1, got {topk}")
        found: list[list[Passage]] = []
        for start in range(0, len(queries), self.max_batch):
            batch = queries[start:start + self.max_batch]
            found += self.parse_answer(self.post({"queries": batch, "topk": topk, "return_scores": True}),
                                       len(batch), topk)
        return found

    def describe(self) -> str:
        return f"Search-R1 retriever at {self.url}"

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> RemotePassages:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def post(self, payload: dict[str, Any]) -> Any:
        """The retriever's parsed JSON answer to ``payload``, retrying what may pass; ``ToolError`` otherwise."""
        retrying = Retrying(stop=stop_after_attempt(self.retries + 1), reraise=True,
                            wait=wait_exponential(multiplier=self.backoff, max=max(self.backoff, 8.0)),
                            retry=retry_if_exception(is_transient),
                            before_sleep=before_sleep_log(logger, logging.WARNING))
        try:
            return retrying(self.post_once, payload)
        except httpx.ConnectError as exc:
            raise ToolError(f"cannot reach the retriever at {self.url}: {reason_of(exc)}") from exc
        except httpx.TimeoutException as exc:
            raise ToolError(f"the retriever at {self.url} did not answer within {self.timeout:g} s") from exc
        except httpx.HTTPError as exc:
            raise ToolError(f"the connection to the retriever at {self.url} failed: {reason_of(exc)}") from exc
        except RetrieverServerError as exc:
            raise ToolError(f"the retriever at {self.url} answered {exc}") from exc

    def post_once(self, payload: dict[str, Any]) -> Any:
        with self._client.stream("POST", self.url, json=payload) as response:
            if response.status_code >= 500:
                raise RetrieverServerError(response.status_code, error_detail(self.read_at_most(response, _ERROR_BODY_BYTES)))
            if response.status_code != 200:
                detail = error_detail(self.read_at_most(response, _ERROR_BODY_BYTES))
                raise ToolError(f"the retriever at {self.url} answered HTTP {response.status_code}: {detail}")
            body = self.read_bounded(response)
        try:
            return json.loads(body)
        except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise ToolError(f"the retriever at {self.url} did not answer JSON: {snippet(body)!r}") from None

    def read_bounded(self, response: httpx.Response) -> bytes:
        """The whole body of ``response``; ``ToolError`` once it exceeds ``max_response_bytes``."""
        declared = response.headers.get("content-length", "")
        too_large = ToolError(f"the retriever at {self.url} sent an answer larger than {self.max_response_bytes} "
                              "bytes")
        if declared.isdigit() and int(declared) > self.max_response_bytes:
            raise too_large
        body = bytearray()
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > self.max_response_bytes:
                raise too_large
        return bytes(body)

    @staticmethod
    def read_at_most(response: httpx.Response, limit: int) -> bytes:
        body = bytearray()
        for chunk in response.iter_bytes():
            body += chunk[:limit - len(body)]
            if len(body) >= limit:
                break
        return bytes(body)

    def parse_answer(self, answer: Any, num_queries: int, topk: int) -> list[list[Passage]]:
        """The passages of a ``{"result": [...]}`` answer to ``num_queries`` queries; ``ToolError`` saying what is
        wrong with it otherwise."""
        def malformed(what: str) -> ToolError:
            return ToolError(f"the retriever at {self.url} sent a malformed answer: {what}")

        result = answer.get("result") if isinstance(answer, dict) else None
        if not isinstance(result, list):
            raise malformed('expected a JSON object {"result": [...]}')
        if len(result) != num_queries:
            raise malformed(f"{len(result)} result lists for {num_queries} queries")
        found: list[list[Passage]] = []
        for i, hits in enumerate(result):
            if not isinstance(hits, list):
                raise malformed(f"result[{i}] is a {json_type(hits)}, not a list")
            passages: list[Passage] = []
            for j, hit in enumerate(hits[:topk]):
                try:
                    passages.append(passage_of(hit))
                except ValueError as exc:
                    raise malformed(f"result[{i}][{j}]: {exc}") from None
            found.append(passages)
        return found


def passage_of(hit: Any) -> Passage:
    """One passage of an answer: ``{"document": row, "score": x}`` or a bare ``row``; ``ValueError`` if neither."""
    if isinstance(hit, dict) and "document" in hit:
        document, score = hit["document"], hit.get("score", 0.0)
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise ValueError(f"'score' must be a number, got {json_type(score)}")
    else:
        document, score = hit, 0.0
    if isinstance(document, dict) and document.get("id") is None:
        document = {**document, "id": ""}
    passage_id, contents = contents_of(document)
    return Passage(passage_id, contents, float(score))


def is_transient(exc: BaseException) -> bool:
    """Whether asking again may succeed: the connection failed, or the server answered 5xx. (Retrieval changes
    nothing, so a POST that may have reached the server is safe to send again.)"""
    return isinstance(exc, (RetrieverServerError, *_RETRIED_TRANSPORT_ERRORS))


def reason_of(exc: Exception) -> str:
    """``[Errno 111] Connection refused`` -> ``connection refused``."""
    text = _ERRNO_PREFIX.sub("", str(exc)).strip() or type(exc).__name__
    return text[:1].lower() + text[1:]


def error_detail(body: bytes) -> str:
    """What an error answer says: FastAPI's ``{"detail": ...}`` when it is that, else the start of its text."""
    try:
        detail = json.loads(body)["detail"]
    except (ValueError, TypeError, KeyError, RecursionError):
        return snippet(body) or "(no body)"
    return detail if isinstance(detail, str) else json.dumps(detail)[:_ERROR_TEXT_CHARS]


def snippet(body: bytes) -> str:
    return body[:_ERROR_TEXT_CHARS].decode("utf-8", errors="replace").strip()


def json_type(value: Any) -> str:
    """The JSON name of ``value``'s type, for messages."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else "boolean"
    for kind, name in ((int, "number"), (float, "number"), (str, "string"), (list, "list"), (dict, "object")):
        if isinstance(value, kind):
            return name
    return type(value).__name__
