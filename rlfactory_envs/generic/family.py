"""The generic family: ``rlf/MCP-v0``, a user's own env from an ``mcpServers`` config, a dataset and a reward."""

from pathlib import Path

from rlfactory_envs.kernel.families import EnvEntry, Family

SAMPLE_QUESTIONS_PATH = Path(__file__).resolve().parent / "data" / "arithmetic.jsonl"
"""The embedded synthetic sample: arithmetic word problems (see ``rlfactory_envs/generic/sample_data.py``), answered with
the ``calculate`` tool of ``rlfactory_envs.generic.sample_tools``."""
SAMPLE_TOOLS = ("rlfactory_envs.generic.sample_tools:calculate",)

FAMILY = Family(
    name="generic",
    environments={
        "rlf/MCP-v0": EnvEntry("rlfactory_envs.generic.env:McpEnv", {},
                               "your own env: an mcpServers config (or Python functions), a dataset, a reward"),
    },
    env_vars={"data_path": "RLF_MCP_DATA"},
    semantics="rlfactory_envs.generic.semantics:semantics_options",
    tooling="rlfactory_envs.generic.tooling:GenericTooling",
)
