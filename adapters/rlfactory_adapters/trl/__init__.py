"""Train any rlf env with TRL's ``GRPOTrainer``: ``RlfEnvSpec(ref).train_dataset``, ``.environment_factory`` and
``.reward_funcs`` are the trainer's arguments of those names (see ``spec``). The adapter imports neither TRL nor
a model: ``pip install -e ".[trl]"`` brings TRL for the trainer."""

from rlfactory_adapters.trl.environment import RlfEnvironment
from rlfactory_adapters.trl.spec import RlfEnvSpec

__all__ = ["RlfEnvSpec", "RlfEnvironment"]
