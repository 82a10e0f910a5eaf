"""``SampleRun``: what one OpenRLHF sample's agent needs besides the executor's own state.

OpenRLHF builds the agent instance with no arguments; the adapter's executor binds each instance to a
``SampleRun`` holding the trainer's tokenizer, the sequence budget (``max_length``: prompt and response), the
engine wrapper that remembers the last generation (and asks for the env's stop strings), the tokenizer wrapper the
executor tokenises with (observation deltas counted once, for the budget check and the executor), and the env
leased for the episode.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from rlfactory_adapters.delta_encoder import delta_encoder
from rlfactory_adapters.env_lease import alease_env
from rlfactory_adapters.episode_driver import stop_sequences
from rlfactory_adapters.openrlhf.delta_tokenizer import DeltaTokenizer
from rlfactory_adapters.openrlhf.exact_text_engine import ExactTextEngine
from rlfactory_envs.kernel.env import ToolEnv


class SampleRun:
    """One sample's tokenizer, budget, engine and env lease. ``release`` is idempotent."""

    def __init__(self, tokenizer: Any, max_length: int, engine: Any):
        self.tokenizer = tokenizer
        self.max_length = int(max_length)
        self.engine = ExactTextEngine(engine, tokenizer)
        self.delta_tokenizer = DeltaTokenizer(tokenizer, delta_encoder(tokenizer))
        self.env: ToolEnv | None = None
        self.env_id = ""
        self._lease: contextlib.AsyncExitStack | None = None

    async def lease(self, env_id: str, env_kwargs: Mapping[str, Any]) -> ToolEnv:
        """Lease an env for this sample (one per sample; a second lease returns the first env first)."""
        await self.release()
        stack = contextlib.AsyncExitStack()
        self.env = await stack.enter_async_context(alease_env(env_id, env_kwargs))
        self.env_id = env_id
        self._lease = stack
        self.engine.stop_sequences = stop_sequences(self.env)
        return self.env

    async def release(self) -> None:
        """Give the env back (an episode still running is aborted)."""
        stack, self._lease, self.env = self._lease, None, None
        if stack is not None:
            await stack.aclose()
