"""Where the search tool's passages come from: a local corpus with a retriever, or a remote retriever service.

A ``PassageSource`` answers many queries in one blocking call (the server runs it in a worker thread), each with
its passages best first, as ``Passage(id, contents, score)``: ``contents`` is wiki-18's ``"Title"\\ntext``.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

from rlfactory_tool_servers.search.corpus import Corpus
from rlfactory_tool_servers.search.ranking import Retriever


class Passage(NamedTuple):
    id: str
    contents: str
    score: float


class PassageSource(Protocol):
    def search(self, queries: list[str], topk: int) -> list[list[Passage]]:
        """For each query, at most ``topk`` passages, best first; blocking; safe from several threads at once."""

    def describe(self) -> str:
        """What the passages come from, in a few words, for the server's start line."""


class LocalPassages:
    """Passages of ``corpus`` ranked by ``retriever`` (built over that corpus: row ``i`` is passage ``i``)."""

    def __init__(self, corpus: Corpus, retriever: Retriever, description: str = "") -> None:
        if retriever.num_docs != len(corpus):
            raise ValueError(f"the index holds {retriever.num_docs} passages but the corpus holds {len(corpus)}")
        self.corpus = corpus
        self.retriever = retriever
        self.description = description

    def search(self, queries: list[str], topk: int) -> list[list[Passage]]:
        ids, contents = self.corpus.ids, self.corpus.contents
        return [[Passage(ids[row], contents[row], score) for row, score in zip(ranked.indices, ranked.scores)]
                for ranked in self.retriever.rank(queries, topk)]

    def describe(self) -> str:
        return self.description
