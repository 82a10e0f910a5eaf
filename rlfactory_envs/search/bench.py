"""``rlf bench --only search``: the search tool path, measured end to end.

- ``search_{corpus}``: queries/s of N concurrent BM25 searches (64 with ``--quick``, else 1,024) through the
  toolbox (in-process ``search`` server), merged into one ``search_batch`` request, and ``search_{corpus}_unmerged``
  the same as one request each. ``{corpus}`` is ``sample`` (the embedded sample corpus) and, when the reference data
  has it (``wiki/wiki18_sample_1000.jsonl``), ``wiki18_1000``.

``rlfactory_envs/search/scale_bench.py`` (``search_scale``) measures search at a million passages.
"""

from __future__ import annotations

import asyncio
import statistics
from pathlib import Path
from typing import Any

from rlfactory_envs.benchmarking import BATCHING, BenchContext, Timing, row, timed_repeats
from rlfactory_envs.kernel.mcp.toolbox import Toolbox
from rlfactory_envs.kernel.tool_call import ToolCall
from rlfactory_envs.search.env import search_server_config
from rlfactory_envs.search.family import SAMPLE_CORPUS_PATH
from rlfactory_envs.search.tasks import sample_tasks

WIKI_SAMPLE = "wiki/wiki18_sample_1000.jsonl"
"""The 1,000 wiki-18 passages of the reference data (``BenchContext.data``)."""


async def search_timing(corpus: Path, queries: list[str], batching: bool, repeats: int) -> Timing:
    """Timing of all ``queries`` searched at once through one toolbox, merged or one request each."""
    toolbox = Toolbox(search_server_config(str(corpus), tuning={"batching": batching}))
    calls = [ToolCall("search", {"query": q}) for q in queries]
    try:
        await toolbox.astart()

        async def search_all() -> None:
            results = await toolbox.acall_many(calls)
            errors = [r.text for r in results if r.is_error]
            if errors:
                raise RuntimeError(f"{len(errors)} searches failed, e.g. {errors[0]}")
        return await timed_repeats(repeats, None, search_all)
    finally:
        await asyncio.to_thread(toolbox.close)


def search_corpora(context: BenchContext) -> tuple[dict[str, Path], list[str]]:
    """The corpora searched, by row label, and a note when the wiki-18 sample is absent."""
    wiki = context.data(WIKI_SAMPLE)
    if wiki is None:
        return {"sample": SAMPLE_CORPUS_PATH}, [context.absent("search on wiki-18 skipped", WIKI_SAMPLE)]
    return {"sample": SAMPLE_CORPUS_PATH, "wiki18_1000": wiki}, []


def bench_search(context: BenchContext) -> tuple[list[dict[str, Any]], list[str]]:
    """The ``search_*`` rows (see the module docstring)."""
    n = 64 if context.quick else 1024
    questions = [task.question for task in sample_tasks()]
    queries = [questions[i % len(questions)] for i in range(n)]
    corpora, notes = search_corpora(context)
    rows = []
    for label, corpus in corpora.items():
        for batching, suffix in BATCHING:
            timing = asyncio.run(search_timing(corpus, queries, batching, context.repeats))
            rows.append(row(f"search_{label}{suffix}", n, timing, "queries/s", n / statistics.median(timing.walls),
                            corpus=str(corpus)))
    return rows, notes
