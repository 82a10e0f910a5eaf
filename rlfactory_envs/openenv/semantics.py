"""The options of ``rlf/OpenEnv-v0``'s env-semantics test: the server it plays comes from ``RLF_OPENENV_URL``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any


def semantics_options(env_id: str) -> Mapping[str, Any]:
    return {"env_kwargs": {"base_url": os.environ.get("RLF_OPENENV_URL", "")}}
