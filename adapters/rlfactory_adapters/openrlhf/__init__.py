"""The OpenRLHF adapter: point ``--train.agent_func_path`` at ``adapters/rlfactory_adapters/openrlhf/agent_func.py``.

Needs ``openrlhf`` 0.11.x (``pip install "rlfactory-envs[openrlhf]"``); the rest of the package never imports it.
"""

try:
    import openrlhf.utils.agent  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised by the import test with openrlhf hidden
    raise ImportError(
        "rlfactory_adapters.openrlhf needs OpenRLHF 0.11.x, which is not installed (or not importable: "
        f"{exc}). Install it with: pip install 'rlfactory-envs[openrlhf]' (or 'openrlhf>=0.11,<0.12')."
    ) from exc

from rlfactory_adapters.openrlhf.agent_func import AgentExecutor, AgentInstance  # noqa: E402

__all__ = ["AgentExecutor", "AgentInstance"]
