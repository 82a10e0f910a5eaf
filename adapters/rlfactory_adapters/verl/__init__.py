"""verl adapter: ``RlfAgentLoop``, a ``verl.experimental.agent_loop.AgentLoopBase`` that plays one rlf env episode
per sample, token-in/token-out, and ``compute_score`` for verl's reward-manager path.

Point verl at it with::

    actor_rollout_ref.rollout.agent.agent_loop_config_path=<this package>/agent_loop.yaml

and write the data with ``python -m rlfactory_adapters.prepare_data --trainer verl ...`` (see ``examples/verl/``).
Importing this package needs verl 0.9.x (``pip install "rlfactory-envs[verl]"``); the core never imports it.
"""

from __future__ import annotations

from pathlib import Path

try:
    import verl.experimental.agent_loop  # noqa: F401 - checks that verl and its agent loop are importable
except ImportError as exc:  # pragma: no cover - exercised in the core venv, where verl is absent
    raise ImportError(
        "rlfactory_adapters.verl needs verl 0.9.x and the modules its agent loop imports (torch, ray, hydra-core, "
        "tensordict, transformers, ...). Install them with `pip install \"rlfactory-envs[verl]\"` or run "
        f"`bash .ci/verl.sh`, which builds .venv-verl. The import failed with: {exc}"
    ) from exc

from rlfactory_adapters.verl.agent_loop import RlfAgentLoop  # noqa: E402
from rlfactory_adapters.verl.reward import compute_score  # noqa: E402

AGENT_LOOP_CONFIG_PATH = str(Path(__file__).with_name("agent_loop.yaml"))
"""The file for ``actor_rollout_ref.rollout.agent.agent_loop_config_path``."""

__all__ = ["AGENT_LOOP_CONFIG_PATH", "RlfAgentLoop", "compute_score"]
