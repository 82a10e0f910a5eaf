"""``compute_score`` for verl's reward-manager path (``reward.custom_reward_function.path/name``).

``RlfAgentLoop`` returns the env's own reward, so verl does not call a reward manager for its samples. This
function scores a decoded response afterwards instead (another agent loop, a re-scoring, an offline
evaluation): the env named in the row's ``extra_info`` parses the last model turn with its own parser and scores
it with its own reward model (``rlfactory_adapters.offline_score``), so both paths agree on the same answer.

    reward.custom_reward_function.path=<this file> reward.custom_reward_function.name=compute_score
    # optional, to log reward parts (the same keys for every sample, missing ones are 0.0):
    +reward.custom_reward_function.reward_kwargs.reward_parts=[exact_match,f1]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rlfactory_adapters.offline_score import score_response
from rlfactory_adapters.verl.row_spec import row_spec


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any] | None = None,
                  *, reward_parts: Sequence[str] | None = None, env_id: str | None = None,
                  **_: Any) -> float | dict[str, float]:
    """The env's reward of ``solution_str`` for the row's task.

    ``data_source`` and ``ground_truth`` are not needed (the task in ``extra_info`` holds the reference); verl
    passes them, and extra reward-manager kwargs, which are ignored. ``env_id`` is the default for rows without
    ``extra_info.env_id``. With ``reward_parts`` the result is ``{"score": reward, part: value, ...}`` (verl logs
    each key), else the reward alone (verl logs it as ``acc``)."""
    spec = row_spec(extra_info, default_env_id=env_id)
    reward = score_response(spec.env_id, spec.task, solution_str, spec.env_kwargs)
    if reward_parts is None:
        return float(reward.value)
    return {"score": float(reward.value), **{part: float(reward.parts.get(part, 0.0)) for part in reward_parts}}
