"""Properties of the token bookkeeping over random multi-turn episodes (model chunks and env deltas)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlfactory_adapters.token_episode import TokenEpisode

pieces = st.lists(st.one_of(st.text(max_size=30), st.sampled_from(["<|im_end|>\n", "<|im_start|>user\n", "\n"])),
                  max_size=6).map("".join)
turns = st.lists(st.tuples(pieces, pieces, st.booleans()), min_size=1, max_size=6)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=turns, budget=st.integers(min_value=0, max_value=120), prompt=pieces)
def test_ids_masks_and_logprobs_stay_aligned_within_the_budget(tokenizer, turns, budget, prompt):
    prompt_ids = tokenizer.encode(prompt, add_special_tokens=False)
    episode = TokenEpisode(tokenizer, prompt_ids, budget)
    kept_model: list[list[int]] = []
    kept_env: list[list[int]] = []
    for model_text, env_text, with_logprobs in turns:
        ids = tokenizer.encode(model_text, add_special_tokens=False)
        logprobs = [-(i % 7 + 1) / 10 for i in range(len(ids))] if with_logprobs else None
        kept_model.append(episode.add_model_tokens(ids, logprobs))
        assert kept_model[-1] == ids[: len(kept_model[-1])]
        kept_env.append(episode.add_environment_text(env_text))

    n = len(episode.response_ids)
    assert n <= budget and n == len(episode.response_mask) == len(episode.response_logprobs)
    expected_ids, expected_mask = [], []
    for model_ids, env_ids in zip(kept_model, kept_env):
        expected_ids += model_ids + env_ids
        expected_mask += [1] * len(model_ids) + [0] * len(env_ids)
    assert episode.response_ids == expected_ids
    assert episode.response_mask == expected_mask
    assert all(lp == 0.0 for lp, m in zip(episode.response_logprobs, episode.response_mask) if m == 0)
    assert episode.all_ids == prompt_ids + expected_ids
    logged = [lp for lp, m in zip(episode.response_logprobs, episode.response_mask) if m == 1]
    supplied = [-(i % 7 + 1) / 10 if with_lp else 0.0
                for (_, _, with_lp), ids in zip(turns, kept_model) for i in range(len(ids))]
    assert logged == supplied


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=turns)
def test_without_a_cut_the_ids_decode_to_the_whole_transcript(tokenizer, turns):
    episode = TokenEpisode(tokenizer, [], 10**6)
    transcript = ""
    for model_text, env_text, _ in turns:
        episode.add_model_tokens(tokenizer.encode(model_text, add_special_tokens=False))
        episode.add_environment_text(env_text)
        transcript += model_text + env_text
    assert not episode.was_cut
    decoded = tokenizer.decode(episode.response_ids, skip_special_tokens=False)
    assert decoded == tokenizer.decode(tokenizer.encode(transcript, add_special_tokens=False),
                                       skip_special_tokens=False)


def test_the_budget_cuts_model_and_env_tokens(small_tokenizer):
    episode = TokenEpisode(small_tokenizer, [1, 2], 5)
    assert episode.add_model_tokens([10, 11, 12], [-0.1, -0.2, -0.3]) == [10, 11, 12]
    assert not episode.was_cut
    kept = episode.add_environment_text("a long observation that cannot fit")
    assert len(kept) == 2 and episode.was_cut and episode.is_full and episode.remaining == 0
    assert episode.add_model_tokens([13]) == []
    assert episode.response_mask == [1, 1, 1, 0, 0]
    assert episode.response_logprobs == [-0.1, -0.2, -0.3, 0.0, 0.0]
    assert episode.logprobs_complete


def test_missing_logprobs_are_flagged(small_tokenizer):
    episode = TokenEpisode(small_tokenizer, [], 10)
    episode.add_model_tokens([5, 6])
    assert not episode.logprobs_complete and episode.response_logprobs == [0.0, 0.0]


def test_mismatched_logprobs_are_dropped_and_flagged(small_tokenizer):
    episode = TokenEpisode(small_tokenizer, [], 10)
    assert episode.add_model_tokens([1, 2], [-0.1]) == [1, 2]
    assert episode.response_logprobs == [0.0, 0.0] and not episode.logprobs_complete
