"""Loading search tasks: NQ-open / FlashRAG jsonl, Search-R1 parquet, malformed files, the embedded sample."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rlfactory_envs.kernel.task_source import TaskSource
from rlfactory_envs.search.task import SearchTask
from rlfactory_envs.search.tasks import SAMPLE_CORPUS_PATH, SAMPLE_QUESTIONS_PATH, load_search_tasks, sample_tasks
from tests.conftest import SHARED_DATA

NQ_DEV = SHARED_DATA / "nq" / "NQ-open.dev.jsonl"

# Search-R1's instruction prefix (scripts/data_process/nq_search.py, template "base"), abridged.
SEARCH_R1_PREFIX = (
    "Answer the given question. You must conduct reasoning inside <think> and </think> first every time you get "
    "new information. ... For example, <answer> Beijing </answer>. Question: "
)


def _write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _search_r1_row(question: str, answers: list[str], index: int, split: str = "test") -> dict:
    return {
        "data_source": "nq",
        "prompt": [{"role": "user", "content": f"{SEARCH_R1_PREFIX}{question}\n"}],
        "ability": "fact-reasoning",
        "reward_model": {"style": "rule", "ground_truth": {"target": answers}},
        "extra_info": {"split": split, "index": index},
    }


def _write_parquet(path: Path, rows: list[dict]) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


# --- jsonl ---------------------------------------------------------------------------------------------------------

@pytest.mark.skipif(not NQ_DEV.is_file(), reason=f"real NQ-open dev split not found at {NQ_DEV} (shared data absent)")
def test_real_nq_open_dev():
    source = load_search_tasks(NQ_DEV)
    assert isinstance(source, TaskSource)
    assert len(source) == 3608  # of 3,610: two whose every answer normalises to "" ('---', ')') are left out
    assert {"290", "363"}.isdisjoint(task.task_id for task in source)
    assert source.name == "NQ-open.dev"
    assert source.path == str(NQ_DEV)
    first = source[0]
    assert first == SearchTask(task_id="0", question="when was the last time anyone was on the moon",
                               golden_answers=("14 December 1972 UTC", "December 1972"), data_source="nq")
    assert source.by_id("3609") is source[-1]
    assert all(task.golden_answers and task.question for task in source)


def test_nq_layout(tmp_path):
    path = _write_jsonl(tmp_path / "tiny.dev.jsonl", [
        {"question": "who climbed mount arvel", "answer": ["Brannoch Tully", "Tully"]},
        {"question": "what is the capital of quenmark", "answer": "Dunmere"},
    ])
    source = load_search_tasks(str(path))
    assert source.name == "tiny.dev" and source.path == str(path)
    assert [t.task_id for t in source] == ["0", "1"]
    assert source[0].golden_answers == ("Brannoch Tully", "Tully")
    assert source[1].golden_answers == ("Dunmere",)
    assert source[0].data_source == "nq"


def test_flashrag_layout_keeps_ids(tmp_path):
    path = _write_jsonl(tmp_path / "test.jsonl", [
        {"id": "test_0", "question": "q0", "golden_answers": ["ay"], "metadata": {}},
        {"id": "test_1", "question": "q1", "golden_answers": ["b", "c"]},
    ])
    source = load_search_tasks(path)
    assert [t.task_id for t in source] == ["test_0", "test_1"]
    assert source.by_id("test_1").golden_answers == ("b", "c")


def test_blank_lines_are_skipped_and_ids_are_line_numbers(tmp_path):
    path = tmp_path / "gaps.jsonl"
    path.write_text('{"question": "q0", "answer": ["ay"]}\n\n{"question": "q2", "answer": ["b"]}\n\n', encoding="utf-8")
    assert [t.task_id for t in load_search_tasks(path)] == ["0", "2"]


def test_json_list_and_bom(tmp_path):
    path = tmp_path / "list.json"
    path.write_text("\ufeff" + json.dumps([{"question": "q", "answer": ["ay"]}]), encoding="utf-8")
    source = load_search_tasks(path)
    assert len(source) == 1 and source[0].task_id == "0"
    lines = tmp_path / "lines.json"
    lines.write_text("\ufeff" + json.dumps({"question": "q", "answer": ["ay"]}) + "\n", encoding="utf-8")
    assert load_search_tasks(lines)[0].question == "q"


# --- parquet -------------------------------------------------------------------------------------------------------

def test_search_r1_parquet(tmp_path):
    path = _write_parquet(tmp_path / "test.parquet", [
        _search_r1_row("who invented the tide clock?", ["Oska Brenn"], 0),
        _search_r1_row("Question: a question that says Question: inside?", ["x", "y"], 17),
    ])
    source = load_search_tasks(path)
    assert source.name == "test"
    assert [t.task_id for t in source] == ["test_0", "test_17"]
    assert source[0].question == "who invented the tide clock?"
    assert source[0].golden_answers == ("Oska Brenn",)
    assert source[0].data_source == "nq"
    assert source[1].question == "inside?"  # the text after the last "Question:"
    assert source.by_id("test_17").golden_answers == ("x", "y")


def test_parquet_question_column_wins_and_row_numbers_are_default_ids(tmp_path):
    rows = [{"question": "the real question", "prompt": [{"role": "user", "content": "Question: other"}],
             "golden_answers": ["ay"]},
            {"question": None, "prompt": [{"role": "system", "content": "be brief"},
                                          {"role": "user", "content": "no marker here "}],
             "golden_answers": ["b"]}]
    source = load_search_tasks(_write_parquet(tmp_path / "mixed.parquet", rows))
    assert [t.question for t in source] == ["the real question", "no marker here"]
    assert [t.task_id for t in source] == ["0", "1"]


# --- malformed files -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "line", "what"), [
    ('{"question": "q", "answer": ["ay"]}\n{"question": "q"\n', 2, "not valid JSON"),
    ('{"question": "q", "answer": ["ay"]}\n["a list"]\n', 2, "JSON object"),
    ('{"answer": ["ay"]}\n', 1, "question"),
    ('{"question": "q", "answer": []}\n', 1, "golden_answers"),
    ('{"question": "q", "answer": [1]}\n', 1, "golden_answers"),
    ('{"question": "  ", "answer": ["ay"]}\n', 1, "question"),
    ('\n\n{"id": "x", "question": "q", "answer": ["ay"]}\n{"id": "x", "question": "r", "answer": ["b"]}\n', 4,
     "repeats"),
])
def test_malformed_jsonl(tmp_path, text, line, what):
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=what) as raised:
        load_search_tasks(path)
    assert str(path) in str(raised.value)
    assert f"line {line}:" in str(raised.value)


def test_malformed_parquet_row(tmp_path):
    rows = [_search_r1_row("q0", ["ay"], 0), _search_r1_row("q1", ["ay"], 1)]
    rows[1]["reward_model"] = {"style": "rule", "ground_truth": {"target": []}}
    path = _write_parquet(tmp_path / "bad.parquet", rows)
    with pytest.raises(ValueError, match=r"row 2: .*golden_answers"):
        load_search_tasks(path)


def test_unreadable_files(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no search tasks"):
        load_search_tasks(empty)
    not_parquet = tmp_path / "fake.parquet"
    not_parquet.write_text("hello", encoding="utf-8")
    with pytest.raises(ValueError, match="fake.parquet"):
        load_search_tasks(not_parquet)
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ValueError, match="binary.jsonl"):
        load_search_tasks(binary)
    with pytest.raises(ValueError, match=r"cannot read search tasks from a \.csv file"):
        load_search_tasks(tmp_path / "questions.csv")
    with pytest.raises(FileNotFoundError):
        load_search_tasks(tmp_path / "missing.jsonl")
    with pytest.raises(FileNotFoundError):
        load_search_tasks(tmp_path / "missing.parquet")


# --- the embedded sample -------------------------------------------------------------------------------------------

def test_sample_tasks():
    source = sample_tasks()
    assert source.name == "rlf-search-sample"
    assert source.path == str(SAMPLE_QUESTIONS_PATH)
    assert len(source) == 60
    assert all(task.data_source == "rlf-sample" and task.task_id.startswith("rlf-sample-") for task in source)
    assert source.by_id("rlf-sample-000").golden_answers == ("Mount Arvel", "Arvel")
    assert SAMPLE_QUESTIONS_PATH.parent.name == "data" and SAMPLE_CORPUS_PATH.is_file()


def test_tasks_whose_answers_normalise_to_nothing_are_left_out_and_named(tmp_path, caplog):
    path = tmp_path / "q.jsonl"
    rows = [{"question": "q0", "answer": ["---"]}, {"question": "q1", "answer": [")", "Paris"]},
            {"question": "q2", "answer": ["the", "."]}]
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
    source = load_search_tasks(path)
    assert [task.task_id for task in source] == ["1"]  # one usable alias is enough
    assert "2 tasks left out" in caplog.text and "0: ['---']" in caplog.text
    path.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no task has a golden answer that can be scored"):
        load_search_tasks(path)
