"""The generic env's task: one dataset row, as the user wrote it.

A row opens with a ``question`` (text, put in the env's ``prompt_template``) or a ``prompt`` (text, or chat
messages ending with the user's); verl's layout (``prompt`` messages, ``reward_model.ground_truth``) and
Search-R1's parquet read as they are. ``ground_truth`` is the reference the reward function receives (``None``
when the row has none); every other column is context, handed to the reward function by name. The task id is the
row's ``id`` when it has one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ROLES = ("system", "user", "assistant")
_ANSWER_KEYS = ("answer", "answers", "golden_answers")


@dataclass(frozen=True)
class GenericTask:
    """``question`` or ``prompt`` (one of them is set), the ``ground_truth`` and the row's other ``context``."""

    task_id: str
    question: str | None
    prompt: str | tuple[Mapping[str, str], ...] | None
    ground_truth: Any
    context: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The row again (``from_row`` reads it back to this task)."""
        row: dict[str, Any] = {**self.context, "id": self.task_id, "ground_truth": self.ground_truth}
        if self.question is not None:
            row["question"] = self.question
        else:
            row["prompt"] = self.prompt if isinstance(self.prompt, str) else [dict(m) for m in self.prompt or ()]
        return row

    @classmethod
    def from_row(cls, row: Any, default_id: str) -> GenericTask:
        """The task of one dataset row; ``ValueError`` says what the row lacks."""
        if not isinstance(row, Mapping):
            raise ValueError(f"expected an object (a JSON object or a table row), got {type(row).__name__}")
        context = dict(row)
        row_id = context.pop("id", None)
        task_id = str(row_id) if row_id is not None and not isinstance(row_id, bool) and str(row_id).strip() \
            else default_id
        question, prompt = context.pop("question", None), context.pop("prompt", None)
        if isinstance(question, str) and question.strip():
            if prompt is not None:
                context["prompt"] = prompt
            prompt = None
        elif prompt is not None:
            if question is not None:
                context["question"] = question
            question, prompt = None, _prompt(prompt)
        else:
            raise ValueError("the row has no 'question' (text) and no 'prompt' (text or chat messages)")
        return cls(task_id, question, prompt, _ground_truth(context), context)


def _prompt(prompt: Any) -> str | tuple[Mapping[str, str], ...]:
    if isinstance(prompt, str):
        if not prompt.strip():
            raise ValueError("the row's 'prompt' is empty")
        return prompt
    if isinstance(prompt, Mapping):
        prompt = [prompt]
    if not isinstance(prompt, Sequence) or not prompt:
        raise ValueError("'prompt' must be text or a non-empty list of chat messages")
    messages = []
    for message in prompt:
        if not isinstance(message, Mapping) or message.get("role") not in ROLES \
                or not isinstance(message.get("content"), str):
            raise ValueError(f"each 'prompt' message needs a 'role' ({', '.join(ROLES)}) and a text 'content', got "
                             f"{str(message)[:120]}")
        messages.append({"role": message["role"], "content": message["content"]})
    if messages[-1]["role"] != "user":
        raise ValueError("the 'prompt' messages must end with the user's message")
    return tuple(messages)


def _ground_truth(context: dict[str, Any]) -> Any:
    """The row's reference, taken out of ``context``: ``ground_truth``, verl's ``reward_model.ground_truth``, or
    an answer column (``answer``, ``answers``, ``golden_answers``)."""
    if "ground_truth" in context:
        return context.pop("ground_truth")
    reward_model = context.get("reward_model")
    if isinstance(reward_model, Mapping) and "ground_truth" in reward_model:
        context.pop("reward_model")
        return reward_model["ground_truth"]
    for key in _ANSWER_KEYS:
        if key in context:
            return context.pop(key)
    return None
