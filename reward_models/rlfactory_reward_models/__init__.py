"""Reward models: rule-based scorers, model judges and tool-verified scorers. All async and batchable. The reward
contract is ``base``; each family's own reward lies in its folder (``search``, ``sql``, ``travel``)."""

from rlfactory_reward_models.base import Reward, RewardInput, RewardModel, RewardModelBase
from rlfactory_reward_models.qa_match import exact_match, f1, normalize_answer, substring_match

__all__ = [
    "Reward",
    "RewardInput",
    "RewardModel",
    "RewardModelBase",
    "exact_match",
    "f1",
    "normalize_answer",
    "substring_match",
]
