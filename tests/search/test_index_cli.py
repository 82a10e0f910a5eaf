"""``rlf index build`` and ``rlf index info`` end to end, in process, and their one-line errors."""

from __future__ import annotations

import json

import pytest

from rlfactory_envs.cli import main
from rlfactory_tool_servers.search import bm25_build
from rlfactory_tool_servers.search.bm25_retriever import BM25Retriever
from rlfactory_tool_servers.search.corpus import file_checksum
from rlfactory_tool_servers.search.dense_retriever import import_faiss
from rlfactory_tool_servers.search.manifest import read_manifest
from tests.search.conftest import MINILM, write_passages


def test_build_a_hnsw_index_and_describe_it(offline_hub, wiki_sample, tmp_path, capsys):
    corpus = write_passages(tmp_path / "corpus.jsonl", wiki_sample, 30, start=500)
    out = tmp_path / "index"
    status = main(["index", "build", "--corpus", str(corpus), "--backend", "faiss", "--model", MINILM,
                   "--max-length", "64", "--faiss-type", "hnsw", "--faiss-param", "M=16", "--faiss-param",
                   "efSearch=40", "--out", str(out), "--chunk-passages", "8", "--batch-size", "4"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    (line,) = captured.out.splitlines()
    assert line.startswith(f"built a faiss index of 30 passages into {out} in ")
    assert f"rlf serve search --corpus {corpus} --index-dir {out}" in line
    assert f'gym.make("rlf/Search-NQ-v0", corpus_path="{corpus}", index_dir="{out}")' in line
    assert "encoding" in captured.err  # the progress bar
    manifest = read_manifest(out)
    assert manifest.faiss.params == {"M": 16, "efConstruction": 200, "efSearch": 40}
    index = import_faiss().read_index(str(out / "index.faiss"))
    assert index.ntotal == 30 and index.hnsw.efSearch == 40

    assert main(["index", "info", str(out)]) == 0
    info = capsys.readouterr().out
    for expected in ("backend: faiss", "passages: 30", f"model: {MINILM}", "dimensions: 384",
                     f"build seconds: {manifest.build_seconds}", f"corpus checksum: {file_checksum(corpus)}"):
        assert expected in info.splitlines()


def test_an_interrupted_build_says_how_to_resume(wiki_sample, tmp_path, capsys, monkeypatch):
    corpus = write_passages(tmp_path / "corpus.jsonl", wiki_sample, 120)
    out = tmp_path / "index"
    command = ["index", "build", "--corpus", str(corpus), "--backend", "bm25", "--out", str(out),
               "--chunk-passages", "50", "--no-progress"]
    add = bm25_build.BM25Builder.add

    def stop_at_row_100(self, first_row, texts):
        if first_row == 100:
            raise KeyboardInterrupt
        add(self, first_row, texts)

    monkeypatch.setattr(bm25_build.BM25Builder, "add", stop_at_row_100)
    assert main(command) == 130
    assert capsys.readouterr().err == ("rlf index: interrupted after 100 of the corpus's passages; run the same "
                                       "command again to resume\n")
    monkeypatch.undo()
    assert main(command) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(f"built a bm25 index of 120 passages into {out}") and captured.err == ""
    assert BM25Retriever.load(out).num_docs == 120


@pytest.mark.parametrize("arguments, message", [
    (["build", "--corpus", "{tmp}/missing.jsonl", "--backend", "bm25", "--out", "{tmp}/out"],
     "rlf index: error: no corpus file at {tmp}/missing.jsonl"),
    (["build", "--corpus", "{corpus}", "--backend", "faiss", "--out", "{tmp}/out"],
     "rlf index: error: --backend faiss needs --model"),
    (["build", "--corpus", "{corpus}", "--backend", "milvus", "--out", "{tmp}/out"],
     "rlf index: error: --backend milvus needs --model"),
    (["info", "{tmp}"], "rlf index: error: {tmp} holds no built index"),
])
def test_one_line_errors(arguments, message, wiki_sample, tmp_path, capsys):
    corpus = write_passages(tmp_path / "corpus.jsonl", wiki_sample, 5)
    fill = {"tmp": str(tmp_path), "corpus": str(corpus)}
    assert main(["index", *(argument.format(**fill) for argument in arguments)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message.format(**fill)) and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("arguments, message", [
    (["--faiss-param", "M"], "argument --faiss-param: expected KEY=INT (e.g. M=32), got 'M'"),
    (["--faiss-type", "lsh"], "argument --faiss-type: invalid choice: 'lsh'"),
    (["--chunk-passages", "0"], "argument --chunk-passages: must be at least 1"),
])
def test_bad_options_are_usage_errors(arguments, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["index", "build", "--corpus", "c.jsonl", "--backend", "faiss", "--out", str(tmp_path), *arguments])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_info_of_a_bm25_index(wiki_sample, tmp_path, capsys):
    corpus = write_passages(tmp_path / "corpus.jsonl", wiki_sample, 10)
    assert main(["index", "build", "--corpus", str(corpus), "--backend", "bm25", "--out", str(tmp_path / "ix"),
                 "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["index", "info", str(tmp_path / "ix")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:4] == ["backend: bm25", "passages: 10", "model: -", "dimensions: -"]
    assert json.loads((tmp_path / "ix" / "manifest.json").read_text())["corpus"]["passages"] == 10
