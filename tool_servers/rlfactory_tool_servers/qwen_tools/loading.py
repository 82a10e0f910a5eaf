"""Find and construct the qwen-agent tools named on the command line.

A tool is named either by its qwen-agent registered name (``@register_tool("name")``; qwen-agent's built-ins,
such as ``code_interpreter`` or ``storage``, register when ``qwen_agent.tools`` is imported) or as
``package.module:ClassName`` of a ``BaseTool`` subclass (importing the module also registers it).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

import qwen_agent.tools  # noqa: F401 - registers qwen-agent's built-in tools
from qwen_agent.tools.base import TOOL_REGISTRY, BaseTool


class ToolLoadError(ValueError):
    """A tool cannot be found or constructed; the message names the problem and the fix, on one line."""


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def tool_class(spec: str) -> type[BaseTool]:
    """The ``BaseTool`` subclass ``spec`` names: a registered name, or ``package.module:ClassName``."""
    if ":" not in spec:
        cls = TOOL_REGISTRY.get(spec)
        if cls is None:
            known = ", ".join(sorted(TOOL_REGISTRY)) or "none"
            raise ToolLoadError(f"unknown qwen-agent tool {spec!r} (registered: {known}); name a registered tool "
                                "or give package.module:ClassName of a BaseTool subclass")
        return cls
    module_name, _, class_name = spec.partition(":")
    if not module_name or not class_name:
        raise ToolLoadError(f"tool {spec!r} must be package.module:ClassName, with both parts")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - user code can fail to import in any way
        raise ToolLoadError(f"cannot import module {module_name!r} for tool {spec!r} ({_one_line(exc)}); make it "
                            "importable from the server's working directory or PYTHONPATH") from None
    cls = getattr(module, class_name, None)
    if cls is None:
        raise ToolLoadError(f"module {module_name!r} has no {class_name!r} (tool {spec!r}); check the class name")
    if not (isinstance(cls, type) and issubclass(cls, BaseTool)):
        what = f"class {cls.__name__}" if isinstance(cls, type) else f"a {type(cls).__name__}"
        raise ToolLoadError(f"{spec!r} is {what}, not a subclass of qwen_agent.tools.base.BaseTool; name a BaseTool "
                            "subclass")
    return cls


def load_tools(specs: Sequence[str], configs: Mapping[str, Mapping[str, Any]]) -> list[BaseTool]:
    """One constructed tool per spec, in order: ``cls(dict(configs[name]))`` where ``configs`` has an entry for the
    tool's name, else ``cls()``.

    ``ToolLoadError`` for a spec that names no tool, two specs giving the same tool name, a ``configs`` key that
    names none of the tools (all checked before any tool is constructed), or a tool that cannot be constructed.
    """
    classes: dict[str, type[BaseTool]] = {}
    for spec in specs:
        cls = tool_class(spec)
        if not cls.name:
            raise ToolLoadError(f"{spec!r} has no tool name; decorate it with @register_tool('name') or set its "
                                "name attribute")
        if cls.name in classes:
            raise ToolLoadError(f"tool {cls.name!r} is named twice (by {spec!r}); name each tool once")
        classes[cls.name] = cls
    unused = sorted(set(configs) - set(classes))
    if unused:
        raise ToolLoadError(f"--tool-config names {', '.join(map(repr, unused))}, which the server does not serve "
                            f"(it serves {', '.join(map(repr, classes))}); key each config by a served tool's name")
    tools = []
    for name, cls in classes.items():
        try:
            tools.append(cls(dict(configs[name])) if name in configs else cls())
        except Exception as exc:  # noqa: BLE001 - a tool's constructor can fail in any way
            raise ToolLoadError(f"cannot create qwen-agent tool {name!r} ({_one_line(exc)}); check what "
                                "the tool needs installed or running, and its --tool-config entry") from None
    return tools
