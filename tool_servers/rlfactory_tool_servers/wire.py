"""The wire contract between the toolbox (the MCP client, ``rlfactory_envs.kernel.mcp``) and the tool servers here.

Both sides import this module and nothing else of each other. It says which ``_meta`` keys each side sets and
reads, and the shape of a batched form's structured reply (MCP's ``structuredContent``).

A tool ``NAME`` written with ``toolset`` is published twice: ``NAME`` for the model, and ``NAME_batch``, the batched
form the toolbox merges concurrent calls into. The batched form takes ``calls`` (each an arguments object of
``NAME``), ``deadline_s``, ``reply_after_s`` and ``collect``, and answers ``BatchReply`` (or, for ``collect``,
``CollectedReply``) as structured content, with no text block: it is for a client that merges calls, not for a
model, and ``tools/list`` shows it only to a request that asks (``SHOW_BATCH_FORMS``).

The episode a call belongs to travels in the request's ``_meta``, never as an argument the model could see or set:
``EPISODE`` on a call, ``EPISODES`` (one per element of ``calls``) on a batched form's request. A tool whose answer
depends on its episode's state says so in its ``_meta`` (``EPISODE_STATE``), so a replicated server keeps an
episode's calls on one replica.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter
from typing_extensions import TypedDict

BATCH_OF = "rlfactory/batch_of"
"""Tool ``_meta``: ``NAME_batch`` carries ``{BATCH_OF: "NAME"}``, the name of the tool it is the batched form of."""

EPISODE_STATE = "rlfactory/episode_state"
"""Tool ``_meta``: ``true`` on a tool that keeps state per episode (a notebook, a phone, a fair share)."""

SHOW_BATCH_FORMS = "rlfactory/batch_forms"
"""``tools/list`` request ``_meta``: ``true`` lists the batched forms too (they are hidden otherwise)."""

EPISODE = "rlfactory/episode"
"""``tools/call`` request ``_meta``: the id of the episode the call belongs to (a string)."""

EPISODES = "rlfactory/episodes"
"""A batched form's request ``_meta``: the episode of each element of ``calls``, in order (strings or nulls)."""

MAX_EPISODE_CHARS = 200
"""The longest episode id a server takes."""

DEADLINE = "deadline"
"""``BatchEntry.failure``: the element was abandoned at the batch's ``deadline_s`` (a timeout, not the tool's
own error)."""


class BatchEntry(TypedDict, total=False):
    """One element's result: the text the model reads, whether it is an error, and, for an error whose cause is
    not the tool's own, which (``DEADLINE``)."""

    text: str
    is_error: bool
    failure: str | None


class BatchReply(TypedDict):
    """A batched form's answer. ``results`` aligns with ``calls``; ``None`` where an element still runs, in which
    case ``ticket`` names the run to ``collect`` the rest from (else it is ``None``)."""

    results: list[BatchEntry | None]
    ticket: str | None


class CollectedReply(TypedDict):
    """The answer to ``collect=ticket``: the elements done since the last answer, by position (a decimal string,
    as JSON keys are), and the ticket again while some still run (``None`` once none is left)."""

    results: dict[str, BatchEntry]
    ticket: str | None


_BATCH_REPLY = TypeAdapter(BatchReply)
_COLLECTED_REPLY = TypeAdapter(CollectedReply)


def entry(text: str, is_error: bool = False, failure: str | None = None) -> BatchEntry:
    """One element's result, as the wire carries it."""
    return {"text": text, "is_error": is_error, "failure": failure}


def read_batch_reply(structured: Any) -> BatchReply:
    """A batched form's structured reply, checked against ``BatchReply``; ``ValueError`` naming what is wrong."""
    return _BATCH_REPLY.validate_python(structured)


def read_collected_reply(structured: Any) -> CollectedReply:
    """A ``collect`` request's structured reply, checked against ``CollectedReply``; ``ValueError`` otherwise."""
    return _COLLECTED_REPLY.validate_python(structured)
