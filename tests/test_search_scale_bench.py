"""The search-at-scale benchmark and its synthetic corpus: the quick run (20k passages, real BM25, FAISS and MiniLM)
writes every field with sane values and merged batches beat one query per call (no absolute timing thresholds);
the generator is deterministic, in wiki-18's layout, and its queries have real targets; the plan scales right."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks import env_bench
from rlfactory_envs.search.scale_bench import PREFIX, Settings, corpus_files, main, parse_args, plan
from rlfactory_envs.search import synthetic_corpus as search_corpus
from rlfactory_tool_servers.search.bm25_retriever import BM25Retriever
from rlfactory_tool_servers.search.corpus import PassageReader, load_corpus

ROW_KEYS = ("name", "n", "seconds", "median_s", "min_s", "metric", "value", "target", "pass", "cpu_seconds")


def test_quick_run_reports_every_measurement(tmp_path, capsys):
    out = tmp_path / "scale.json"
    assert main(["--quick", "--work-dir", str(tmp_path / "work"), "--out-json", str(out)]) == 0

    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["quick"] is True and report["settings"]["passages"] == 20_000
    rows = {r["name"].removeprefix(PREFIX): r for r in report["results"]}
    batch = report["settings"]["batch"]
    expected = {"corpus_generate", "corpus_memory", "bm25_build", "bm25_memory_ram", "bm25_memory_mmap", "bm25_b1",
                f"bm25_b{batch}", "encode_minilm",
                *(f"faiss_{kind}_{what}" for kind in ("flat", "hnsw", "ivfpq") for what in ("build", "memory")),
                "faiss_flat_b1", f"faiss_flat_b{batch}",
                *(f"faiss_hnsw_ef{ef}_b{b}" for ef in (64, 128, 256) for b in (1, batch)),
                *(f"faiss_ivfpq_nprobe{p}_b{b}" for p in (16, 64) for b in (1, batch)),
                f"faiss_flat_blas_b{batch}",
                *(f"{name}_server{suffix}" for name in ("bm25", "flat_lookup", "flat_minilm", "flat_lookup_blas",
                                                         "flat_minilm_blas")
                  for suffix in ("", "_unmerged", "_sequential"))}
    assert set(rows) == expected
    for name, r in rows.items():
        for key in ROW_KEYS:
            assert key in r, (name, key)
        assert math.isfinite(r["value"]) and r["value"] > 0, name
    for name, r in rows.items():
        if "recall_at_10" in r:
            assert 0 < r["recall_at_10"] <= 1, name
    # the known-item queries find their passage; HNSW is near exact on these vectors, IVF-PQ (48-byte codes) is not
    assert rows[f"bm25_b{batch}"]["recall_at_10"] >= 0.9
    assert rows[f"faiss_hnsw_ef256_b{batch}"]["recall_at_10"] >= 0.9
    assert rows[f"faiss_ivfpq_nprobe16_b{batch}"]["recall_at_10"] <= rows[f"faiss_ivfpq_nprobe64_b{batch}"][
        "recall_at_10"]
    # memory is measured, not assumed: a flat index of 384-d float32 vectors holds 1,464.8 MB per million
    assert 0.8 * 1464.8 < rows["faiss_flat_memory"]["value"] < 1.3 * 1464.8
    assert rows["faiss_ivfpq_memory"]["value"] < rows["faiss_flat_memory"]["value"] / 5
    assert rows["faiss_hnsw_memory"]["value"] > rows["faiss_flat_memory"]["value"]
    assert rows["corpus_memory"]["chars_per_passage"] > 500
    assert rows["flat_lookup_blas_server"]["blas_threshold"] == 20
    for name in ("bm25", "flat_lookup", "flat_minilm", "flat_lookup_blas", "flat_minilm_blas"):
        merged = rows[f"{name}_server"]
        assert merged["p50_ms"] <= merged["p99_ms"] and merged["batches"] == 3
        assert merged["speedup_vs_unmerged"] > 0 and merged["speedup_vs_sequential"] > 0
        assert report["ratios"][f"{PREFIX}{name}_server/unmerged"] == merged["speedup_vs_unmerged"]
    # a batch of exact searches is one matrix product: it beats one search per call through the server
    for name in ("flat_lookup", "flat_minilm", "flat_lookup_blas", "flat_minilm_blas"):
        assert rows[f"{name}_server"]["speedup_vs_unmerged"] > 1.5, name
        assert rows[f"{name}_server"]["speedup_vs_sequential"] > 1.5, name
    for kind in ("corpus_text", "bm25_in_ram", "faiss_flat", "faiss_hnsw", "faiss_ivfpq"):
        assert report["plan"]["memory_gb"][kind] > 0, kind
    assert report["plan"]["build_hours"]["encode_minilm_this_cpu"] > 0
    printed = capsys.readouterr().out
    assert "flat_minilm_server" in printed and "plan for 21M passages" in printed


def test_the_generator_is_deterministic_and_writes_wiki18_rows(tmp_path):
    first, again, other = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    queries = search_corpus.generate(first, 3_000, seed=0, queries=40, queries_path=tmp_path / "q.jsonl")
    search_corpus.generate(again, 3_000, seed=0)
    search_corpus.generate(other, 3_000, seed=1)
    assert first.read_bytes() == again.read_bytes() != other.read_bytes()

    corpus = load_corpus(first)
    assert corpus.ids == [str(i) for i in range(3_000)]
    articles = set()
    for contents in corpus.contents:
        title_line, text = contents.split("\n")
        assert title_line.startswith('"') and title_line.endswith('"')
        assert len(text.split()) == 100
        articles.add(title_line)
    assert 300 < len(articles) < 1_000  # about 6 passages an article
    assert search_corpus.read_queries(tmp_path / "q.jsonl") == queries and len(queries) == 40
    for query in queries:
        title = corpus.contents[query.row].split("\n")[0].strip('"')
        assert query.query.startswith(title + " ") and len(query.query.split()) == 5


def test_known_item_queries_find_their_own_passage(tmp_path):
    path = tmp_path / "corpus.jsonl"
    queries = search_corpus.generate(path, 5_000, seed=3, queries=200, queries_path=tmp_path / "q.jsonl")
    retriever = BM25Retriever.build([contents for _, contents in PassageReader(path)])
    found = retriever.rank([q.query for q in queries], 10)
    assert sum(q.row in r.indices for q, r in zip(queries, found)) / len(queries) >= 0.9
    # ... and not any passage: paired with a far query's passage (another article), the hits almost never hold it
    shifted = [queries[(i + len(queries) // 2) % len(queries)].row for i in range(len(queries))]
    assert sum(row in r.indices for row, r in zip(shifted, found)) / len(queries) < 0.05


def test_a_generated_corpus_is_reused_only_for_the_same_size_and_seed(tmp_path):
    settings = Settings(passages=2_000, queries=30, work_dir=tmp_path)
    made = corpus_files(settings)
    reused = corpus_files(settings)
    assert not made.reused and reused.reused and reused.corpus == made.corpus
    assert reused.seconds == pytest.approx(made.seconds)
    assert not corpus_files(Settings(passages=2_000, queries=30, seed=1, work_dir=tmp_path)).reused
    made.corpus.with_name(made.corpus.name.replace(".jsonl", "-queries30.done.json")).unlink()
    assert not corpus_files(settings).reused  # an unfinished generation is made again


def test_the_plan_scales_measured_figures_to_21m_passages_of_768_dimensions():
    figures = {"corpus_mb": 700.0, "bm25_ram_mb": 900.0, "bm25_disk_mb": 600.0, "bm25_build_s": 100.0,
               "flat_mb": 1464.84, "hnsw_mb": 1720.0, "ivfpq_mb": 56.0 / 1.048576, "flat_build_s": 5.0,
               "hnsw_build_s": 300.0, "ivfpq_build_s": 200.0, "pq_code_bytes": 48, "encode_s": 25_000.0}
    projection = plan(Settings(), figures)
    memory, hours = projection["memory_gb"], projection["build_hours"]
    assert memory["faiss_flat"] == pytest.approx(21e6 * 768 * 4 / 2**30, rel=1e-3)  # 64.5 GB = 60.1 GiB
    assert memory["faiss_hnsw"] == pytest.approx(memory["faiss_flat"] + 21 * (1720.0 - 1464.84) / 1024)
    assert memory["faiss_ivfpq"] == pytest.approx(21e6 * (96 + 8) / 2**30, rel=1e-3)
    assert memory["corpus_text"] == pytest.approx(21 * 700 / 1024)
    assert hours["faiss_hnsw_build"] == pytest.approx(21 * 300 * 2 / 3600)
    assert hours["encode_minilm_this_cpu"] == pytest.approx(21 * 25_000 / 3600)


@pytest.mark.parametrize("argv", [["--passages", "0"], ["--batch", "0"], ["--dim", "100"], ["--passages", "500"],
                                  ["--stages", "bm25,nope"]])
def test_bad_sizes_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse_args(argv)
    assert exit_info.value.code == 2 and "error:" in capsys.readouterr().err


def test_a_subset_of_stages_runs_alone(tmp_path):
    out = tmp_path / "scale.json"
    assert main(["--quick", "--passages", "5000", "--queries", "32", "--batch", "16", "--latency-batches", "2",
                 "--encode-passages", "4", "--stages", "flat_blas", "--work-dir", str(tmp_path),
                 "--out", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    names = {r["name"].removeprefix(PREFIX) for r in report["results"]}
    assert not any(name.startswith(("bm25", "faiss_hnsw", "faiss_ivfpq", "flat_lookup_server")) for name in names)
    assert {"faiss_flat_build", "faiss_flat_blas_b16", "flat_lookup_blas_server"} <= names
    assert set(report["plan"]["memory_gb"]) == {"corpus_text", "faiss_flat"}


def test_env_bench_lists_the_scale_benchmark():
    assert "search_scale" in env_bench.NAMES
    assert env_bench.parse_args(["--only", "search_scale"]).only == ["search_scale"]
