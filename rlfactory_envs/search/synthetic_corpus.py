"""SYNTHETIC CORPUS, NOT REAL DATA: passages in Search-R1's wiki-18 jsonl layout, at any size, for scale tests.

Every word is a made-up pseudo-word (consonant-vowel syllables) except a few English function words; nothing is
copied from a real dataset. The output is deterministic for a seed (and a NumPy version), streamed to its file one
block of passages at a time (a 21M-passage corpus never sits in memory), and shaped like wiki-18 where retrieval
cost depends on it:

- ``{"id": "<row>", "contents": "\\"Title\\"\\ntext"}`` per line, ``text`` exactly ``words_per_passage`` (100)
  words, as wiki-18's passages are 100-word windows of an article. The first passage of an article starts with its
  title, as wiki-18's do.
- Articles of 1 to 20 consecutive passages (6 on average, as wiki-18: 21M passages from about 3.2M articles),
  titled by two capitalised names drawn from a space of 70**3 names.
- A passage's words: ``background`` words from one Zipf-distributed vocabulary (``vocabulary`` words, exponent
  ``zipf_exponent``; its most frequent words are English function words, some of them BM25 stopwords), ``topic``
  words from its article's topic (``topics`` topics of ``topic_words`` mid-frequency words each, Zipf within the
  topic), and ``article`` words: its article's title names and rare keywords. The words are shuffled.

Known-item queries (``queries`` of them, at passages drawn without replacement) are written beside the corpus:
``{"id": "q<i>", "query": "<title> <w1> <w2> <w3>", "row": <row>}``, the source passage's title and three distinct
non-function words of its text, so a retriever's recall@k of the source passage is measurable. Other passages of
the same article share the title and keywords, so recall@1 is not trivial.

``python -m rlfactory_envs.search.synthetic_corpus --passages 1000000 --out corpus.jsonl --queries-out queries.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
from bm25s.stopwords import STOPWORDS_EN

__all__ = ["FUNCTION_WORDS", "CorpusShape", "KnownItemQuery", "PassageBlock", "generate", "iter_blocks", "main",
           "read_queries"]

# The most frequent words of the background vocabulary, in rank order (English Wikipedia's top words).
FUNCTION_WORDS = ("the", "of", "and", "in", "to", "a", "was", "is", "for", "on", "as", "by", "with", "he", "that",
                  "at", "from", "his", "it", "an", "were", "which", "are", "this", "be", "had", "its", "has", "also",
                  "after")
CONSONANTS = "bdfgklmnprstvzh"
VOWELS = "aeiou"
SYLLABLES = tuple(c + v for c in CONSONANTS[:14] for v in VOWELS)  # 70 syllables
NAME_SPACE = len(SYLLABLES) ** 3
TITLE_NAMES = 2
KEYWORDS = 5
QUERY_TEXT_WORDS = 3
BLOCK = 4096


@dataclass(frozen=True)
class CorpusShape:
    """The statistics the generator draws from (defaults: roughly wiki-18's)."""

    words_per_passage: int = 100
    vocabulary: int = 100_000
    zipf_exponent: float = 1.0
    topics: int = 1_000
    topic_words: int = 40
    topic_share: float = 0.25
    article_share: float = 0.15
    mean_article_passages: float = 6.0
    max_article_passages: int = 20
    topic_rank_range: tuple[int, int] = (300, 30_000)
    keyword_rank_range: tuple[int, int] = (5_000, 100_000)

    def counts(self) -> tuple[int, int, int]:
        """Background, topic and article words per passage."""
        topic = round(self.words_per_passage * self.topic_share)
        article = round(self.words_per_passage * self.article_share)
        return self.words_per_passage - topic - article, topic, article


class KnownItemQuery(NamedTuple):
    id: str
    query: str
    row: int


@dataclass
class PassageBlock:
    """Consecutive passages: ``contents[i]`` is row ``first_row + i``; ``queries`` those drawn from this block."""

    first_row: int
    contents: list[str]
    queries: list[KnownItemQuery] = field(default_factory=list)


def pseudo_words(count: int, rng: np.random.Generator, exclude: set[str]) -> list[str]:
    """``count`` distinct lower-case pseudo-words of 2 to 4 syllables, none in ``exclude``."""
    words: list[str] = []
    seen = set(exclude)
    while len(words) < count:
        lengths = rng.choice([2, 3, 4], size=count, p=[0.1, 0.5, 0.4])
        syllables = rng.integers(0, len(SYLLABLES), size=(count, 4))
        for length, row in zip(lengths.tolist(), syllables.tolist()):
            word = "".join(SYLLABLES[s] for s in row[:length])
            if word not in seen:
                seen.add(word)
                words.append(word)
                if len(words) == count:
                    break
    return words


def name_of(name_id: int) -> str:
    """The capitalised three-syllable name numbered ``name_id`` (``0 <= name_id < NAME_SPACE``)."""
    s = len(SYLLABLES)
    return (SYLLABLES[name_id // (s * s)] + SYLLABLES[name_id // s % s] + SYLLABLES[name_id % s]).capitalize()


def zipf_cdf(size: int, exponent: float) -> np.ndarray:
    weights = 1.0 / np.arange(1, size + 1, dtype=np.float64) ** exponent
    cdf = np.cumsum(weights)
    return cdf / cdf[-1]


def draw(cdf: np.ndarray, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Ranks (0-based) drawn from the distribution with cumulative ``cdf``."""
    return np.minimum(np.searchsorted(cdf, rng.random(shape)), len(cdf) - 1)


class CorpusPlan:
    """Everything drawn once per corpus: the vocabulary, the topics, and each article's extent, topic, title and
    keywords (arrays of one entry per article: 3.5M articles cost about 200 MB at 21M passages)."""

    def __init__(self, passages: int, seed: int, shape: CorpusShape) -> None:
        if passages < 1:
            raise ValueError(f"passages must be at least 1, got {passages}")
        if shape.vocabulary < max(shape.topic_rank_range[1], shape.keyword_rank_range[1]):
            raise ValueError("the vocabulary must cover the topic and keyword rank ranges")
        self.passages, self.seed, self.shape = passages, seed, shape
        vocab_rng, topic_rng, article_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
        invented = pseudo_words(shape.vocabulary - len(FUNCTION_WORDS), vocab_rng, set(STOPWORDS_EN) |
                                set(FUNCTION_WORDS))
        self.vocabulary: list[str] = [*FUNCTION_WORDS, *invented]
        self.background_cdf = zipf_cdf(shape.vocabulary, shape.zipf_exponent)
        self.topic_cdf = zipf_cdf(shape.topic_words, shape.zipf_exponent)
        low, high = shape.topic_rank_range
        self.topic_table = topic_rng.integers(low, high, size=(shape.topics, shape.topic_words))
        # Article lengths: 1 + geometric, capped; enough articles to cover every passage.
        articles = int(passages / shape.mean_article_passages * 1.2) + 16
        lengths = np.minimum(article_rng.geometric(1 / shape.mean_article_passages, size=articles),
                             shape.max_article_passages)
        while lengths.sum() < passages:
            lengths = np.concatenate([lengths, np.minimum(article_rng.geometric(1 / shape.mean_article_passages,
                                                                                size=articles),
                                                          shape.max_article_passages)])
        self.article_starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        count = int(np.searchsorted(self.article_starts, passages))
        self.article_starts = self.article_starts[:count]
        self.article_topic = article_rng.integers(0, shape.topics, size=count)
        self.article_names = article_rng.integers(0, NAME_SPACE, size=(count, TITLE_NAMES))
        low, high = shape.keyword_rank_range
        self.article_keywords = article_rng.integers(low, high, size=(count, KEYWORDS))

    def query_rows(self, queries: int) -> np.ndarray:
        """The rows known-item queries are drawn from, sorted."""
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 1]))
        return np.sort(rng.choice(self.passages, size=min(queries, self.passages), replace=False))


def block_passages(plan: CorpusPlan, first: int, stop: int, query_rows: np.ndarray) -> PassageBlock:
    """Rows ``first .. stop - 1`` of the corpus, and the known-item queries of the rows in ``query_rows``."""
    shape, n = plan.shape, stop - first
    rng = np.random.default_rng(np.random.SeedSequence([plan.seed, 2, first]))
    rows = np.arange(first, stop)
    articles = np.searchsorted(plan.article_starts, rows, side="right") - 1
    block_articles = np.unique(articles)
    # Block-local word ids: vocabulary ranks, then this block's title names at ``len(vocabulary) + j``.
    names = plan.article_names[block_articles]
    unique_names, name_slots = np.unique(names, return_inverse=True)
    lookup = plan.vocabulary + [name_of(int(i)) for i in unique_names]
    name_ids = (len(plan.vocabulary) + name_slots.reshape(names.shape))
    local = np.searchsorted(block_articles, articles)
    article_words = np.concatenate([name_ids[local], plan.article_keywords[articles]], axis=1)

    n_background, n_topic, n_article = shape.counts()
    background = draw(plan.background_cdf, rng, (n, n_background))
    topic_table = plan.topic_table[plan.article_topic[articles]]
    topic = np.take_along_axis(topic_table, draw(plan.topic_cdf, rng, (n, n_topic)), axis=1)
    article = np.take_along_axis(article_words, rng.integers(0, article_words.shape[1], size=(n, n_article)), axis=1)
    words = np.concatenate([background, topic, article], axis=1)
    words = np.take_along_axis(words, np.argsort(rng.random(words.shape), axis=1), axis=1)

    starts_article = plan.article_starts[articles] == rows
    titles = [" ".join(lookup[i] for i in name_ids[j]) for j in range(len(block_articles))]
    contents: list[str] = []
    queries: list[KnownItemQuery] = []
    wanted = set(query_rows[(query_rows >= first) & (query_rows < stop)].tolist())
    for i, (row_words, title_slot, opens) in enumerate(zip(words.tolist(), local.tolist(), starts_article.tolist())):
        title = titles[title_slot]
        text_words = row_words[:-TITLE_NAMES] if opens else row_words
        text = " ".join(map(lookup.__getitem__, text_words))
        contents.append(f'"{title}"\n{title} {text}' if opens else f'"{title}"\n{text}')
        if first + i in wanted:
            candidates = sorted({w for w in text_words if len(FUNCTION_WORDS) <= w < len(plan.vocabulary)})
            picked = rng.choice(candidates, size=min(QUERY_TEXT_WORDS, len(candidates)), replace=False)
            query = " ".join([title, *(lookup[w] for w in picked.tolist())])
            queries.append(KnownItemQuery(f"q{first + i}", query, first + i))
    return PassageBlock(first, contents, queries)


def iter_blocks(passages: int, *, seed: int = 0, queries: int = 0,
                shape: CorpusShape = CorpusShape()) -> Iterator[PassageBlock]:
    """The corpus in blocks of consecutive passages, with its known-item queries in the blocks they come from."""
    plan = CorpusPlan(passages, seed, shape)
    query_rows = plan.query_rows(queries)
    for first in range(0, passages, BLOCK):
        yield block_passages(plan, first, min(first + BLOCK, passages), query_rows)


def generate(path: str | Path, passages: int, *, seed: int = 0, queries: int = 0,
             queries_path: str | Path | None = None, shape: CorpusShape = CorpusShape()) -> list[KnownItemQuery]:
    """Write ``passages`` passages to ``path`` (wiki-18 jsonl, row ``i`` has id ``str(i)``) and, when
    ``queries_path`` is given, ``queries`` known-item queries there; returns the queries (in row order)."""
    if queries and queries_path is None:
        raise ValueError("queries need a queries_path to be written to")
    written: list[KnownItemQuery] = []
    with Path(path).open("w", encoding="utf-8") as out:
        for block in iter_blocks(passages, seed=seed, queries=queries, shape=shape):
            out.write("".join(json.dumps({"id": str(block.first_row + i), "contents": contents}) + "\n"
                              for i, contents in enumerate(block.contents)))
            written.extend(block.queries)
    if queries_path is not None:
        with Path(queries_path).open("w", encoding="utf-8") as out:
            out.write("".join(json.dumps(q._asdict()) + "\n" for q in written))
    return written


def read_queries(path: str | Path) -> list[KnownItemQuery]:
    """The known-item queries ``generate`` wrote to ``path``."""
    with Path(path).open(encoding="utf-8") as lines:
        return [KnownItemQuery(**json.loads(line)) for line in lines if line.strip()]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlfactory_envs.search.synthetic_corpus", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=1_000_000, help="how many passages (default 1,000,000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--out", type=Path, required=True, help="the corpus file to write (jsonl)")
    parser.add_argument("--queries", type=int, default=1_000, help="known-item queries to write (default 1,000)")
    parser.add_argument("--queries-out", type=Path, default=None, help="the queries file (jsonl); none if omitted")
    args = parser.parse_args(argv)
    if args.passages < 1:
        parser.error("--passages must be at least 1")
    queries = args.queries if args.queries_out is not None else 0
    generate(args.out, args.passages, seed=args.seed, queries=queries, queries_path=args.queries_out)
    print(f"wrote {args.passages} passages to {args.out}"
          + (f" and {queries} queries to {args.queries_out}" if queries else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
