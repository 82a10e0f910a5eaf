"""QA answer matching (normalisation, EM, substring match, F1) and the exact-match reward built on it."""

from __future__ import annotations

import asyncio
import math
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlfactory_reward_models import Reward, RewardInput
from rlfactory_reward_models.search.qa_reward import QAExactMatchReward
from rlfactory_reward_models.qa_match import exact_match, f1, normalize_answer, substring_match


class _Task:
    """A stand-in for SearchTask: the reward only needs ``golden_answers``."""

    def __init__(self, *answers: str):
        self.golden_answers = tuple(answers)


def _score(reward: QAExactMatchReward, answer: str | None, *golden: str) -> Reward:
    return asyncio.run(reward.score(RewardInput(task=_Task(*golden), answer=answer)))


# --- normalize_answer ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("The Beatles!", "beatles"),
    ("  Mount   Arvel\t\n", "mount arvel"),
    ("a cat, an apple and the dog", "cat apple and dog"),
    ("theatre anatomy", "theatre anatomy"),  # articles only as whole words
    ("A", ""),
    ("2,914 metres", "2914 metres"),
    ("O'Neill", "oneill"),
    ("Zürich — Café", "zürich — café"),  # non-ASCII punctuation (the em dash) is kept, as in SQuAD
    ("ÉCOLE", "école"),
    ("", ""),
    ("the.the", "thethe"),  # punctuation goes before articles
])
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


# --- exact_match / substring_match / f1 ----------------------------------------------------------------------------

def test_exact_match_examples():
    assert exact_match("the Beatles", ["Beatles"]) == 1.0
    assert exact_match("Mount Arvel.", ["Arvel", "Mount Arvel"]) == 1.0
    assert exact_match("Arvel", "Mount Arvel") == 0.0  # a single string is one golden answer
    assert exact_match("Mount Arvel", "Mount Arvel") == 1.0
    assert exact_match("Paris", []) == 0.0
    assert exact_match("ZÜRICH", ["zürich"]) == 1.0
    assert exact_match("", [""]) == 0.0  # Search-R1's em_check pays this; a gold of "" matches nothing here
    assert exact_match("the", ["---"]) == 0.0 and exact_match(".", [")", "Paris"]) == 0.0
    assert exact_match("", ["Paris"]) == 0.0


def test_substring_match_examples():
    assert substring_match("It is Mount Arvel, I think", ["Arvel"]) == 1.0
    assert substring_match("Arvel", ["Mount Arvel"]) == 0.0
    assert substring_match("marvel", ["arvel"]) == 1.0  # a plain substring test, as in Search-R1
    assert substring_match("anything", [""]) == 0.0  # Search-R1's subem_check pays every answer here
    assert substring_match("Paris", []) == 0.0


def test_f1_examples():
    assert f1("Mount Arvel", ["Mount Arvel"]) == 1.0
    assert f1("Arvel", ["Mount Arvel"]) == pytest.approx(2 / 3)
    assert f1("the mount arvel range", ["Mount Arvel", "Kestrin"]) == pytest.approx(0.8)
    assert f1("New York New York", ["New York"]) == pytest.approx(2 * 1.0 * 0.5 / 1.5)
    assert f1("", ["Arvel"]) == 0.0
    assert f1("The", ["a"]) == 0.0
    assert f1("Arvel", [""]) == 0.0
    assert f1("Arvel", []) == 0.0
    assert f1("Kestrin", ["Arvel"]) == 0.0


def test_odd_strings_are_scored():
    huge = "Arvel " * 200_000
    assert substring_match(huge, ["Arvel"]) == 1.0
    assert exact_match(huge, ["Arvel"]) == 0.0
    assert 0.0 < f1(huge, ["Arvel"]) < 0.01
    for odd in ["\x00", "\ud800", "🙂", "İstanbul", "\u200b", " \u3000 "]:
        for fn in (exact_match, substring_match, f1):
            assert 0.0 <= fn(odd, [odd, "x"]) <= 1.0


# --- properties ----------------------------------------------------------------------------------------------------

_TEXT = st.text(alphabet=st.characters() | st.sampled_from([*string.punctuation, " ", "\t", "a", "n", "t", "h", "e"]),
               max_size=40)
_WORDY = st.lists(st.sampled_from(["a", "an", "the", "Arvel", "mount", "river", "x", "x,", "The", "1,2"]),
                  max_size=8).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_normalize_is_idempotent(text):
    once = normalize_answer(text)
    assert normalize_answer(once) == once


@settings(max_examples=200, deadline=None)
@given(_TEXT | _WORDY)
def test_a_string_matches_itself(text):
    matchable = 1.0 if normalize_answer(text) else 0.0  # a gold normalising to "" matches nothing
    assert exact_match(text, [text]) == matchable
    assert substring_match(text, [text]) == matchable
    assert f1(text, [text]) == (1.0 if normalize_answer(text) else 0.0)


@settings(max_examples=300, deadline=None)
@given(_TEXT | _WORDY, st.lists(_TEXT | _WORDY, max_size=3))
def test_scores_are_bounded_and_ordered(prediction, golden):
    em, sub, token_f1 = exact_match(prediction, golden), substring_match(prediction, golden), f1(prediction, golden)
    for value in (em, sub, token_f1):
        assert 0.0 <= value <= 1.0 and not math.isnan(value)
    assert em in (0.0, 1.0) and sub in (0.0, 1.0)
    assert em <= sub
    if em and normalize_answer(prediction):
        assert token_f1 == 1.0
    # Adding golden answers never lowers a score.
    assert exact_match(prediction, [*golden, "extra"]) >= em
    assert f1(prediction, [*golden, "extra"]) >= token_f1


@settings(max_examples=200, deadline=None)
@given(_TEXT | _WORDY, _TEXT | _WORDY)
def test_f1_is_symmetric_for_single_answers(left, right):
    assert f1(left, [right]) == pytest.approx(f1(right, [left]))


# --- QAExactMatchReward --------------------------------------------------------------------------------------------

def test_reward_exact_match():
    reward = _score(QAExactMatchReward(), "the  mount Arvel", "Mount Arvel", "Arvel")
    assert reward.value == 1.0
    assert reward.parts == {"exact_match": 1.0, "f1": 1.0, "substring_match": 1.0, "format": 1.0}
    assert reward.reason is None


def test_reward_wrong_answer_gets_format_score():
    assert _score(QAExactMatchReward(), "Kestrin", "Mount Arvel").value == 0.0
    reward = _score(QAExactMatchReward(format_score=0.2), "Mount Arvel range", "Mount Arvel")
    assert reward.value == 0.2
    assert reward.parts["exact_match"] == 0.0
    assert reward.parts["substring_match"] == 1.0
    assert reward.parts["f1"] == pytest.approx(0.8)
    assert reward.parts["format"] == 1.0


@pytest.mark.parametrize("answer", [None, "", "   \n"])
def test_reward_without_answer(answer):
    reward = _score(QAExactMatchReward(format_score=0.5), answer, "Mount Arvel")
    assert reward.value == 0.0
    assert reward.reason == "no final answer"
    assert reward.parts == {"exact_match": 0.0, "f1": 0.0, "substring_match": 0.0, "format": 0.0}


def test_reward_answer_of_punctuation_only_is_an_answer():
    reward = _score(QAExactMatchReward(format_score=0.1), "?!", "Mount Arvel")
    assert reward.value == 0.1 and reward.parts["format"] == 1.0


def test_reward_odd_answers_never_raise():
    model = QAExactMatchReward(format_score=0.3)
    for odd in ["\x00", "🙂" * 1000, "x" * 1_000_000, "\ud800", "İ", "<answer></answer>"]:
        reward = _score(model, odd, "Mount Arvel")
        assert reward.value == 0.3
        assert model.reward_range[0] <= reward.value <= model.reward_range[1]


def test_reward_accepts_any_task_with_golden_answers():
    class Plain:
        golden_answers = "Arvel"  # a bare string counts as one answer

    item = RewardInput(task=Plain(), answer="arvel")
    assert asyncio.run(QAExactMatchReward().score(item)).value == 1.0
    with pytest.raises(TypeError, match="golden_answers"):
        asyncio.run(QAExactMatchReward().score(RewardInput(task=object(), answer="x")))


async def test_reward_score_batch():
    model = QAExactMatchReward(format_score=0.1)
    items = [RewardInput(task=_Task("Arvel"), answer=answer) for answer in ("Arvel", "Kestrin", None)]
    assert [r.value for r in await model.score_batch(items)] == [1.0, 0.1, 0.0]


def test_reward_with_search_task():
    from rlfactory_envs.search.task import SearchTask

    task = SearchTask(task_id="0", question="q", golden_answers=("Mount Arvel", "Arvel"))
    assert _score(QAExactMatchReward(), "ARVEL", *task.golden_answers).value == 1.0
    assert asyncio.run(QAExactMatchReward().score(RewardInput(task=task, answer="arvel"))).value == 1.0


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_format_score_is_validated(bad):
    with pytest.raises(ValueError, match="format_score"):
        QAExactMatchReward(format_score=bad)


def test_reward_range():
    assert QAExactMatchReward.reward_range == (0.0, 1.0)
    assert QAExactMatchReward(format_score=1.0).format_score == 1.0


@pytest.mark.parametrize("answer", ["the", ".", "a", "---", "anything at all"])
def test_a_task_whose_golds_normalise_to_nothing_is_unscored(answer):
    reward = QAExactMatchReward(format_score=0.2).score_answer(answer, ["---", ")"])
    assert reward.value == 0.0 and "unscored" in reward.reason
