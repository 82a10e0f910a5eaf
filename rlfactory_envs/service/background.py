"""A door served on a thread of this process, on loopback: what ``rlf/OpenEnv-v0`` plays when it is given no
server (its embedded sample: the generic env's arithmetic sample behind our own OpenEnv door), and what tests use
to reach a door's table from the outside."""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn

from rlfactory_envs.service.command import build, uvicorn_config
from rlfactory_envs.service.episodes import EpisodeTable, ServedEnv, ServiceLimits


class BackgroundDoor:
    """``ref`` served over ``protocol`` by uvicorn on a daemon thread; ``url`` once it listens; ``close`` stops it
    and closes its sessions and env."""

    def __init__(self, ref: str, protocol: str = "openenv", env_kwargs: dict[str, Any] | None = None,
                 limits: ServiceLimits | None = None, wrap: Any = None):
        self.served = ServedEnv.open(ref, env_kwargs)
        self.table = EpisodeTable(self.served, limits or ServiceLimits())
        app = build(protocol, self.table)
        self._server = uvicorn.Server(uvicorn_config(wrap(app) if wrap else app, "127.0.0.1", 0, self.table.limits))
        self._thread = threading.Thread(target=self._server.run, name=f"rlf-door-{self.served.name}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 60
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.served.close()
                raise RuntimeError(f"the {protocol} door of {ref} did not start")
            time.sleep(0.01)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(30)
        self.served.close()
