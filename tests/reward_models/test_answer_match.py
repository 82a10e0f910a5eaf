"""The built-in answer rewards of a user's env, tried as a policy farming them would: blank, punctuation and
article answers, stuffed candidate lists, and references that normalise to nothing pay nothing."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlfactory_reward_models.answer_match import CONTAINS_EXTRA_WORDS, REWARDS, contains, exact_match, f1

FARMED = [None, "", "   ", ".", "!?", "the", "a an the", "---", "()", "<answer></answer>"]


@pytest.mark.parametrize("name", sorted(REWARDS))
@pytest.mark.parametrize("answer", FARMED)
def test_blank_punctuation_and_article_answers_pay_nothing(name, answer):
    assert REWARDS[name](answer, ["Paris", "City of Paris"]) == 0.0


@pytest.mark.parametrize("name", sorted(REWARDS))
@pytest.mark.parametrize("answer", FARMED[1:] + ["Paris", "anything at all"])
def test_a_reference_that_normalises_to_nothing_never_matches(name, answer):
    assert REWARDS[name](answer, ["---", ")", "the"]) == 0.0
    assert REWARDS[name](answer, {"target": ["."]}) == 0.0


def test_the_right_answer_pays_in_every_layout():
    for ground_truth in ("Paris", ["Lyon", "paris"], {"target": ["The Paris"]}, ("Paris",)):
        assert exact_match("paris!", ground_truth) == contains("it is Paris", ground_truth) == 1.0
        assert f1("Paris", ground_truth) == 1.0


def test_contains_pays_no_stuffed_answer_and_no_part_of_a_word():
    stuffed = " ".join(["London", "Berlin", "Rome", "Madrid", "Vienna", "Oslo", "Bern", "Paris", "Lisbon", "Prague",
                        "Warsaw", "Dublin"])
    assert contains(stuffed, "Paris") == 0.0
    assert contains("marvel", "arvel") == 0.0
    just_fits = " ".join(["word"] * CONTAINS_EXTRA_WORDS + ["Paris"])
    assert contains(just_fits, "Paris") == 1.0
    assert contains(just_fits + " more", "Paris") == 0.0


@settings(max_examples=200, deadline=None)
@given(candidates=st.lists(st.sampled_from(["London", "Berlin", "Rome", "Madrid", "Oslo", "Paris", "Lyon"]),
                           min_size=2, max_size=7, unique=True))
def test_listing_candidates_never_beats_answering_one(candidates):
    stuffed = ", ".join(candidates)
    assert exact_match(stuffed, "Paris") == 0.0
    assert f1(stuffed, "Paris") <= 2 / (1 + len(candidates)) + 1e-9
