"""Property tests of the env semantics, for the built-in envs and for your own (needs hypothesis:
``pip install rlfactory-envs[testing]``).

Every rlf env promises the semantics of ``rlfactory_envs.kernel.env``: any str is a legal action, rewards stay in
range, an episode ends by ``max_turns`` with an empty observation, ``step`` after the end raises, a seed fixes the
trajectory, and a batch of envs gives what the envs give alone. These checks generate seeds and responses (well
formed and malformed tool calls for the env's own tools, answers, markup soup, oversized and deeply nested text)
and fail with hypothesis' falsifying example when an env breaks a promise::

    from rlfactory_envs.testing import check_env_semantics, semantics_test_class

    # one call runs every property; AssertionError names the broken one, with the falsifying example
    check_env_semantics("rlf/Search-NQ-v0", env_kwargs={"max_turns": 3}, max_examples=25)
    check_env_semantics(lambda: MyEnv(max_turns=3))      # a factory of a ToolEnv (or of a gym wrapper of one)
    check_env_semantics("my_env.yaml", env_kwargs={"max_turns": 3})   # an env spec file, through make_env

    # in a pytest module: one test per property, so failures are reported apart
    def rewards_are_binary(env, action, result):     # env-specific rules, on every step the properties take
        assert result.reward in (0.0, 1.0), f"reward {result.reward!r} for {action!r}"

    TestMyEnv = semantics_test_class("my_env.yaml", env_kwargs={"max_turns": 3}, max_examples=25,
                                     check_step=rewards_are_binary)

Options (the fields of ``EnvSemantics``, declared by ``SemanticsOptions``): ``env_kwargs``, ``max_examples`` (per property, default 50),
``actions`` (a hypothesis strategy of responses to mix into ``actions_for(env)``), ``idle_action`` (a response
that neither answers nor ends, default ``"I am still thinking."``), ``sparse_reward`` (default true: the reward
is 0.0 before the last step), ``deterministic_tools`` (default true: the same seed and actions replay the same
trajectory), ``check_step(env, action, result)`` (env-specific assertions on every step), ``timing_keys``,
``call_tools`` (which tools the generated calls reach: ``"safe"``, the default, those whose MCP annotations say
they change nothing outside their server (``readOnlyHint``, or ``destructiveHint: false`` with ``openWorldHint:
false``); ``"all"``; or a list of names), ``quiet_servers`` (default true: the stdio servers' logs are not shown),
``database`` (hypothesis' example database; default none, so nothing is written into the current folder).

The properties (``PROPERTIES``, each documented on its function in ``rlfactory_envs.testing.properties``):

1. ``check_env``: Gymnasium's ``check_env`` passes on the unwrapped env.
2. ``seeded_determinism``: ``reset(seed=s)`` twice is equal; with ``deterministic_tools``, the same actions after
   a fresh ``reset(seed=s)`` give equal step results (``info`` without timings).
3. ``episode_semantics``: over generated episodes, step never raises for a str; observations are strs in
   ``observation_space`` without tracebacks; rewards in ``reward_range`` (0.0 before the end with
   ``sparse_reward``); never ``terminated and truncated``; at most ``max_turns`` steps; at the end ``""`` and
   ``info["reward_parts"]``, then ``EpisodeOver``; tool result texts within ``max_tool_response_chars``.
4. ``max_turns``: repeating ``idle_action`` truncates exactly at ``max_turns`` (``truncation_reason
   "max_turns"``).
5. ``batch_alignment``: an ``EnvBatch`` of fresh envs, stepped with a plan of actions and ``None`` skips, gives
   each env's result in its place, equal to the same env stepped alone; ended envs are ``done``.
6. ``step_outside_episode``: ``step`` before ``reset`` and after the end raises ``EpisodeOver``; a non-str action
   raises ``TypeError``.

Hypothesis settings are made when a property runs, over the profile your suite loaded (e.g. ``derandomize=True``
in CI), with ``deadline=None``. Run the checks from synchronous code (the batch property runs its own event
loops), on an env without ``record_timings=True`` (Gymnasium's ``check_env`` compares a step's whole ``info``).
"""

from rlfactory_envs.kernel.errors import require_extra

require_extra("hypothesis", "testing", "rlfactory_envs.testing")

from rlfactory_envs.testing.actions import actions_for  # noqa: E402 - after the check that names the extra
from rlfactory_envs.testing.env_ref import EnvRef  # noqa: E402
from rlfactory_envs.testing.options import SemanticsOptions, StepCheck  # noqa: E402
from rlfactory_envs.testing.properties import PROPERTIES  # noqa: E402
from rlfactory_envs.testing.semantics import EnvSemantics, check_env_semantics, semantics_test_class  # noqa: E402

__all__ = ["PROPERTIES", "EnvRef", "EnvSemantics", "SemanticsOptions", "StepCheck", "actions_for",
           "check_env_semantics", "semantics_test_class"]
