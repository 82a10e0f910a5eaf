"""``EnvBatch`` starts every env's calls together with no task per env (``open_turn``, the calls, ``close_turn``); a
trainer steps each env in a coroutine of its own (``astep``). The two paths must be one semantics: for the same
seeds and actions (calls, several calls, unknown and malformed calls, a response without a call, an unreadable and
a readable answer, the turn limit), every step's observation, reward, flags and ``info``, and each episode's
messages, transcript and reward, are the same."""

from __future__ import annotations

import asyncio
import json

from rlfactory_envs import EnvBatch

SCRIPTS = [
    ["calc:2+3", "calc:7/2", "answer:3.5"],
    ["calc:2+3|calc:1/0", "unknown", "answer:"],
    ["nothing", "malformed", "calc:(1", "calc:2**2"],
    ["calc:9", "calc:8", "calc:7", "calc:6", "calc:5"],  # past max_turns
]


def response(step: str) -> str:
    kind, _, value = step.partition(":")
    if kind == "calc":
        return "".join(f'<tool_call>\n{json.dumps({"name": "calculate", "arguments": {"expression": part[5:]}})}\n'
                       "</tool_call>" for part in step.split("|"))
    return {"unknown": '<tool_call>\n{"name": "no_such_tool", "arguments": {}}\n</tool_call>',
            "malformed": "<tool_call>\n{not json\n</tool_call>",
            "nothing": "I am not sure yet.",
            "answer": f"<answer>{value}</answer>"}[kind]


def make(n: int) -> EnvBatch:
    return EnvBatch.make("rlf/MCP-v0", n, max_turns=4)


async def run_batched() -> tuple[list[list], list]:
    batch = make(len(SCRIPTS))
    try:
        await batch.areset(seeds=list(range(len(SCRIPTS))))
        steps: list[list] = [[] for _ in SCRIPTS]
        for turn in range(max(map(len, SCRIPTS))):
            actions = [None if turn >= len(script) or batch.envs[i].done else response(script[turn])
                       for i, script in enumerate(SCRIPTS)]
            for i, result in enumerate(await batch.astep(actions)):
                if result is not None:
                    steps[i].append(tuple(result))
        return steps, [(env.messages, env.transcript, env.last_reward) for env in batch.envs]
    finally:
        batch.close()


async def run_per_sample() -> tuple[list[list], list]:
    batch = make(len(SCRIPTS))  # its envs stepped one coroutine each, as a trainer steps them
    try:
        await batch.areset(seeds=list(range(len(SCRIPTS))))

        async def play(env, script):
            out = []
            for step in script:
                if env.done:
                    break
                out.append(await env.astep(response(step)))
            return out
        steps = await asyncio.gather(*(play(env, script) for env, script in zip(batch.envs, SCRIPTS)))
        return list(steps), [(env.messages, env.transcript, env.last_reward) for env in batch.envs]
    finally:
        batch.close()


def test_a_batch_step_and_a_coroutine_per_env_are_one_semantics():
    batched, batched_episodes = asyncio.run(run_batched())
    alone, alone_episodes = asyncio.run(run_per_sample())
    assert batched == alone
    assert batched_episodes == alone_episodes
    kinds = [[(obs != "", terminated, truncated) for obs, _, terminated, truncated, _ in steps] for steps in batched]
    assert kinds[0][-1] == (False, True, False) and kinds[3][-1] == (False, False, True)  # an answer; max_turns
    assert any("unknown tool" in info["tool_results"][0]["text"] for _, _, _, _, info in batched[1]
               if info.get("tool_results"))
    assert [len(info["tool_results"]) for *_, info in batched[1][:1]] == [2]
