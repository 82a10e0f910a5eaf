"""The JSON schema of a qwen-agent tool's arguments, from either form a ``BaseTool.parameters`` takes."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

LIST_FORM_KEYS = ("name", "required")
"""The keys of a list-form parameter entry that are not part of the parameter's own schema."""


class ParametersError(ValueError):
    """A tool's ``parameters`` are neither a JSON schema object nor a valid list of parameter dicts."""


def input_schema(parameters: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The JSON schema (an ``"object"`` schema) of a tool's arguments.

    - A mapping is already a JSON schema: returned as a deep copy.
    - The older list form ``[{"name", "type", "description", "required"}, ...]`` becomes
      ``{"type": "object", "properties": {name: every key of the entry but name and required}, "required": [the
      names whose "required" is true]}``; an empty list gives an object schema without properties.

    ``ParametersError`` says what is wrong when the result is not a valid JSON schema or the list form is malformed.
    """
    if isinstance(parameters, Mapping):
        schema = copy.deepcopy(dict(parameters))
    elif isinstance(parameters, Sequence) and not isinstance(parameters, str):
        schema = _schema_of_list(parameters)
    else:
        raise ParametersError(f"parameters must be a JSON schema object or a list of parameter dicts, "
                              f"not {type(parameters).__name__}")
    if schema.get("type") != "object":
        raise ParametersError(f'the arguments schema must have "type": "object", not {schema.get("type")!r}')
    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise ParametersError(f"the arguments schema is not a valid JSON schema: {exc.message}") from None
    return schema


def _schema_of_list(parameters: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for position, entry in enumerate(parameters):
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or not name:
            raise ParametersError(f"parameter {position} has no name (each entry needs a non-empty 'name')")
        if name in properties:
            raise ParametersError(f"parameter {name!r} is declared twice")
        properties[name] = {key: copy.deepcopy(value) for key, value in entry.items() if key not in LIST_FORM_KEYS}
        if entry.get("required"):
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema
