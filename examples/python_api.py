"""The Python API in thirty lines: one env step by step, then a batch with every tool call in flight at once.

Run: python examples/python_api.py   (offline, on the embedded sample)
"""

import asyncio
import json
import re

import gymnasium as gym

import rlfactory_envs  # noqa: F401  (registers the rlf/* ids)
from rlfactory_envs import EnvBatch


def search_call(query: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "search", "arguments": {"query": query}}) + "\n</tool_call>"


def read_answer(search_result: str) -> str:
    """A naive reader (the env's scripted baseline): the title of the top-ranked passage."""
    match = re.search(r'Doc 1\(Title: "?(.*?)"?\) ', search_result)
    return match.group(1) if match else "unknown"


env = gym.make("rlf/Search-NQ-v0", max_turns=4)
obs, info = env.reset(seed=0)
print("prompt:", obs)
print("tools:", [t["function"]["name"] for t in info["tools"]])
obs, reward, terminated, truncated, info = env.step(search_call(info["task"]["question"]))
print("observation to append:", obs[:300], "...")
answer = read_answer(info["tool_results"][0]["text"])  # the tool's text alone, without the chat markup
obs, reward, terminated, truncated, info = env.step(f"<answer> {answer} </answer>")
print("answer:", answer, "reward:", reward, "parts:", info["reward_parts"], "terminated:", terminated)
env.close()


async def batch_demo(n: int = 256) -> None:
    batch = EnvBatch.make("rlf/Search-NQ-v0", n)
    resets = await batch.areset(seeds=range(n))
    results = await batch.astep([search_call(info["task"]["question"]) for _, info in resets])
    first = results[0].info["tool_results"][0]["text"]
    print(f"{n} searches in one batch step, first result starts: {first[:70]}...")
    finals = await batch.astep([f"<answer> {read_answer(r.info['tool_results'][0]['text'])} </answer>"
                                for r in results])
    print(f"{n} answers in one batch step, mean reward: {sum(r.reward for r in finals) / n:.3f}")
    batch.close()


asyncio.run(batch_demo())
