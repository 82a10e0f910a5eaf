"""The Python API in thirty lines: one env step by step, then a batch with every tool call in flight at once.

Run: python examples/python_api.py   (offline, on the embedded sample)
"""

import asyncio
import json

import gymnasium as gym

import rlfactory_envs  # noqa: F401  (registers the rlf/* ids)
from rlfactory_envs import EnvBatch


def search_call(query: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "search", "arguments": {"query": query}}) + "\n</tool_call>"


env = gym.make("rlf/Search-NQ-v0", max_turns=4)
obs, info = env.reset(seed=0)
print("prompt:", obs, "\ntools:", [t["function"]["name"] for t in info["tools"]])
obs, reward, terminated, truncated, info = env.step(search_call(info["task"]["question"]))
print("observation to append:", obs[:300], "...")
obs, reward, terminated, truncated, info = env.step("<answer> Mount Arvel </answer>")
print("reward:", reward, "parts:", info["reward_parts"], "terminated:", terminated)
env.close()


async def batch_demo(n: int = 256) -> None:
    batch = EnvBatch.make("rlf/Search-NQ-v0", n)
    resets = await batch.areset(seeds=range(n))
    results = await batch.astep([search_call(info["task"]["question"]) for _, info in resets])
    print(f"{n} searches in one batch step, first result starts:", results[0].observation[30:90])
    batch.close()


asyncio.run(batch_demo())
