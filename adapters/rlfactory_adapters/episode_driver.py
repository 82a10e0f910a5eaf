"""One episode of an rlf env driven token-in/token-out: the loop both trainer adapters share.

``run_episode`` renders the prompt once from the env's first messages and tool schemas, then alternates:
generate from the ids so far (model tokens, mask 1, with log-probabilities), decode them, ``env.astep`` the
text, append the observation's tokens (mask 0). It stops when the env terminates or truncates, or when the
response budget is spent; a generation cut by the budget is handed to ``env.atruncate`` (recorded, not run) and
the episode is scored as one without an answer.

Formats without an end-of-turn token (Search-R1's ``<search>``/``<answer>`` tags) end a response on a stop
string instead (``ChatFormat.stop_sequences``): the adapters ask the engine to stop there (``stop_sequences``,
``merge_stops``), and a response that ends on one counts as finished, not cut.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlfactory_adapters.chat_prompt import prompt_text, template_kwargs_for
from rlfactory_adapters.delta_encoder import delta_encoder
from rlfactory_adapters.token_episode import TokenEpisode
from rlfactory_envs.kernel.env import ToolEnv


@dataclass
class Generation:
    """What one generation call returned: the new token ids and, when the engine gives them, their logprobs."""

    token_ids: Sequence[int]
    logprobs: Sequence[float] | None = None
    finish_reason: str | None = None
    """``"length"`` when the engine stopped at ``max_new_tokens``, ``"stop"`` when the response ended; ``None``
    (unknown, e.g. verl, which reports both as ``"completed"``): a generation that fills what was left of the budget
    without ending on a special token (``<|im_end|>``) or on one of the env's stop sequences is taken as cut."""


GenerateFn = Callable[[list[int], int], Awaitable[Generation]]
"""``await generate(ids_so_far, max_new_tokens)``: the model's next response to the ids so far."""


@dataclass
class EpisodeResult:
    """The finished episode: ids, masks and log-probabilities for the trainer, and the env's verdict.

    ``num_turns`` counts model responses. ``stop_reason`` is ``"answer"``, the env's truncation reason
    (``"max_turns"``, ``"max_episode_seconds"``) or ``"response_length"`` when the token budget ran out.
    ``transcript`` is the response side as text: the decoded model tokens and the observations as appended.
    """

    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    response_logprobs: list[float]
    logprobs_complete: bool
    reward: float
    num_turns: int
    terminated: bool
    truncated: bool
    stop_reason: str
    answer: str | None
    reward_parts: dict[str, float]
    prompt: str
    transcript: str
    metrics: dict[str, float] = field(default_factory=dict)
    task: dict[str, Any] = field(default_factory=dict)
    turn_scores: list[float] = field(default_factory=list)
    """Each turn's process reward, in order (empty when the env pays none; ``reward`` already includes them)."""


async def run_episode(env: ToolEnv, tokenizer: Any, generate: GenerateFn, *,
                      task: Mapping[str, Any] | None = None, max_response_tokens: int, seed: int | None = None,
                      max_prompt_tokens: int | None = None,
                      template_kwargs: Mapping[str, Any] | None = None) -> EpisodeResult:
    """Play one episode of ``env`` with ``generate``; ``task`` pins the task (``options={"task": task}``).

    ``template_kwargs`` default to ``template_kwargs_for(env)``. A prompt longer than ``max_prompt_tokens`` is
    cut from the left before the first generation (as verl's own loops do), and ``metrics["prompt_truncated"]``
    says so."""
    options = {"task": dict(task)} if task is not None else None
    _, info = await env.areset(seed=seed, options=options)
    kwargs = template_kwargs_for(env) if template_kwargs is None else dict(template_kwargs)
    prompt = prompt_text(tokenizer, info["messages"], info["tools"], **kwargs)
    prompt_ids = delta_encoder(tokenizer).encode(prompt)
    prompt_truncated = max_prompt_tokens is not None and len(prompt_ids) > max_prompt_tokens
    if prompt_truncated:
        prompt_ids = prompt_ids[len(prompt_ids) - max_prompt_tokens:]
        prompt = tokenizer.decode(prompt_ids, skip_special_tokens=False)
    episode = TokenEpisode(tokenizer, prompt_ids, max_response_tokens)
    pieces: list[str] = []
    reward, turns, terminated, truncated = 0.0, 0, False, False
    final_info: dict[str, Any] = {}
    timings = {"generate_s": 0.0, "env_s": 0.0, "tokenize_s": 0.0}
    tool_calls = 0
    turn_scores: list[float] = []

    end_ids = set(getattr(tokenizer, "all_special_ids", None) or ())
    stops = stop_sequences(env)
    while True:
        started = time.perf_counter()
        budget = episode.remaining
        generation = await generate(episode.all_ids, budget)
        timings["generate_s"] += time.perf_counter() - started

        started = time.perf_counter()
        ids = list(generation.token_ids)
        kept = episode.add_model_tokens(ids, generation.logprobs)
        text = tokenizer.decode(kept, skip_special_tokens=False)
        timings["tokenize_s"] += time.perf_counter() - started
        pieces.append(text)
        turns += 1

        started = time.perf_counter()
        if _was_cut(generation, ids, kept, budget, end_ids, tokenizer, text, stops):
            episode.was_cut = True
            obs, step_reward, terminated, truncated, final_info = await env.atruncate("response_length", text)
        else:
            obs, step_reward, terminated, truncated, final_info = await env.astep(text)
        timings["env_s"] += time.perf_counter() - started
        reward += step_reward
        tool_calls += len(final_info.get("tool_calls", ()))
        if "process_reward" in final_info:
            turn_scores.append(float(final_info["process_reward"]))
        if terminated or truncated:
            break

        started = time.perf_counter()
        appended = episode.add_environment_text(obs)
        timings["tokenize_s"] += time.perf_counter() - started
        pieces.append(tokenizer.decode(appended, skip_special_tokens=False) if episode.was_cut else obs)
        if episode.is_full:
            _, step_reward, terminated, truncated, final_info = await env.atruncate("response_length")
            reward += step_reward
            break

    metrics = {"num_turns": float(turns), "tool_calls": float(tool_calls),
               "response_tokens": float(len(episode.response_ids)),
               "model_tokens": float(episode.model_token_count), "prompt_truncated": float(prompt_truncated),
               **timings}
    return EpisodeResult(
        prompt_ids=episode.prompt_ids, response_ids=episode.response_ids, response_mask=episode.response_mask,
        response_logprobs=episode.response_logprobs, logprobs_complete=episode.logprobs_complete,
        reward=reward, num_turns=turns, terminated=terminated, truncated=truncated,
        stop_reason="answer" if terminated else final_info.get("truncation_reason", "truncated"),
        answer=final_info.get("answer"), reward_parts=dict(final_info.get("reward_parts") or {}),
        prompt=prompt,
        transcript="".join(pieces), metrics=metrics, task=dict(info.get("task") or {}), turn_scores=turn_scores,
    )


def _was_cut(generation: Generation, ids: list[int], kept: list[int], budget: int, end_ids: set[int],
             tokenizer: Any, text: str, stops: Sequence[str]) -> bool:
    """Whether the response was cut by the token budget (the engine's ``max_tokens`` or the driver's own cut).
    With no finish reason, a response that fills the budget is cut unless it ends on a special token or on one of
    the env's stop strings (``text`` is the decoded ``ids``)."""
    if len(kept) < len(ids) or generation.finish_reason == "length":
        return True
    if generation.finish_reason is not None:
        return False
    if len(ids) < budget or (ids and ids[-1] in end_ids):
        return False
    return not ends_on_stop(tokenizer, ids, text, stops)


def stop_sequences(env: Any) -> tuple[str, ...]:
    """The env's stop strings (``env.chat_format.stop_sequences``; none for formats without the attribute)."""
    return tuple(getattr(getattr(env, "chat_format", None), "stop_sequences", None) or ())


def merge_stops(configured: str | Iterable[str] | None, stops: Iterable[str]) -> list[str]:
    """A trainer's configured stop strings (``None``, one string or a list, as vLLM takes them) followed by the
    env's ``stops`` that are not among them."""
    merged = [configured] if isinstance(configured, str) else list(configured or ())
    return merged + [stop for stop in stops if stop not in merged]


def ends_on_stop(tokenizer: Any, ids: Sequence[int], text: str, stops: Sequence[str]) -> bool:
    """Whether the last of ``ids`` (decoded: ``text``) completes one of ``stops``. An engine stopping on a stop
    string keeps the whole token that completed it, so the text may run a few characters past the stop string
    (Qwen's ``>\\n\\n`` is one token): the stop string must end inside the last token's text, not at the very end."""
    if not stops or not ids:
        return False
    if any(text.endswith(stop) for stop in stops):
        return True
    head = len(tokenizer.decode(list(ids[:-1]), skip_special_tokens=False))
    return any(text.find(stop, max(0, head - len(stop) + 1)) >= 0 for stop in stops)
