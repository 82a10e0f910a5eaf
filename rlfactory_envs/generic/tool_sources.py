"""Where a user's env gets its tools, merged into one ``{"mcpServers": {...}}`` document for the toolbox.

- ``tool_servers``: the standard document (a dict, a JSON text, or the path of a ``.json`` file), any third-party
  server (stdio ``command`` or streamable-HTTP ``url``); or RL-Factory's ``mcp_tools.pydata``, a Python-literal
  list read as it is: each ``{"mcpServers": ...}`` item is merged, each string is a qwen-agent tool name, each
  ``{"name": ...}`` a qwen-agent tool with its config (qwen-agent's ``function_list`` conventions).
- ``tools``: plain Python functions (typed, the docstring is the description) or ``"package.module:function"``
  names, served in-process by ``rlfactory_tool_servers.functions`` as the server ``python_tools``.
- ``qwen_agent_tools``: qwen-agent tools, by registered name or ``"package.module:ClassName"`` (or a ``{"name":
  ..., **cfg}`` dict), served in-process by ``rlfactory_tool_servers.qwen_tools`` as the server ``qwen_agent_tools``
  (needs the ``qwen-agent`` extra).
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_tool_servers.functions import local_ref

PYTHON_TOOLS_SERVER = "python_tools"
QWEN_TOOLS_SERVER = "qwen_agent_tools"
FUNCTIONS_MODULE = "rlfactory_tool_servers.functions"
QWEN_TOOLS_MODULE = "rlfactory_tool_servers.qwen_tools"

ToolServers = Mapping[str, Any] | Sequence[Any] | str | os.PathLike[str]


def read_tool_servers(source: ToolServers) -> tuple[dict[str, Any], list[Any]]:
    """``(mcpServers entries, qwen-agent tools)`` of a ``tool_servers`` setting; ``ConfigError`` says what is
    wrong with it."""
    where = "tool_servers"
    if isinstance(source, (str, os.PathLike)):
        text = str(source)
        if text.lstrip()[:1] in ("{", "["):
            source = _parse(text, "JSON", where)
        else:
            path = Path(text).expanduser()
            if not path.is_file():
                raise ConfigError(f"tool_servers: no such file {path}")
            where = str(path)
            content = path.read_text(encoding="utf-8")
            source = _parse(content, "pydata" if path.suffix.lower() == ".pydata" else "JSON", where)
    documents = [source] if isinstance(source, Mapping) else source
    if not isinstance(documents, Sequence) or isinstance(documents, str):
        raise ConfigError(f"{where}: expected an {{\"mcpServers\": ...}} object or a list of them")
    servers: dict[str, Any] = {}
    qwen_tools: list[Any] = []
    for item in documents:
        if isinstance(item, Mapping) and "mcpServers" in item:
            if not isinstance(item["mcpServers"], Mapping):
                raise ConfigError(f'{where}: "mcpServers" must be an object of servers')
            for name, entry in item["mcpServers"].items():
                _add(servers, str(name), entry, where)
        elif isinstance(item, str) or (isinstance(item, Mapping) and isinstance(item.get("name"), str)):
            qwen_tools.append(item)
        else:
            raise ConfigError(f"{where}: cannot read {str(item)[:120]!r} as a tool source (an {{\"mcpServers\": ...}} "
                              "object, a qwen-agent tool name, or a {\"name\": ...} qwen-agent tool config)")
    return servers, qwen_tools


def tool_config(tool_servers: ToolServers | None, tools: Sequence[Callable[..., Any] | str],
                qwen_agent_tools: Sequence[str | Mapping[str, Any]]) -> dict[str, Any]:
    """The one ``mcpServers`` document of every tool source; ``ConfigError`` when there is none or two servers
    share a name."""
    servers, qwen_tools = read_tool_servers(tool_servers) if tool_servers is not None else ({}, [])
    qwen_tools += list(qwen_agent_tools)
    if tools:
        _add(servers, PYTHON_TOOLS_SERVER, {"module": FUNCTIONS_MODULE, "args": [_function_ref(t) for t in tools]},
             "tools")
    if qwen_tools:
        _add(servers, QWEN_TOOLS_SERVER, {"module": QWEN_TOOLS_MODULE, "args": _qwen_args(qwen_tools)},
             "qwen_agent_tools")
    if not servers:
        raise ConfigError("the env has no tools: give tool_servers (an mcpServers config), tools (Python functions) "
                          "or qwen_agent_tools")
    return {"mcpServers": servers}


def _parse(text: str, kind: str, where: str) -> Any:
    try:
        return ast.literal_eval(text) if kind == "pydata" else json.loads(text)
    except (ValueError, SyntaxError) as exc:
        raise ConfigError(f"{where}: not valid {kind}: {' '.join(str(exc).split())}") from None


def _add(servers: dict[str, Any], name: str, entry: Any, where: str) -> None:
    if name in servers:
        raise ConfigError(f"{where}: two tool servers are named {name!r}; rename one")
    servers[name] = entry


def _function_ref(tool: Callable[..., Any] | str) -> str:
    """An importable ``module:qualname`` for a function defined at a module's top level, else a ``local_ref``."""
    if isinstance(tool, str):
        return tool
    if not callable(tool):
        raise ConfigError(f"tools: {tool!r} is neither a function nor 'package.module:function'")
    module, qualname = getattr(tool, "__module__", None), getattr(tool, "__qualname__", "")
    if module and module != "__main__" and "<" not in qualname:
        return f"{module}:{qualname}"
    return local_ref(tool)


def _qwen_args(tools: Sequence[str | Mapping[str, Any]]) -> list[str]:
    names: list[str] = []
    configs: dict[str, Any] = {}
    for tool in tools:
        if isinstance(tool, str):
            names.append(tool)
        else:
            cfg = {key: value for key, value in tool.items() if key != "name"}
            names.append(tool["name"])
            if cfg:
                configs[tool["name"]] = cfg
    return [*names, "--tool-config", json.dumps(configs)] if configs else names
