"""rlfactory-envs: Gymnasium-style text environments for multi-turn, tool-using RL post-training of LLMs.

``import rlfactory_envs`` registers every ``rlf/*`` id, so ``gym.make("rlf/Search-NQ-v0")`` works.
"""

from rlfactory_envs.kernel.batch import EnvBatch, StepResult
from rlfactory_envs.kernel.env import EpisodeOver, ToolEnv
from rlfactory_envs.kernel.tool_call import ParsedAction, ToolCall, ToolResult
from rlfactory_envs.kernel.toolbox import Toolbox, ToolSpec
from rlfactory_envs.registry import ENVIRONMENTS, register_environments

register_environments()

__all__ = ["ENVIRONMENTS", "EnvBatch", "EpisodeOver", "ParsedAction", "StepResult", "ToolCall", "ToolEnv",
           "ToolResult", "Toolbox", "ToolSpec"]
__version__ = "0.1.0"
