"""Helpers of the OpenRLHF adapter tests: a scripted stand-in for OpenRLHF's vLLM rollout engine, runs of the real
``MultiTurnAgentExecutor`` through ``adapters/rlfactory_adapters/openrlhf/agent_func.py`` with every env it leased kept for the test to inspect, and the
oracle (the same episode played on a fresh env, text in, text out). Imported only where OpenRLHF is installed."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from rlfactory_adapters.chat_prompt import prompt_text, template_kwargs_for
from rlfactory_adapters.env_lease import alease_env, lease_env
from rlfactory_adapters.openrlhf import sample_run
from rlfactory_adapters.openrlhf.agent_func import AgentExecutor
from tests.adapters.stop_strings import stop_after

ENV_ID = "rlf/Search-NQ-v0"


def tool_call(query: str) -> str:
    return f'<tool_call>\n{json.dumps({"name": "search", "arguments": {"query": query}})}\n</tool_call>'


def logprob_of(position: int, token_id: int) -> float:
    """The scripted log-probability of a generated token (distinct per position, so misalignment shows)."""
    return -((position * 31 + token_id) % 997 + 1) / 1000.0


class StartTogether:
    """A start line for the samples of one ``run_samples`` call: each engine's first ``generate`` waits until every
    sample has made its first request (so each holds its leased env), as on a real engine whose first tokens take
    longer than leasing. Without it, on a machine with few cores (asyncio's default executor has ``cpu_count + 4``
    threads to build envs in) a one-turn sample can finish and give its env back before another sample has leased
    one. A sample that never reaches its first ``generate`` (a bad label) lets the others go after ``timeout_s``."""

    def __init__(self, parties: int, timeout_s: float = 30.0):
        self.parties, self.timeout_s, self.arrived = parties, timeout_s, 0
        self._all_here: asyncio.Event | None = None

    async def wait(self) -> None:
        if self._all_here is None:
            self._all_here = asyncio.Event()
        self.arrived += 1
        if self.arrived >= self.parties:
            self._all_here.set()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._all_here.wait(), self.timeout_s)


@dataclass
class ScriptedEngine:
    """Answers OpenRLHF's ``llm_engine.generate(ids, sampling_params, multi_modal_data=None)`` the way its vLLM
    actor does: a ``RequestOutput``-shaped object whose ``token_ids`` are the next scripted response's ids,
    stopped after the first of ``sampling_params.stop`` (the whole token that completes it is kept) and cut at
    ``sampling_params.max_tokens`` (``finish_reason="length"``), with per-token logprobs as
    ``[{token_id: Logprob}]`` when ``sampling_params.logprobs`` is set. Like vLLM, ``text`` leaves out the stop
    token that ended the generation (here ``<|im_end|>``) and ends at a stop string (after it with
    ``include_stop_str_in_output``). ``params`` records the sampling params of each call."""

    tokenizer: Any
    responses: Sequence[str]
    requests: list[list[int]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)
    start: StartTogether | None = None

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        if self.start is not None and not self.requests:
            await self.start.wait()
        await asyncio.sleep(0)  # let concurrent samples interleave, as on a real engine
        index = len(self.requests)
        self.requests.append(list(prompt_token_ids))
        self.params.append(sampling_params)
        full = self.tokenizer.encode(self.responses[index], add_special_tokens=False)
        stops = list(getattr(sampling_params, "stop", None) or ())
        ids = stop_after(self.tokenizer, full, stops)
        finish = "stop"
        if len(ids) > sampling_params.max_tokens:
            ids, finish = ids[: sampling_params.max_tokens], "length"
        stopped_on_eos = finish == "stop" and ids and ids[-1] == self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        text = self.tokenizer.decode(ids[:-1] if stopped_on_eos else ids,
                                     skip_special_tokens=sampling_params.skip_special_tokens)
        hits = [(text.find(stop), stop) for stop in stops if stop in text]
        if finish == "stop" and hits:
            at, stop = min(hits)
            text = text[: at + len(stop)] if getattr(sampling_params, "include_stop_str_in_output", False) else \
                text[:at]
        self.texts.append(text)
        logprobs = None
        if sampling_params.logprobs is not None:
            logprobs = [{t: SimpleNamespace(logprob=logprob_of(k, t))} for k, t in enumerate(ids)]
        return SimpleNamespace(outputs=[SimpleNamespace(token_ids=ids, text=text, finish_reason=finish,
                                                        logprobs=logprobs)])


def sampling_params(logprobs: int | None = 1) -> SimpleNamespace:
    """What OpenRLHF's SamplesGenerator sends: max_tokens None (the executor sets it), skip_special_tokens False, no
    stop strings (vLLM's defaults: ``stop=[]``, ``include_stop_str_in_output=False``)."""
    return SimpleNamespace(max_tokens=None, logprobs=logprobs, skip_special_tokens=False, temperature=1.0, stop=[],
                           include_stop_str_in_output=False)


LEASED: list[Any] = []
"""Every env a sample of ``RecordingExecutor`` leased, in order, for the test to look at after."""


@contextlib.asynccontextmanager
async def recording_lease(env_id: str, env_kwargs: Any = None):
    async with alease_env(env_id, env_kwargs) as env:
        LEASED.append(env)
        yield env


sample_run.alease_env = recording_lease  # the adapter's samples lease through it: the test sees their envs


class RecordingExecutor(AgentExecutor):
    """The adapter's executor; every env its samples leased is kept in ``LEASED``."""


def run_samples(tokenizer, label: str, scripts: Sequence[Sequence[str]], max_length: int, *,
                logprobs: int | None = 1, prompt: str = "the row's prompt", params: Any = None):
    """Run one sample per script concurrently through the real executor, sharing one ``sampling_params`` object
    (``params``, default ``sampling_params(logprobs)``) as OpenRLHF's ``generate_responses`` does; returns the
    outputs and the engines. Every sample has leased its env and asked for its first response before any
    response comes back (``StartTogether``)."""
    params = sampling_params(logprobs) if params is None else params
    start = StartTogether(len(scripts))
    engines = [ScriptedEngine(tokenizer, list(script), start=start) for script in scripts]
    executor = RecordingExecutor()

    async def go():
        return await asyncio.gather(*(executor.execute(prompt, label, params, max_length, tokenizer, engine)
                                      for engine in engines))
    return asyncio.run(go()), engines


@dataclass
class Replay:
    """The oracle: the same episode played on a fresh env directly, text in, text out."""

    prompt: str
    steps: list[tuple[str, str, float, bool, bool, dict]]
    transcript: str


def replay(tokenizer, label: str, response_texts: Sequence[str]) -> Replay:
    """Play ``response_texts`` (the exact texts of the generated ids) on an env built from ``label``."""
    data = json.loads(label)
    with lease_env(data["env_id"], data["env_kwargs"]) as env:
        _, info = env.reset(options={"task": data["task"]})
        prompt = prompt_text(tokenizer, info["messages"], info["tools"], **template_kwargs_for(env))
        first_obs = env.transcript
        steps = []
        for text in response_texts:
            obs, reward, terminated, truncated, step_info = env.step(text)
            steps.append((text, obs, reward, terminated, truncated, step_info))
            if terminated or truncated:
                break
        transcript = prompt + env.transcript[len(first_obs):]
    return Replay(prompt, steps, transcript)
