"""``JudgeReward``: a model judge behind any OpenAI-compatible endpoint, as a reward model.

One answer's way: no answer scores 0 without a request; else the template is rendered with the task's fields and
the (defused, delimited, cut) answer; a cached verdict for the same request is used as is; an identical request
already in flight is waited for instead of sent again (GRPO's samples of one prompt often agree); else one request
goes out, under the concurrency bound, retried by the OpenAI client, all within ``timeout_s``. The reply is read by
``verdict.parse_verdict``; a readable verdict is cached. Any failure (unreachable, refused, 5xx after the retries,
past the deadline, unreadable) scores 0 with a one-line reason and is marked as a failed reward
(``info["reward_failed"]``, counted apart from wrong answers), is never cached, and never raises.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rlfactory_reward_models.base import Reward, RewardInput, RewardModelBase
from rlfactory_reward_models.judge.cache import CachedVerdict, VerdictCache, cache_key, process_cache
from rlfactory_reward_models.judge.client import JudgeClients, describe_failure
from rlfactory_reward_models.judge.config import JudgeConfig, load_judge_config
from rlfactory_reward_models.judge.fields import default_fields
from rlfactory_reward_models.judge.templates import SYSTEM_PROMPT, neutralise, render, resolve_template, score_range
from rlfactory_reward_models.judge.verdict import parse_verdict

__all__ = ["JudgeReward"]

REPLY_CHARS = 500
"""How much of a reply ``info["judge"]["reply"]`` keeps."""
STATS = ("requests", "cache_hits", "coalesced", "failures", "unreadable", "retries")

Fields = Callable[[RewardInput], Mapping[str, str]]


@dataclass(frozen=True)
class _Outcome:
    """What one judge request came to: a score, or 0 with the reason; ``reply`` cut short."""

    score: float
    reason: str | None
    reply: str
    failed: bool = False
    """No verdict: the request failed, or the reply could not be read."""


class JudgeReward(RewardModelBase):
    """A model judge's verdict on the final answer, in [0, 1] (see the module docstring).

    ``config``: a ``JudgeConfig`` or its settings as a mapping (``ConfigError``, one line, for a bad one).
    ``default_template``: the template when ``config.template`` is ``None`` (``"qa"``, ``"sql"``, ``"plan"``,
    ``"rubric"``). ``fields(item)``: the template's fields (``question``, ``reference``, ``rubric``) of a
    ``RewardInput``; by default read from the task (``fields.default_fields``). The answer is always ``item.answer``.

    ``Reward.parts == {"judge": score}``; ``Reward.info == {"judge": {"reply": first 500 characters, "cached":
    bool}}``, and for a failure (no verdict: unreachable, refused, late, unreadable, no prompt) ``"failed": True``
    and the ``"reason"`` in ``info["judge"]``, and ``info["reward_failed"] = True``: a rollout counts it as a failed
    reward, not as a wrong answer. Envs that should share one judge (its in-flight requests, its concurrency
    bound), such as the envs of one batch, use ``JudgeReward.shared(...)``; ``cache`` is the verdict cache
    (default: the judge's own; ``shared`` judges use the process's, which outlives them).
    """

    reward_range: tuple[float, float] = (0.0, 1.0)

    _registry: ClassVar[weakref.WeakValueDictionary[tuple[Any, ...], JudgeReward]] = weakref.WeakValueDictionary()
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, config: JudgeConfig | Mapping[str, Any], *, default_template: str = "qa",
                 fields: Fields | None = None, cache: VerdictCache | None = None) -> None:
        self.config = load_judge_config(config)
        self.template = resolve_template(self.config.template, default_template, self.config.rubric)
        self.score_range = score_range(self.template)
        self.fields = fields or default_fields
        self.cache = VerdictCache(self.config.cache_size) if cache is None or not self.config.cache_size else cache
        self._clients = JudgeClients(self.config)
        self._stats = dict.fromkeys(STATS, 0)
        self._stats_lock = threading.Lock()

    @classmethod
    def shared(cls, config: JudgeConfig | Mapping[str, Any], *, default_template: str = "qa",
               fields: Fields | None = None) -> JudgeReward:
        """The live ``JudgeReward`` made here with equal settings, template and ``fields`` (the same function
        object), or a new one: envs made one by one share its in-flight requests and concurrency bound, and every
        judge made here the process's verdict cache (``cache.process_cache``)."""
        loaded = load_judge_config(config)
        key = (loaded.model_dump_json(), default_template, fields)
        with cls._registry_lock:
            judge = cls._registry.get(key)
            if judge is None:
                judge = cls._registry[key] = cls(loaded, default_template=default_template, fields=fields,
                                                 cache=process_cache(loaded.cache_size))
        return judge

    # -- the prompt ------------------------------------------------------------------------------------------

    def prompt(self, item: RewardInput, fields: Mapping[str, str] | None = None) -> str:
        """The user message the judge gets for ``item`` (its answer must not be ``None``)."""
        values = dict(self.fields(item) if fields is None else fields)
        values.setdefault("rubric", self.config.rubric)
        answer = item.answer if isinstance(item.answer, str) else str(item.answer)
        return render(self.template, values, answer, self.config.max_answer_chars)

    def messages(self, prompt: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}]

    # -- scoring ---------------------------------------------------------------------------------------------

    async def score(self, item: RewardInput) -> Reward:
        if item.answer is None or not str(item.answer).strip():
            return _reward(0.0, "no final answer", "", cached=False)
        try:
            prompt = self.prompt(item)
        except Exception as exc:  # noqa: BLE001 - a task without the fields scores 0, it never raises
            return _failed(_one_line(f"judge prompt failed: {type(exc).__name__}: {exc}"), "")
        config = self.config
        key = cache_key(base_url=config.base_url, model=config.model, template=self.template, prompt=prompt,
                        max_tokens=config.max_tokens, temperature=config.temperature, extra_body=config.extra_body)
        hit = self.cache.get(key)
        if hit is not None:
            self._count("cache_hits")
            return _reward(hit.score, None, hit.reply, cached=True)
        in_flight = self._clients.state().in_flight
        task = in_flight.get(key)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._ask(key, prompt, str(item.answer)))
            in_flight[key] = task
            task.add_done_callback(lambda _: in_flight.pop(key, None))
        else:
            self._count("coalesced")
        outcome = await asyncio.shield(task)
        if outcome.failed:
            return _failed(outcome.reason or "judge failed", outcome.reply)
        return _reward(outcome.score, outcome.reason, outcome.reply, cached=False)

    async def score_batch(self, items: Sequence[RewardInput]) -> list[Reward]:
        """Every item scored concurrently (at most ``concurrency`` requests in flight); each within its own
        deadline, so one slow verdict holds up no other."""
        return list(await asyncio.gather(*(self.score(item) for item in items)))

    async def _ask(self, key: bytes, prompt: str, answer: str) -> _Outcome:
        """One request to the judge (in a task of its own, shared by coalesced callers); never raises. ``answer``:
        what the judge may quote, which is not its verdict."""
        self._count("requests")
        attempts = [0]
        try:
            reply = await asyncio.wait_for(self._clients.complete(self.messages(prompt), attempts),
                                           self.config.timeout_s)
        except Exception as exc:  # noqa: BLE001 - every failure is a 0 with its reason
            self._count("failures")
            return _Outcome(0.0, describe_failure(exc, self.config), "", failed=True)
        finally:
            self._count("retries", max(0, attempts[0] - 1))
        as_shown = neutralise(answer[: self.config.max_answer_chars])
        verdict = parse_verdict(reply, self.score_range, quoted=(as_shown, answer))
        shown = reply[:REPLY_CHARS]
        if verdict.score is None:
            self._count("unreadable")
            snippet = " ".join(reply.split())
            snippet = snippet if len(snippet) <= 80 else snippet[:77] + "..."
            return _Outcome(0.0, f"judge reply unreadable ({verdict.problem}): {snippet!r}", shown, failed=True)
        self.cache.put(key, CachedVerdict(verdict.score, shown))
        return _Outcome(verdict.score, None, shown)

    # -- bookkeeping -----------------------------------------------------------------------------------------

    def _count(self, name: str, n: int = 1) -> None:
        if n:
            with self._stats_lock:
                self._stats[name] += n

    def stats(self) -> dict[str, int]:
        """``requests`` sent (cache misses not coalesced), ``cache_hits``, ``coalesced`` (waited for an identical
        request in flight), ``failures`` (errors and timeouts), ``unreadable`` replies, ``retries`` (HTTP attempts
        beyond each request's first)."""
        with self._stats_lock:
            return dict(self._stats)

    async def aclose(self) -> None:
        """Close the HTTP clients; the judge stays usable (a later request opens a new one)."""
        await self._clients.aclose()

    def __repr__(self) -> str:
        return f"JudgeReward(model={self.config.model!r}, base_url={self.config.base_url!r})"


def _reward(score: float, reason: str | None, reply: str, *, cached: bool) -> Reward:
    return Reward(value=score, parts={"judge": score}, reason=reason, info={"judge": {"reply": reply, "cached": cached}})


def _failed(reason: str, reply: str) -> Reward:
    """A judge that gave no verdict: 0, the reason, and the failure marked for the rollout to count."""
    return Reward(value=0.0, parts={"judge": 0.0}, reason=reason,
                  info={"judge": {"reply": reply, "cached": False, "failed": True, "reason": reason},
                        "reward_failed": True})


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."
