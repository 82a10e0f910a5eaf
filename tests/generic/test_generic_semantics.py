"""The shipped semantics properties on rlf/MCP-v0: its embedded sample, and the README's env spec."""

from pathlib import Path

from rlfactory_envs.testing import semantics_test_class

SPEC = str(Path(__file__).resolve().parents[2] / "examples" / "custom_env" / "env.yaml")


def rewards_in_the_sample_are_binary(env, action, result):
    assert result.reward in (0.0, 1.0), f"exact_match gave {result.reward!r}"


TestMcpSampleSemantics = semantics_test_class("rlf/MCP-v0", env_kwargs={"max_turns": 3}, max_examples=25,
                                              check_step=rewards_in_the_sample_are_binary)
TestCustomEnvSpecSemantics = semantics_test_class(SPEC, env_kwargs={"max_turns": 3}, max_examples=15)
