"""The tool-server configuration document: the standard ``{"mcpServers": {...}}`` format, validated.

Each entry is one of
- stdio: ``{"command": "python", "args": [...], "env": {...}, "cwd": "..."}`` (launched as a subprocess; the
  command ``python`` or ``python3`` runs this interpreter, ``sys.executable``, so a Python server sees the same
  packages as the env whether or not a virtual environment is activated),
- HTTP: ``{"url": "http://127.0.0.1:8000/mcp", "headers": {...}, "type": "streamable-http"}``; ``type`` is the
  transport as qwen-agent and Claude configs write it: ``"streamable-http"`` (also ``"streamable_http"``,
  ``"streamableHttp"``, ``"http"``), the default when it is left out, or ``"sse"`` for a server that speaks the
  older HTTP+SSE transport,
- replicated HTTP: ``{"urls": ["http://h1:8000/mcp", "http://h2:8000/mcp"], "headers": {...}, "type": ...}``: one
  server run as several replicas of the same stateless HTTP service (``urls`` non-empty, no URL twice; ``headers``,
  ``type`` and the tuning apply to every replica). The toolbox spreads calls across the replicas, takes a dead one
  out until it answers again, and sends the calls of one episode to one replica (see ``replicas``); an entry with
  one ``url`` is a single server,
- in-process: ``{"module": "rlfactory_tool_servers.search", "args": [...]}`` (``module.build_server(args)`` is connected
  in-process; the same module and args run in a subprocess with ``python -m module args``).

This is the format Claude Desktop, qwen-agent and RL-Factory use; unknown keys they add are ignored, and a ``type``
that contradicts the entry (``"stdio"`` beside a ``url``) or that no transport has is refused. Each entry
may also tune how the toolbox reaches it: ``timeout_s`` (deadline per request), ``max_concurrency`` (requests in
flight), ``retries`` (after a transport failure, with backoff and reconnect), ``sessions`` (pooled sessions),
``batching`` and ``max_batch_size`` (merging of concurrent calls into one request of a tool's batched form), and a
replicated entry ``replica_probe_s`` (how soon a replica taken out is asked again whether it answers).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rlfactory_envs.kernel.errors import ConfigError


class ServerTuning(BaseModel):
    """How the toolbox talks to one server; the defaults suit a batch of a few thousand trajectories."""

    model_config = ConfigDict(extra="ignore")

    timeout_s: float = Field(30.0, gt=0, description="deadline of one request, batched or not")
    connect_timeout_s: float = Field(60.0, gt=0, description="deadline to start and handshake a session")
    max_concurrency: int = Field(64, ge=1, description="requests in flight to this server at once")
    retries: int = Field(2, ge=0, description="retries after a transport failure, each after a reconnect")
    sessions: int = Field(1, ge=1, le=64, description="pooled sessions (e.g. stdio processes) to this server")
    batching: bool = Field(True, description="merge concurrent calls to a tool that has a batched form")
    max_batch_size: int = Field(1024, ge=1, description="calls merged into one request at most")
    batch_reply_after_s: float | None = Field(
        0.05, ge=0, description="a merged request answers its finished calls this long after the first one finished, "
        "the others as they finish (so a slow call does not hold fast ones back); None: once all are done")


PYTHON_COMMANDS = ("python", "python3")


class StdioServerEntry(ServerTuning):
    command: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: str | None = None

    @field_validator("command")
    @classmethod
    def _this_python(cls, command: str) -> str:
        return sys.executable if command in PYTHON_COMMANDS else command


STREAMABLE_HTTP_TYPES = ("streamable-http", "streamable_http", "streamableHttp", "http")
SSE_TYPE = "sse"


class HttpServerEntry(ServerTuning):
    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    type: Literal["streamable-http", "sse"] = "streamable-http"

    @field_validator("type", mode="before")
    @classmethod
    def _transport_name(cls, value: Any) -> Any:
        return "streamable-http" if value in STREAMABLE_HTTP_TYPES else value


DEFAULT_REPLICA_PROBE_S = 0.5
REPLICA_PROBE_MAX_FACTOR = 20
"""A replica taken out is probed ``replica_probe_s`` later, then after twice as long each time it still does not
answer, up to this many times ``replica_probe_s`` (0.5 s doubling to 10 s by default)."""


class ReplicatedHttpServerEntry(ServerTuning):
    """One HTTP server run as several replicas, one URL each; every replica gets the same headers, type and tuning
    (``max_concurrency``, ``sessions``, ``retries``... are per replica)."""

    urls: list[str] = Field(min_length=1)
    headers: dict[str, str] = Field(default_factory=dict)
    type: Literal["streamable-http", "sse"] = "streamable-http"
    replica_probe_s: float = Field(DEFAULT_REPLICA_PROBE_S, gt=0,
                                   description="first delay before a replica taken out is asked again whether it "
                                               f"answers; doubled each time it does not, up to "
                                               f"{REPLICA_PROBE_MAX_FACTOR} times this")

    @field_validator("type", mode="before")
    @classmethod
    def _transport_name(cls, value: Any) -> Any:
        return "streamable-http" if value in STREAMABLE_HTTP_TYPES else value

    @field_validator("urls")
    @classmethod
    def _distinct(cls, urls: list[str]) -> list[str]:
        repeated = sorted({url for url in urls if urls.count(url) > 1})
        if repeated:
            raise ValueError(f"each replica URL must appear once; repeated: {', '.join(repeated)}")
        return urls

    def replica(self, url: str) -> HttpServerEntry:
        """The single-server entry of the replica at ``url``."""
        return HttpServerEntry(url=url, **self.model_dump(exclude={"urls", "replica_probe_s"}))


class InProcessServerEntry(ServerTuning):
    module: str
    args: list[str] = Field(default_factory=list)


ServerEntry = Union[StdioServerEntry, HttpServerEntry, ReplicatedHttpServerEntry, InProcessServerEntry]


class McpConfig(BaseModel):
    """A validated ``{"mcpServers": {name: entry}}`` document."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    servers: dict[str, ServerEntry] = Field(alias="mcpServers")

    def canonical_json(self) -> str:
        """A stable text form, used to share one toolbox among envs with equal configs."""
        return json.dumps(self.model_dump(by_alias=True), sort_keys=True)


ENTRY_MODELS: dict[str, type[ServerTuning]] = {"command": StdioServerEntry, "url": HttpServerEntry,
                                              "urls": ReplicatedHttpServerEntry, "module": InProcessServerEntry}
"""The key that tells an entry's kind, and the model of that kind."""


def _entry(name: str, raw: Any) -> ServerEntry:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"mcpServers.{name} must be an object")
    kinds = [key for key in ENTRY_MODELS if key in raw]
    if len(kinds) != 1:
        raise ConfigError(f"mcpServers.{name} needs exactly one of 'command' (stdio), 'url' (HTTP), 'urls' (HTTP "
                          f"replicas) or 'module' (in-process); it has {kinds or 'none'}")
    declared = raw.get("type")
    http = (*STREAMABLE_HTTP_TYPES, SSE_TYPE)
    allowed = {"command": ("stdio",), "url": http, "urls": http, "module": ()}[kinds[0]]
    if declared is not None and declared not in allowed:
        expected = f"one of {', '.join(map(repr, allowed))} or no type" if allowed else "no type"
        raise ConfigError(f"mcpServers.{name}.type is {declared!r}, but an entry with {kinds[0]!r} takes {expected}")
    model = ENTRY_MODELS[kinds[0]]
    try:
        return model.model_validate(dict(raw))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'entry'}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"mcpServers.{name} is invalid: {problems}") from None


def load_mcp_config(source: McpConfig | Mapping[str, Any] | str | os.PathLike[str]) -> McpConfig:
    """Read a config from a mapping, a JSON text, or a path to a JSON file. ``ConfigError`` says what is wrong."""
    if isinstance(source, McpConfig):
        return source
    if isinstance(source, (str, os.PathLike)):
        text = str(source)
        if isinstance(source, os.PathLike) or not text.lstrip().startswith("{"):
            text = Path(source).read_text(encoding="utf-8")
        try:
            source = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"tool-server config is not valid JSON: {exc}") from None
    if not isinstance(source, Mapping) or not isinstance(source.get("mcpServers"), Mapping):
        raise ConfigError('tool-server config must be an object with an "mcpServers" object')
    servers = {str(name): _entry(str(name), raw) for name, raw in source["mcpServers"].items()}
    if not servers:
        raise ConfigError("tool-server config names no server")
    return McpConfig(mcpServers=servers)


def as_stdio(config: McpConfig, python: str) -> McpConfig:
    """The same config with every in-process server turned into a ``python -m module args`` subprocess."""
    servers: dict[str, ServerEntry] = {}
    for name, entry in config.servers.items():
        if isinstance(entry, InProcessServerEntry):
            tuning = entry.model_dump(exclude={"module", "args"})
            servers[name] = StdioServerEntry(command=python, args=["-m", entry.module, *entry.args], **tuning)
        else:
            servers[name] = entry
    return McpConfig(mcpServers=servers)


def bundled_server_config(name: str, module: str, args: Sequence[str], *,
                          transport: Literal["inprocess", "stdio"] = "inprocess",
                          tuning: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``mcpServers`` document for one of this project's servers: ``module`` with command line ``args``, named
    ``name``, connected in-process (``"inprocess"``) or run as ``python -m module args`` over stdio with this
    interpreter (``"stdio"``; logging errors only, since a pool starts several). ``tuning`` adds the entry's
    toolbox settings (``timeout_s``, ``batching``, ...); ``ValueError`` for any other transport."""
    if transport == "inprocess":
        entry: dict[str, Any] = {"module": module, "args": list(args)}
    elif transport == "stdio":
        entry = {"command": sys.executable, "args": ["-m", module, *args, "--log-level", "error"]}
    else:
        raise ValueError("transport must be 'inprocess' or 'stdio' (give tool_servers= for an HTTP server)")
    entry.update(tuning or {})
    return {"mcpServers": {name: entry}}
