"""Reward functions and tools that the generic env's tests name as ``tests.generic.fixtures:...``."""

from __future__ import annotations

import asyncio
import time

SEEN: list[dict] = []  # what numeric_reward was called with, for tests that check the context


def numeric_reward(answer, ground_truth, **context):
    """1.0 when the answer is the reference number; records its arguments."""
    SEEN.append({"answer": answer, "ground_truth": ground_truth, **context})
    try:
        return float(answer is not None and float(answer) == float(ground_truth))
    except ValueError:
        return 0.0


async def async_parts_reward(answer, ground_truth, tool_results):
    """A dict with a score and named parts; takes only the context it names."""
    await asyncio.sleep(0)
    return {"score": float(answer == ground_truth), "tool_calls": float(len(tool_results))}


def text_reward(answer, ground_truth, **context):
    """A reward that returns text: a user's mistake the env must catch."""
    return "yes" if answer == ground_truth else "no"


def raising_reward(answer, ground_truth, **context):
    """Fails on every answer, the way a buggy reward does."""
    return len(answer) / 0


def raises_on_wrong_reward(answer, ground_truth, **context):
    """Fine on the reference and on no answer; raises on any other answer."""
    if answer is None or answer == str(ground_truth):
        return float(answer is not None)
    raise RuntimeError(f"cannot score {answer!r}")


def slow_reward(answer, ground_truth, **context):
    """Takes far longer than a reward should."""
    time.sleep(5)
    return 1.0


def wide_reward(answer, ground_truth, **context):
    """Returns 5.0, outside the default range [0, 1]."""
    return 5.0


not_a_function = 42


def lookup(city: str, unit: str = "celsius") -> str:
    """The temperature of a city (a fixed table)."""
    table = {"oslo": -3, "lima": 19}
    if city.lower() not in table:
        raise ValueError(f"no data for {city!r}")
    value = table[city.lower()]
    return f"{value if unit == 'celsius' else value * 9 / 5 + 32:g} degrees {unit}"


async def account_balance(account: str, currency: str) -> str:
    """The balance of an account (the env binds the account to the task)."""
    return f"{account}: 100 {currency}"


def convert(value: float, unit: str) -> float:
    """A tool that refuses its arguments the way a user's tool does: by raising."""
    raise ValueError(f"cannot convert mass to {unit}")
