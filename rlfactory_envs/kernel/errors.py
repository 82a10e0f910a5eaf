"""The error a user's own mistake raises (``ConfigError``), for the kernel and everything above it; the class is the
reward layer's, the lowest that raises it."""

from rlfactory_reward_models.errors import ConfigError

__all__ = ["ConfigError"]
