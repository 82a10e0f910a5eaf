"""Reward models: rule-based scorers, model judges and tool-verified scorers. All async and batchable."""

from rlfactory_reward_models.base import Reward, RewardInput, RewardModel, RewardModelBase
from rlfactory_reward_models.qa_match import exact_match, f1, normalize_answer, substring_match
from rlfactory_reward_models.search.qa_reward import QAExactMatchReward

__all__ = [
    "QAExactMatchReward",
    "Reward",
    "RewardInput",
    "RewardModel",
    "RewardModelBase",
    "exact_match",
    "f1",
    "normalize_answer",
    "substring_match",
]
