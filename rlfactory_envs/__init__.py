"""rlfactory-envs: Gymnasium-style text environments for multi-turn, tool-using RL post-training of LLMs.

``import rlfactory_envs`` registers every ``rlf/*`` id, so ``gym.make("rlf/Search-NQ-v0")`` works;
``make_env(ref)`` builds a registered id or a user's env spec file (YAML/JSON) the same way.
"""

from rlfactory_envs.env_spec import EnvSpec, load_spec, make_env
from rlfactory_envs.kernel.batch import EnvBatch, StepResult
from rlfactory_envs.kernel.env import EpisodeOver, ToolEnv
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.mcp.toolbox import Toolbox, ToolSpec
from rlfactory_envs.kernel.tool_call import ParsedAction, ToolCall, ToolResult
from rlfactory_envs.registry import ENVIRONMENTS, register_environments

register_environments()

__all__ = ["ENVIRONMENTS", "ConfigError", "EnvBatch", "EnvSpec", "EpisodeOver", "ParsedAction", "StepResult",
           "ToolCall", "ToolEnv", "ToolResult", "Toolbox", "ToolSpec", "load_spec", "make_env"]
__version__ = "0.1.0"
