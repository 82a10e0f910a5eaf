"""An env's tools as the methods TRL's ``environment_factory`` contract asks for: one public method per tool, its
signature and Google-style docstring written from the tool's JSON schema, so that ``transformers``'
``get_json_schema`` (what TRL renders the prompt's tools and parses the model's calls with) reads back the schema
the env shows.

``get_json_schema`` reads only types, the description, each argument's description, enums and which arguments are
required; whatever else a schema says (defaults, bounds, titles, nested properties) is not shown to the model
through TRL (``shown_schema`` writes the schema TRL will show, ``departures`` what it leaves out).
"""

from __future__ import annotations

import inspect
import keyword
from collections.abc import Callable, Mapping
from typing import Any, Literal

from rlfactory_envs.kernel.mcp.toolbox import ToolSpec

JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list,
                              "object": dict, "null": type(None)}
SHOWN_KEYS = frozenset(("type", "enum", "description", "items"))
"""What ``get_json_schema`` keeps of an argument's schema."""


def python_type(schema: Mapping[str, Any]) -> Any:
    """The type hint ``get_json_schema`` turns into ``schema``'s type (an enum as ``Literal``)."""
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return Literal[tuple(schema["enum"])]  # type: ignore[misc]
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [JSON_TYPES.get(k, Any) for k in kind]
        return kinds[0] if len(kinds) == 1 else _union(kinds)
    if kind == "array" and isinstance(schema.get("items"), Mapping) and schema["items"]:
        return list[python_type(schema["items"])]  # type: ignore[misc]
    options = [option for option in schema.get("anyOf") or schema.get("oneOf") or () if isinstance(option, Mapping)]
    if options:  # a pydantic Optional[int] is anyOf integer, null: ``int | None`` (transformers: nullable)
        return _union([python_type(option) for option in options])
    return JSON_TYPES.get(kind, Any) if isinstance(kind, str) else Any


def _union(kinds: list[Any]) -> Any:
    hint = kinds[0]
    for kind in kinds[1:]:
        hint = hint | kind
    return hint


def tool_method(spec: ToolSpec, call: Callable[[Any, str, dict[str, Any]], Any]) -> Callable[..., Any]:
    """An ``async`` method named ``spec.name`` whose signature and docstring say ``spec``'s schema; calling it
    awaits ``call(self, name, arguments)``."""
    properties: Mapping[str, Any] = spec.input_schema.get("properties") or {}
    required = set(spec.input_schema.get("required") or ())
    ordered = sorted(properties, key=lambda name: name not in required)  # Python wants the required first
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    for name in ordered:
        schema = properties[name] if isinstance(properties[name], Mapping) else {}
        annotations[name] = python_type(schema)
        default = inspect.Parameter.empty if name in required else schema.get("default")
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                            annotation=annotations[name]))

    async def method(self: Any, **arguments: Any) -> str:
        return await call(self, spec.name, arguments)

    method.__name__ = method.__qualname__ = spec.name
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = {**annotations, "return": str}
    method.__doc__ = docstring(spec, ordered)
    return method


def docstring(spec: ToolSpec, names: list[str]) -> str:
    """The tool's description, then ``Args:`` with each argument's description (its name when it has none)."""
    properties = spec.input_schema.get("properties") or {}
    lines = [spec.description.strip() or f"Call the {spec.name} tool."]
    if names:
        lines += ["", "Args:"]
        for name in names:
            schema = properties[name] if isinstance(properties[name], Mapping) else {}
            text = " ".join(str(schema.get("description") or schema.get("title") or name).split())
            lines.append(f"    {name}: {text}")
    return "\n".join(lines)


def can_be_a_method(spec: ToolSpec) -> str | None:
    """Why ``spec`` cannot be a Python method (its name or an argument's is no identifier), or ``None``."""
    names = [spec.name, *(spec.input_schema.get("properties") or {})]
    bad = [name for name in names if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_")]
    reserved = {"reset", "get_reward", "self"} & set(names)
    if bad or reserved:
        return f"tool {spec.name!r}: {', '.join(map(repr, bad + sorted(reserved)))} cannot be a Python name"
    return None


def departures(spec: ToolSpec) -> list[str]:
    """What of ``spec``'s argument schemas TRL does not show the model (keys ``get_json_schema`` cannot write)."""
    found = []
    for name, schema in (spec.input_schema.get("properties") or {}).items():
        lost = sorted(set(schema) - SHOWN_KEYS - {"title"}) if isinstance(schema, Mapping) else []
        found += [f"{spec.name}.{name}: {key}={schema[key]!r}" for key in lost]
    return found
