"""``SemanticsOptions``: which env the properties check and how; what every property is given."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import hypothesis
from hypothesis import HealthCheck
from hypothesis.database import ExampleDatabase
from hypothesis import strategies as st

from rlfactory_envs.kernel.batch import StepResult
from rlfactory_envs.kernel.env import ToolEnv
from rlfactory_envs.testing.actions import actions_for
from rlfactory_envs.testing.env_ref import EnvRef, describe_ref, env_factory

StepCheck = Callable[[ToolEnv, str, StepResult], None]
"""``check_step(env, action, result)``: env-specific assertions on every step the properties take."""

TIMING_KEYS = frozenset({"tool_latency_s", "step_seconds"})


@dataclass(frozen=True)
class SemanticsOptions:
    """Which env the env-semantics properties check, and how (what every property reads).

    - ``env``: a registered id, an env spec path, or a zero-argument factory of a ``ToolEnv`` (or of a Gymnasium
      env wrapping one); ``env_kwargs`` go to ``make_env`` with an id or a path.
    - ``max_examples``: hypothesis examples per property (``None``: the loaded hypothesis profile's).
    - ``actions``: a strategy of responses mixed into the built-in ones (``actions_for``), e.g. the env's own
      tool calls with meaningful arguments.
    - ``idle_action``: a response that neither answers nor ends the episode.
    - ``sparse_reward``: the reward is 0.0 on every step before the last.
    - ``deterministic_tools``: the same seed and actions after a fresh reset give the same step results (tools
      answer the same). ``False``: only resets are compared, and a batch step need only agree with the same step
      alone on ``terminated`` and ``truncated``.
    - ``check_step``: env-specific assertions, called with ``(env, action, result)`` on every step taken.
    - ``timing_keys``: ``info`` keys holding wall-clock timings, left out when results are compared.
    - ``call_tools``: the tools the generated actions call with well-formed calls (the real tools run, side effects
      included); ``"safe"`` (default): those their servers' annotations call safe (``readOnlyHint``, or
      ``destructiveHint: false`` with ``openWorldHint: false``: changes to the server's own state only);
      ``"all"``: every tool the model sees. No other tool's name is ever written in an action.
    - ``quiet_servers``: the stdio servers' stderr is not forwarded while the properties run (default true).
    - ``database``: hypothesis' example database; ``None`` (default): none, so nothing is written into the current
      folder (no ``.hypothesis/``); give one (``hypothesis.database.DirectoryBasedExampleDatabase(path)``) to
      replay failures.

    Hypothesis ``settings`` are made when a property runs (so the profile a test suite loads, e.g. derandomized
    CI, applies), with ``deadline=None``, one failure reported, and the function-scoped-fixture health check off.
    """

    env: EnvRef
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    max_examples: int | None = 50
    actions: st.SearchStrategy[str] | None = None
    idle_action: str = "I am still thinking."
    sparse_reward: bool = True
    deterministic_tools: bool = True
    check_step: StepCheck | None = None
    timing_keys: Collection[str] = TIMING_KEYS
    call_tools: Collection[str] | Literal["safe", "all"] = "safe"
    quiet_servers: bool = True
    database: ExampleDatabase | None = None

    def __post_init__(self) -> None:
        env_factory(self.env, self.env_kwargs)  # a wrong reference fails here, not in the middle of a property
        if not isinstance(self.idle_action, str):
            raise TypeError(f"idle_action must be a str, got {type(self.idle_action).__name__}")
        if self.max_examples is not None and self.max_examples < 1:
            raise ValueError(f"max_examples must be at least 1, got {self.max_examples}")

    @property
    def name(self) -> str:
        """How failure messages name the env."""
        return describe_ref(self.env)

    def make_env(self) -> ToolEnv:
        """A new, unwrapped env; the caller closes it."""
        return env_factory(self.env, self.env_kwargs)()

    def actions_for(self, env: ToolEnv) -> st.SearchStrategy[str]:
        """The built-in ``actions_for(env, call_tools)``, with ``actions`` mixed in when given."""
        built_in = actions_for(env, self.call_tools)
        return built_in if self.actions is None else st.one_of(built_in, self.actions)

    def settings(self) -> hypothesis.settings:
        """Hypothesis settings for one property run, over the currently loaded profile."""
        current = hypothesis.settings()
        overrides: dict[str, Any] = {}
        if self.max_examples is not None:
            overrides["max_examples"] = self.max_examples
        suppressed = [*current.suppress_health_check, HealthCheck.function_scoped_fixture]
        return hypothesis.settings(current, deadline=None, report_multiple_bugs=False, database=self.database,
                                   suppress_health_check=list(dict.fromkeys(suppressed)), **overrides)
