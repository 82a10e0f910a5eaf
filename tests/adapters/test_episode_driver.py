"""``run_episode`` on real search episodes: ids decode to the env's transcript, masks and budgets hold."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlfactory_adapters.env_lease import lease_env, registered, sample_env
from rlfactory_adapters.episode_driver import Generation, run_episode
from tests.adapters.stop_strings import stop_after

ENV_ID = "rlf/Search-NQ-v0"


def tool_call(query: str) -> str:
    return f'<tool_call>\n{json.dumps({"name": "search", "arguments": {"query": query}})}\n</tool_call>'


def scripted(tokenizer, responses: list[str]):
    """A generate function replaying ``responses`` (tokenised), with logprobs -0.25 each; records its calls."""
    queue = list(responses)
    calls: list[tuple[list[int], int]] = []

    async def generate(ids: list[int], max_new_tokens: int) -> Generation:
        calls.append((list(ids), max_new_tokens))
        text = queue.pop(0) if queue else "<answer>nothing</answer><|im_end|>"
        tokens = tokenizer.encode(text, add_special_tokens=False)
        return Generation(tokens, [-0.25] * len(tokens))

    generate.calls = calls
    return generate


def play(tokenizer, responses, budget=4096, task_index=0, **kwargs):
    async def go():
        with lease_env(ENV_ID, kwargs) as env:
            task = env.task_to_dict(env.tasks[task_index])
            generate = scripted(tokenizer, responses)
            result = await run_episode(env, tokenizer, generate, task=task, max_response_tokens=budget)
            return result, env.transcript, env.done, task, generate.calls
    return asyncio.run(go())


def test_a_search_episode_decodes_to_the_env_transcript(qwen3_tokenizer):
    tok = qwen3_tokenizer
    answer = None

    async def first_task():
        with lease_env(ENV_ID) as env:
            return env.task_to_dict(env.tasks[0])
    task = asyncio.run(first_task())
    answer = task["golden_answers"][0]
    responses = [f"<think>\nsearch\n</think>\n\n{tool_call(task['question'])}<|im_end|>",
                 f"<think>\nagain\n</think>\n\n{tool_call('its history')}\n{tool_call('its name')}<|im_end|>",
                 f"<think>\nfound\n</think>\n\n<answer>{answer}</answer><|im_end|>"]
    result, env_transcript, done, _, calls = play(tok, responses)

    assert (result.reward, result.num_turns, result.stop_reason, result.terminated) == (1.0, 3, "answer", True)
    assert result.reward_parts["exact_match"] == 1.0 and result.answer == answer
    assert done and env_transcript.endswith(result.transcript)
    assert tok.decode(result.prompt_ids + result.response_ids, skip_special_tokens=False) == \
        result.prompt + result.transcript
    assert result.prompt.endswith("<|im_start|>assistant\n") and '"name": "search"' in result.prompt
    model_ids = [i for i, m in zip(result.response_ids, result.response_mask) if m]
    assert model_ids == [i for r in responses for i in tok.encode(r, add_special_tokens=False)]
    assert all((lp == -0.25) == bool(m) for lp, m in zip(result.response_logprobs, result.response_mask))
    assert result.response_mask[0] == 1 and result.response_mask[-1] == 1
    # each generation is conditioned on exactly the ids so far, and asked for what remains of the budget
    assert calls[1][0] == result.prompt_ids + result.response_ids[: len(calls[1][0]) - len(result.prompt_ids)]
    assert calls[0][1] == 4096 and calls[1][1] == 4096 - (len(calls[1][0]) - len(result.prompt_ids))
    assert result.metrics["tool_calls"] == 3.0 and result.metrics["model_tokens"] == sum(result.response_mask)


def test_a_generation_cut_by_the_budget_truncates_without_running_it(qwen3_tokenizer):
    tok = qwen3_tokenizer
    long_call = "<think>\n" + "thinking " * 200 + f"</think>\n\n{tool_call('x')}<|im_end|>"
    result, env_transcript, done, _, _ = play(tok, [long_call], budget=64)
    assert len(result.response_ids) == 64 and all(result.response_mask)
    assert (result.truncated, result.terminated, result.stop_reason, result.reward) == (True, False,
                                                                                          "response_length", 0.0)
    assert done and result.metrics["tool_calls"] == 0.0 and env_transcript.endswith(result.transcript)


def test_an_observation_cut_by_the_budget_ends_the_episode(qwen3_tokenizer):
    tok = qwen3_tokenizer
    call = f"{tool_call('Mount Arvel')}<|im_end|>"
    n_call = len(tok.encode(call, add_special_tokens=False))
    result, _, done, _, _ = play(tok, [call, "<answer>x</answer>"], budget=n_call + 10)
    assert len(result.response_ids) == n_call + 10 and result.response_mask == [1] * n_call + [0] * 10
    assert (result.stop_reason, result.truncated, result.num_turns, done) == ("response_length", True, 1, True)
    assert tok.decode(result.response_ids, skip_special_tokens=False) == result.transcript


def test_max_turns_truncates_through_the_env(small_tokenizer):
    result, *_ = play(small_tokenizer, [tool_call("a"), tool_call("b"), tool_call("c"), tool_call("d")],
                      max_turns=2)
    assert (result.num_turns, result.stop_reason, result.truncated, result.reward) == (2, "max_turns", True, 0.0)


responses = st.lists(st.one_of(
    st.text(max_size=40).map(tool_call),
    st.text(max_size=60),
    st.sampled_from(["<answer>Mount Arvel</answer>", "<answer></answer>", "<tool_call>{bad json</tool_call>"]),
).map(lambda text: text + "<|im_end|>"), min_size=1, max_size=5)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=responses, budget=st.integers(min_value=1, max_value=1500), task_index=st.integers(0, 9))
def test_random_episodes_keep_ids_masks_and_text_aligned(tokenizer, script, budget, task_index):
    result, env_transcript, done, task, calls = play(tokenizer, script, budget=budget, task_index=task_index)
    n = len(result.response_ids)
    assert done and n <= budget and n == len(result.response_mask) == len(result.response_logprobs)
    assert result.terminated != result.truncated
    assert all((lp == -0.25) == bool(m) for lp, m in zip(result.response_logprobs, result.response_mask))
    assert tokenizer.decode(result.prompt_ids + result.response_ids, skip_special_tokens=False) == \
        result.prompt + result.transcript
    assert env_transcript.endswith(result.transcript) or result.stop_reason == "response_length"
    assert result.num_turns == len(calls) <= 4
    if result.stop_reason == "response_length":
        assert n == budget
    if result.terminated:
        assert result.reward == (1.0 if result.answer and result.answer in task["golden_answers"] else 0.0)


def test_leases_are_fresh_envs_on_one_held_runtime_per_settings():
    with lease_env(ENV_ID) as first:
        pass
    with lease_env(ENV_ID) as second:
        assert second is not first and second.runtime is first.runtime and second.done
        with lease_env(ENV_ID) as third:
            assert third.runtime is first.runtime
    assert registered(ENV_ID, None).held()  # held for the process: servers stay up
    assert first.runtime.toolbox.stats()["servers"]  # the toolbox is still open
    with lease_env(ENV_ID, {"max_turns": 2}) as other:
        assert other.runtime is not first.runtime and other.max_turns == 2
        assert other.toolbox is first.toolbox  # a limit apart: the same tool servers


def test_a_lease_released_mid_episode_aborts_it():
    with lease_env(ENV_ID) as env:
        env.reset(seed=1)
        assert not env.done
    assert env.done and env.messages[-1]["content"].startswith("episode aborted")


def test_an_unknown_env_id_is_refused():
    from rlfactory_envs import ConfigError

    with pytest.raises(ConfigError, match="unknown env 'rlf/No-Such-v0'"):
        sample_env("rlf/No-Such-v0")


def test_a_long_prompt_is_cut_from_the_left(qwen3_tokenizer):
    result, *_ = play(qwen3_tokenizer, ["<answer>x</answer><|im_end|>"], budget=64)
    full = len(result.prompt_ids)

    async def go():
        with lease_env(ENV_ID) as env:
            generate = scripted(qwen3_tokenizer, ["<answer>x</answer><|im_end|>"])
            return await run_episode(env, qwen3_tokenizer, generate, max_response_tokens=64, seed=0,
                                     max_prompt_tokens=full - 10)
    cut = asyncio.run(go())
    assert len(cut.prompt_ids) == full - 10 and cut.metrics["prompt_truncated"] == 1.0
    assert result.metrics["prompt_truncated"] == 0.0


def test_the_prompt_follows_the_env_thinking_mode(qwen3_tokenizer):
    result, *_ = play(qwen3_tokenizer, ["<answer>x</answer><|im_end|>"], enable_thinking=False)
    assert result.prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def engine_like(tokenizer, responses: list[str], finish_reason: bool = False):
    """A generate function that stops at ``max_new_tokens`` as vLLM does (verl reports no finish reason)."""
    queue = list(responses)

    async def generate(ids: list[int], max_new_tokens: int) -> Generation:
        tokens = tokenizer.encode(queue.pop(0) if queue else "<answer>x</answer><|im_end|>", add_special_tokens=False)
        cut = tokens[:max_new_tokens]
        reason = ("length" if len(cut) < len(tokens) else "stop") if finish_reason else None
        generation = Generation(cut, [-0.25] * len(cut))
        generation.finish_reason = reason
        return generation
    return generate


def play_engine(tokenizer, responses, budget, finish_reason=False):
    async def go():
        with lease_env(ENV_ID) as env:
            task = env.task_to_dict(env.tasks[0])
            generate = engine_like(tokenizer, [r.replace("{answer}", task["golden_answers"][0]) for r in responses],
                                   finish_reason)
            result = await run_episode(env, tokenizer, generate, task=task, max_response_tokens=budget)
            return result, env.messages
    return asyncio.run(go())


@pytest.mark.parametrize("finish_reason", [False, True])
def test_a_generation_stopped_at_max_tokens_by_the_engine_is_not_run(qwen3_tokenizer, finish_reason):
    tok = qwen3_tokenizer
    call = f"{tool_call('Mount Arvel')}<|im_end|>"
    n_call = len(tok.encode(call, add_special_tokens=False))
    # the engine stops one token short of <|im_end|>: the tool call is complete but the response was cut
    result, _ = play_engine(tok, [call], budget=n_call - 1, finish_reason=finish_reason)
    assert (result.stop_reason, result.truncated, result.metrics["tool_calls"]) == ("response_length", True, 0.0)
    assert len(result.response_ids) == n_call - 1 and all(result.response_mask)

    answer = "<answer>{answer}</answer><|im_end|>"
    n_answer = len(tok.encode(answer.format(answer="x"), add_special_tokens=False))
    result, _ = play_engine(tok, [answer.replace("{answer}", "x")], budget=n_answer - 1, finish_reason=finish_reason)
    assert (result.stop_reason, result.terminated, result.reward) == ("response_length", False, 0.0)


def test_a_finished_generation_that_exactly_fills_the_budget_is_run(qwen3_tokenizer):
    tok = qwen3_tokenizer
    result, _ = play_engine(tok, ["<answer>{answer}</answer><|im_end|>"], budget=4096)
    n_answer = len(result.response_ids)
    result, _ = play_engine(tok, ["<answer>{answer}</answer><|im_end|>"], budget=n_answer)
    assert (result.stop_reason, result.terminated, result.reward) == ("answer", True, 1.0)
    call = f"{tool_call('Mount Arvel')}<|im_end|>"
    n_call = len(tok.encode(call, add_special_tokens=False))
    result, _ = play_engine(tok, [call], budget=n_call)
    assert (result.stop_reason, result.metrics["tool_calls"], len(result.response_ids)) == ("response_length", 1.0,
                                                                                           n_call)


def test_an_empty_generation_ends_through_the_env(small_tokenizer):
    async def go():
        with lease_env(ENV_ID, {"max_turns": 3}) as env:
            async def generate(ids, max_new_tokens):
                return Generation([], [])
            return await run_episode(env, small_tokenizer, generate, max_response_tokens=4096, seed=0)
    result = asyncio.run(go())
    assert (result.num_turns, result.stop_reason, result.truncated) == (3, "max_turns", True)
    assert result.response_mask and not any(result.response_mask)


def test_a_lease_cancelled_while_the_runtime_is_built_leaves_it_built_and_held(monkeypatch):
    import threading

    from rlfactory_adapters.env_lease import Registered, alease_env

    built = threading.Event()
    release = threading.Event()
    kwargs = {"max_turns": 5, "max_tool_response_chars": 4321}  # settings no other test builds
    original = Registered.hold

    def slow_hold(entry):
        release.wait(10)
        original(entry)
        built.set()

    async def go():
        async def lease():
            async with alease_env(ENV_ID, kwargs):
                raise AssertionError("the lease was cancelled before the env came")
        task = asyncio.create_task(lease())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()
        for _ in range(200):
            if built.is_set():
                break
            await asyncio.sleep(0.05)
    monkeypatch.setattr(Registered, "hold", slow_hold)
    asyncio.run(go())
    assert built.is_set() and registered(ENV_ID, kwargs).held()


def test_an_episode_cancelled_mid_step_leaves_a_clean_env_for_the_next_lease(qwen3_tokenizer):
    from rlfactory_adapters.env_lease import alease_env

    stuck = asyncio.Event
    leased = []

    async def go():
        hang = stuck()

        async def generate(ids, max_new_tokens):
            if len(ids) > generate.first:
                await hang.wait()
            generate.first = len(ids)
            tokens = qwen3_tokenizer.encode(f"{tool_call('Mount Arvel')}<|im_end|>", add_special_tokens=False)
            return Generation(tokens, [-0.25] * len(tokens))
        generate.first = 1 << 30

        async def episode():
            async with alease_env(ENV_ID) as env:
                generate.first = 0
                leased.append(env)
                await run_episode(env, qwen3_tokenizer, generate, max_response_tokens=4096, seed=0)
        task = asyncio.create_task(episode())
        for _ in range(200):
            await asyncio.sleep(0.02)
            if generate.first:
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert leased[0].done  # given back: its episode aborted
        async with alease_env(ENV_ID) as env:
            assert env.done and env is not leased[0]
            again = scripted(qwen3_tokenizer, ["<answer>x</answer><|im_end|>"])
            result = await run_episode(env, qwen3_tokenizer, again,
                                       max_response_tokens=4096, seed=0)
            assert (result.num_turns, result.stop_reason, env.turn) == (1, "answer", 1)
            assert env.transcript.endswith(result.transcript) and len(env.messages) == 2
    asyncio.run(go())


SEARCH_R1 = "rlf/Search-NQ-SearchR1-v0"


def stopping_engine(tokenizer, responses: list[str], honour_stops: bool = True):
    """An engine as verl's vLLM server is: stops at ``max_new_tokens`` and, when ``honour_stops``, after the stop
    strings it was asked for; no finish reason (verl reports both as "completed")."""
    queue = list(responses)

    async def generate(ids: list[int], max_new_tokens: int) -> Generation:
        tokens = tokenizer.encode(queue.pop(0) if queue else "<answer>x</answer>", add_special_tokens=False)
        if honour_stops:
            tokens = stop_after(tokenizer, tokens, ("</search>", "</answer>"))
        cut = tokens[:max_new_tokens]
        return Generation(cut, [-0.25] * len(cut))
    return generate


def play_search_r1(tokenizer, responses, budget, honour_stops=True):
    async def go():
        with lease_env(SEARCH_R1) as env:
            task = env.task_to_dict(env.tasks[0])
            script = [r.replace("{answer}", task["golden_answers"][0]) for r in responses]
            generate = stopping_engine(tokenizer, script, honour_stops)
            result = await run_episode(env, tokenizer, generate, task=task, max_response_tokens=budget)
            return result, env.transcript, env.messages
    return asyncio.run(go())


HALLUCINATING = ["<think>I should look it up.</think>\n<search> Mount Arvel </search>\n\n<information>Doc 1(Title: "
                 "\"Made up\") the model's own passage</information>\n\n<answer> Made up </answer>",
                 "<think>Found it.</think>\n<answer> {answer} </answer> and then some more text"]


def test_a_search_r1_episode_stops_after_each_query_and_answer(qwen3_tokenizer):
    tok = qwen3_tokenizer
    result, env_transcript, messages = play_search_r1(tok, HALLUCINATING, budget=4096)
    assert (result.stop_reason, result.terminated, result.reward, result.num_turns) == ("answer", True, 1.0, 2)
    assert result.metrics["tool_calls"] == 1.0
    model_runs = [m["content"] for m in messages if m["role"] == "assistant"]
    # the query's closing ">\n\n" is one Qwen token, so the response runs two newlines past "</search>"
    assert model_runs[0].endswith(" Mount Arvel </search>\n\n") and "Made up" not in result.transcript
    assert model_runs[1].endswith("</answer>") and "more text" not in result.transcript
    assert "<information>" in result.transcript and env_transcript.endswith(result.transcript)
    assert tok.decode(result.prompt_ids + result.response_ids, skip_special_tokens=False) == \
        result.prompt + result.transcript


def test_a_response_ending_on_a_stop_string_that_fills_the_budget_is_finished(qwen3_tokenizer):
    tok = qwen3_tokenizer
    first = stop_after(tok, tok.encode(HALLUCINATING[0], add_special_tokens=False), ("</search>",))
    # the last token (">\n\n") runs past the stop string: still finished, the query is run
    result, _, _ = play_search_r1(tok, HALLUCINATING, budget=len(first))
    assert (result.stop_reason, result.metrics["tool_calls"], result.response_mask) == \
        ("response_length", 1.0, [1] * len(first))
    # one token short of the stop string: cut, recorded but not run
    result, _, messages = play_search_r1(tok, HALLUCINATING, budget=len(first) - 1)
    assert (result.stop_reason, result.metrics["tool_calls"], result.truncated) == ("response_length", 0.0, True)
    assert messages[-1]["content"].endswith(" Mount Arvel </search")
    # an answer ending exactly on its stop string within the budget is scored
    answer = "<answer> {answer} </answer>"
    result, _, _ = play_search_r1(tok, [answer], budget=4096)
    result_exact, _, _ = play_search_r1(tok, [answer], budget=len(result.response_ids))
    assert (result_exact.stop_reason, result_exact.terminated, result_exact.reward) == ("answer", True, 1.0)


def test_an_engine_that_ignores_the_stop_strings_is_cut_when_the_stop_is_not_at_the_end(qwen3_tokenizer):
    tok = qwen3_tokenizer
    ids = tok.encode(HALLUCINATING[0], add_special_tokens=False)
    # the hallucinated <information> fills the budget: the stop string is long past, so the response is cut
    result, _, _ = play_search_r1(tok, HALLUCINATING, budget=len(ids) - 3, honour_stops=False)
    assert (result.stop_reason, result.metrics["tool_calls"], result.truncated) == ("response_length", 0.0, True)


def test_ends_on_stop_and_merge_stops(qwen3_tokenizer):
    from rlfactory_adapters.episode_driver import ends_on_stop, merge_stops, stop_sequences

    tok = qwen3_tokenizer
    stops = ("</search>", "</answer>")
    for text, expected in (("<search> q </search>", True), ("<search> q </search>\n\n", True),
                           ("<answer> a </answer>.", True), ("<search> q </search>\n\n<information>", False),
                           ("<search> q </sea", False), ("no tags", False)):
        ids = tok.encode(text, add_special_tokens=False)
        assert ends_on_stop(tok, ids, tok.decode(ids), stops) is expected, text
    assert not ends_on_stop(tok, [], "", stops) and not ends_on_stop(tok, [1], "</search>", ())
    assert merge_stops(None, stops) == ["</search>", "</answer>"]
    assert merge_stops("\n\nQuestion:", stops) == ["\n\nQuestion:", "</search>", "</answer>"]
    assert merge_stops(["</answer>", "x"], stops) == ["</answer>", "x", "</search>"]
    with lease_env(SEARCH_R1) as r1, lease_env(ENV_ID) as qwen3:
        assert stop_sequences(r1) == stops and stop_sequences(qwen3) == ()
    assert stop_sequences(object()) == ()


def test_process_rewards_reach_the_turn_scores_and_the_episode_reward(qwen3_tokenizer):
    responses = [f"{tool_call('anything')}<|im_end|>", "<tool_call>{broken</tool_call><|im_end|>",
                 "<answer>surely wrong</answer><|im_end|>"]
    result, *_ = play(qwen3_tokenizer, responses, process_reward={"format": 0.8})
    # max_turns 4: a readable turn pays 0.8 / 4; the malformed call pays nothing; the wrong answer scores 0
    assert result.turn_scores == pytest.approx([0.2, 0.0, 0.2])
    assert result.reward == pytest.approx(0.4) and result.reward_parts["exact_match"] == 0.0
    plain, *_ = play(qwen3_tokenizer, responses)
    assert plain.turn_scores == [] and plain.reward == 0.0


def test_a_lease_takes_the_env_options_gym_make_takes():
    with lease_env(ENV_ID, {"record_timings": True, "render_mode": "ansi", "max_episode_steps": 3,
                            "max_turns": 2}) as env:
        assert env.record_timings and env.render_mode == "ansi" and env.max_turns == 2
