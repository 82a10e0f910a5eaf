"""The embedded synthetic sample: files equal the generator's output, answers are findable, BM25 finds them."""

from __future__ import annotations

import json

import pytest

from rlfactory_envs.search import sample_data
from rlfactory_envs.search.tasks import SAMPLE_CORPUS_PATH, SAMPLE_QUESTIONS_PATH
from rlfactory_reward_models.qa_match import exact_match, normalize_answer

MIN_TOP1_RATE = 0.8


def _read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _title(contents: str) -> str:
    first_line = contents.split("\n", 1)[0]
    assert first_line.startswith('"') and first_line.endswith('"'), contents
    return first_line[1:-1]


def test_shipped_files_equal_the_generator_output():
    # If this fails, run `python -m rlfactory_envs.search.sample_data` and commit the data files.
    assert SAMPLE_QUESTIONS_PATH.read_text(encoding="utf-8") == sample_data.questions_text()
    assert SAMPLE_CORPUS_PATH.read_text(encoding="utf-8") == sample_data.corpus_text()


def test_generator_is_deterministic():
    assert sample_data.questions_text() == sample_data.questions_text()
    assert sample_data.corpus_text() == sample_data.corpus_text()


def test_write_sample(tmp_path):
    questions, corpus = tmp_path / "q" / "questions.jsonl", tmp_path / "c" / "corpus.jsonl"
    sample_data.write_sample(questions, corpus)
    assert questions.read_bytes() == SAMPLE_QUESTIONS_PATH.read_bytes()
    assert corpus.read_bytes() == SAMPLE_CORPUS_PATH.read_bytes()


def test_layouts_and_size():
    questions = _read_jsonl(SAMPLE_QUESTIONS_PATH)
    corpus = _read_jsonl(SAMPLE_CORPUS_PATH)
    assert 50 <= len(questions) <= 80
    assert 150 <= len(corpus) <= 250
    for row in questions:
        assert set(row) == {"id", "question", "answer", "data_source"}
        assert row["data_source"] == "rlf-sample" and row["id"].startswith("rlf-sample-")
        assert isinstance(row["question"], str) and row["question"].strip()
        assert row["answer"] and all(isinstance(a, str) and normalize_answer(a) for a in row["answer"])
    assert len({row["id"] for row in questions}) == len(questions)
    assert len({normalize_answer(row["question"]) for row in questions}) == len(questions)
    assert any(len(row["answer"]) > 1 for row in questions)  # some answers carry an alias
    assert [row["id"] for row in corpus] == [str(i) for i in range(len(corpus))]
    for row in corpus:
        assert set(row) == {"id", "contents"}
        title = _title(row["contents"])
        assert title and row["contents"].split("\n", 1)[1].strip()


def test_every_answer_occurs_in_some_passage():
    passages = [normalize_answer(row["contents"]) for row in _read_jsonl(SAMPLE_CORPUS_PATH)]
    for row in _read_jsonl(SAMPLE_QUESTIONS_PATH):
        assert any(normalize_answer(answer) in passage for answer in row["answer"] for passage in passages), row


def test_most_answers_are_article_titles():
    titles = {normalize_answer(_title(row["contents"])) for row in _read_jsonl(SAMPLE_CORPUS_PATH)}
    questions = _read_jsonl(SAMPLE_QUESTIONS_PATH)
    titled = sum(any(normalize_answer(a) in titles for a in row["answer"]) for row in questions)
    assert titled / len(questions) >= MIN_TOP1_RATE


@pytest.mark.parametrize(("k1", "b"), [(0.9, 0.4), (1.5, 0.75)], ids=["search-r1", "bm25s-default"])
def test_bm25_top1_is_the_answer_titled_passage(k1, b):
    """The baseline "answer with the title of the top BM25 passage" scores well, but not perfectly.

    k1=0.9, b=0.4 are Pyserini's defaults, which Search-R1's BM25 retriever uses; 1.5 / 0.75 are bm25s's own.
    """
    bm25s = pytest.importorskip("bm25s")
    stemmer_module = pytest.importorskip("Stemmer")
    stemmer = stemmer_module.Stemmer("english")
    corpus = _read_jsonl(SAMPLE_CORPUS_PATH)
    questions = _read_jsonl(SAMPLE_QUESTIONS_PATH)
    contents = [row["contents"] for row in corpus]

    index = bm25s.BM25(k1=k1, b=b)
    index.index(bm25s.tokenize(contents, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    query_tokens = bm25s.tokenize([row["question"] for row in questions], stopwords="en", stemmer=stemmer,
                                  show_progress=False)
    top, _scores = index.retrieve(query_tokens, k=1, show_progress=False)

    hits = [exact_match(_title(contents[int(best[0])]), row["answer"]) for best, row in zip(top, questions)]
    rate = sum(hits) / len(questions)
    assert MIN_TOP1_RATE <= rate < 1.0, f"top-1 title rate {rate:.3f}"
