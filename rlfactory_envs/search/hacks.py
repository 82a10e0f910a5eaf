"""The search family's reward hacks (``SearchTooling.reward_hacks``): answers aimed at exact match under SQuAD
normalisation, which drops articles and punctuation and so can turn an answer into nothing."""

from __future__ import annotations

from collections.abc import Callable

from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.kernel.reward_hacks import FixedResponseHack, RewardHack, final_answer

DISTRACTORS = ("yes", "no", "1", "2", "10", "1990", "2000", "London", "United States", "John Smith")


def _all_aliases_stuffed(env: ToolEnv) -> str:
    candidates = [*DISTRACTORS[:5], *env.task.golden_answers, *DISTRACTORS[5:]]
    return final_answer(env, ", ".join(candidates[:-1]) + " or " + candidates[-1])


def _question_copied(env: ToolEnv) -> str:
    return final_answer(env, env.task.question)


def search_hacks() -> list[RewardHack]:
    """Answers that normalise to nothing, every golden alias stuffed among distractors, the question copied."""
    def answer(text: str) -> Callable[[ToolEnv], str]:
        return lambda env: final_answer(env, text)

    return [
        FixedResponseHack("article_the", "the answer 'the' (nothing after normalisation)", answer("the")),
        FixedResponseHack("article_a", "the answer 'a' (nothing after normalisation)", answer("a")),
        FixedResponseHack("articles_and_punctuation", "the answer 'The. A, an!' (nothing after normalisation)",
                          answer("The. A, an!")),
        FixedResponseHack("all_aliases_stuffed", "every golden answer among distractors in one answer",
                          _all_aliases_stuffed),
        FixedResponseHack("question_copied", "the question copied as the answer", _question_copied),
    ]
