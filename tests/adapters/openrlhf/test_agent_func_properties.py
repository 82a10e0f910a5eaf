"""Properties of random multi-turn search episodes under OpenRLHF 0.11's real ``MultiTurnAgentExecutor`` and the
adapter, with the real Qwen3 tokenizer: whatever the responses and the ``max_length`` budget, the ids decode to
the env's transcript, the action ranges hold exactly the generated ids with their logprobs, the model never
writes past the budget, and the env is given back with its episode over."""

from __future__ import annotations

import pytest

pytest.importorskip("openrlhf.utils.agent", reason="the OpenRLHF adapter tests run in .venv-openrlhf (.ci/openrlhf.sh)")

from hypothesis import HealthCheck, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rlfactory_adapters.openrlhf.agent_func import EXTRA_LOG_KEYS  # noqa: E402
from tests.adapters.openrlhf.scripted_rollout import (  # noqa: E402
    LEASED,
    logprob_of,
    run_samples,
    tool_call,
)

words = st.text(min_size=1, max_size=24)
thought = st.one_of(st.just(""), words.map(lambda t: f"<think>\n{t}\n</think>\n\n"))
response = st.tuples(thought, st.one_of(
    words.map(tool_call),
    st.lists(words, min_size=2, max_size=3).map(lambda qs: "\n".join(tool_call(q) for q in qs)),
    words.map(lambda t: f"<answer> {t} </answer>"),
    st.just("<answer> Mount Arvel </answer>"),
    st.just('<tool_call>\n{"name": "search", "arguments": {"query": \n</tool_call>'),
    words,
)).map(lambda parts: "".join(parts) + "<|im_end|>")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=st.lists(response, min_size=1, max_size=5), room=st.integers(1, 1600),
       logprobs=st.sampled_from([1, None]))
def test_random_episodes_keep_ids_ranges_logprobs_and_budget(qwen3_tokenizer, search_rows, script, room, logprobs):
    tok, row = qwen3_tokenizer, search_rows[0]
    script = script + ["<answer> x </answer><|im_end|>"] * 5  # the engine never runs dry
    prompt_length = len(tok.encode(_prompt(tok, row), add_special_tokens=False))
    max_length = prompt_length + room
    (out,), (engine,) = run_samples(tok, row.label(), [script], max_length=max_length, logprobs=logprobs)

    ids, ranges = out["observation_tokens"], out["action_ranges"]
    assert len(ranges) == len(engine.requests) >= 1
    assert ranges[0][0] == prompt_length and all(end <= max_length for _, end in ranges)
    for turn, ((start, end), request) in enumerate(zip(ranges, engine.requests)):
        generated = tok.encode(script[turn], add_special_tokens=False)[: end - start]
        assert ids[start:end] == generated and request == ids[:start]
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(ranges, ranges[1:]))
    if logprobs is None:
        assert out["rollout_log_probs"] is None
    else:
        expected = [0.0] * len(ids)
        for start, end in ranges:
            expected[start:end] = [logprob_of(k, t) for k, t in enumerate(ids[start:end])]
        assert out["rollout_log_probs"] == expected
    # only an observation that did not fit may pass max_length (OpenRLHF's experience maker cuts it there), and
    # then the adapter ended the episode as cut by the budget
    assert len(ids) <= max_length or out["extra_logs"]["length_cut"] == 1.0

    env = LEASED[-1]
    assert env.done
    assert tok.decode(ids, skip_special_tokens=False) == \
        _prompt(tok, row) + env.transcript[len(env.messages[0]["content"]):]
    assert set(out["extra_logs"]) == set(EXTRA_LOG_KEYS)
    assert out["extra_logs"]["num_turns"] == len(ranges)
    assert out["reward"] in (0.0, 1.0) and float(out["scores"]) == out["reward"]
    event(f"length_cut={out['extra_logs']['length_cut']}, turns={len(ranges)}")
    assert (out["extra_logs"]["answered"] + out["extra_logs"]["truncated"]) == 1.0


def _prompt(tok, row):
    from rlfactory_adapters.task_rows import openrlhf_record

    return openrlhf_record(row, tok)["prompt"]
