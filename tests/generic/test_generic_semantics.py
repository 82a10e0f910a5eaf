"""The shipped semantics properties on the README's env spec (rlf/MCP-v0's embedded sample is checked with every
registered id, in ``tests/test_semantics.py``)."""

from pathlib import Path

from rlfactory_envs.testing import semantics_test_class

SPEC = str(Path(__file__).resolve().parents[2] / "examples" / "custom_env" / "env.yaml")

# calc_server.py does not annotate its tools: name the ones the properties may call (they change nothing)
TestCustomEnvSpecSemantics = semantics_test_class(SPEC, env_kwargs={"max_turns": 3}, max_examples=15,
                                                  call_tools=["multiply", "add"])


def test_the_class_carries_the_shipped_properties():
    """The class above runs the properties only if ``semantics_test_class`` gave it them: an empty class would pass."""
    properties = [name for name in dir(TestCustomEnvSpecSemantics) if name.startswith("test_")]
    assert Path(SPEC).is_file()
    assert len(properties) >= 5, properties
