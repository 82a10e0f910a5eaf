"""The search tool, written once: ``search(query, topk)`` over a passage source, and its batched form answering a
whole list of searches with one retriever call."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver.exceptions import ToolError

from rlfactory_tool_servers.search.formatting import format_passages
from rlfactory_tool_servers.search.passages import Passage, PassageSource
from rlfactory_tool_servers.toolset import READ_ONLY, Toolset, tool

NO_MATCH_TEXT = "No passages matched the query. Try other keywords."


@dataclass(frozen=True)
class SearchLimits:
    """Bounds on one search request."""

    default_topk: int = 3
    max_topk: int = 20
    max_query_chars: int = 4096


class SearchTools(Toolset):
    """Checks search requests, retrieves, and formats the passages. A search retrieves ``max_topk`` passages and
    keeps the first ``topk``, so a request gets the same passages alone or in any batch."""

    annotations = READ_ONLY

    def __init__(self, source: PassageSource, limits: SearchLimits = SearchLimits()) -> None:
        self.source = source
        self.limits = limits

    def description_values(self) -> Mapping[str, Any]:
        return asdict(self.limits)

    def parameter_defaults(self) -> Mapping[str, Mapping[str, Any]]:
        return {"search": {"topk": self.limits.default_topk}}

    @tool(batch="search_many")
    async def search(self, query: str, topk: int = 3) -> str:
        """Search Wikipedia for a query and return the top passages, most relevant first.

        Each passage comes back on its own line as `Doc i(Title: "Article title") passage text`. Use a short,
        specific query (key words or a question), one fact per search; search again with other words if the
        passages do not answer the question. `topk` (1 to {max_topk}, default {default_topk}) is how many passages
        to return; a query may be at most {max_query_chars} characters long."""
        self.check(query, topk)
        [text] = await anyio.to_thread.run_sync(self.search_checked, [(query, topk)])
        return text

    async def search_many(self, calls: list[dict[str, Any]]) -> list[str | Exception]:
        """Many searches (validated ``{"query", "topk"}`` dicts), aligned with ``calls``: an out-of-bounds element
        gets its ``ToolError`` in its place, the others are retrieved together in one worker-thread call."""
        results: list[str | Exception] = [""] * len(calls)
        positions: list[int] = []
        requests: list[tuple[str, int]] = []
        for position, call in enumerate(calls):
            try:
                self.check(call["query"], call["topk"])
            except ToolError as exc:
                results[position] = exc
                continue
            positions.append(position)
            requests.append((call["query"], call["topk"]))
        try:
            texts = await anyio.to_thread.run_sync(self.search_checked, requests) if requests else []
        except ToolError as exc:  # one retrieval for the batch (a remote retriever's failure): each element fails alike
            texts = [exc] * len(requests)
        for position, text in zip(positions, texts):
            results[position] = text
        return results

    def check(self, query: str, topk: int) -> None:
        """Raise ``ToolError`` with a message the model can act on if the request is out of bounds."""
        if not query.strip():
            raise ToolError("query must not be empty")
        if len(query) > self.limits.max_query_chars:
            raise ToolError(f"query is {len(query)} characters long; the limit is {self.limits.max_query_chars}")
        if not 1 <= topk <= self.limits.max_topk:
            raise ToolError(f"topk must be between 1 and {self.limits.max_topk}, got {topk}")

    def search_checked(self, requests: Sequence[tuple[str, int]]) -> list[str]:
        """The formatted result of each ``(query, topk)`` request (already checked), from one retriever call."""
        if not requests:
            return []
        found = self.source.search([query for query, _ in requests], self.limits.max_topk)
        return [format_passages(passage.contents for passage in passages[:topk]) if passages else NO_MATCH_TEXT
                for (_, topk), passages in zip(requests, found)]

    def retrieve(self, queries: list[str], topk: int) -> list[list[Passage]]:
        """Search-R1's ``/retrieve``: each query's passages (checked as a tool call's are), in one blocking call."""
        for query in queries:
            self.check(query, topk)
        return self.source.search(queries, topk) if queries else []
