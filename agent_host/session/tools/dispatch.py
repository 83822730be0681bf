"""run_tool: argument checking, dispatch, and turning failures into tool results."""

from __future__ import annotations

import math
from typing import Any

from ..errors import PathOutsideWorkspace, ToolError, describe_os_error
from .context import ToolContext, ToolOutcome
from .registry import TOOLS, Handler

_HANDLERS: dict[str, Handler] = {tool.name: tool.run for tool in TOOLS}
_SPECS = {tool.name: tool.spec for tool in TOOLS}


async def run_tool(name: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    """Run one tool call; what the model did wrong comes back as an is_error outcome.

    Bad arguments, paths outside the workspace, ToolError and OSError become a
    message the model can act on. Anything else is a bug (or PermissionDenied,
    the engine's to handle) and propagates.
    """
    spec = _SPECS.get(name)
    if spec is None:
        return ToolOutcome(
            f"Unknown tool {name!r}. The tools are: {', '.join(_SPECS)}.", is_error=True
        )
    try:
        args = check_arguments(name, spec.parameters, arguments)
        result = await _HANDLERS[name](ctx, args)
    except (ToolError, PathOutsideWorkspace) as e:
        return ToolOutcome(f"{name}: {e}", is_error=True)
    except OSError as e:
        return ToolOutcome(f"{name}: {describe_os_error(e)}", is_error=True)
    return result if isinstance(result, ToolOutcome) else ToolOutcome(result)


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}
_INT64 = range(-(2**63), 2**63)
_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "object": "an object",
    "array": "an array",
}


def check_arguments(tool: str, schema: dict[str, Any], arguments: Any) -> dict[str, Any]:
    """The arguments with optional nulls dropped; ToolError naming the field if wrong.

    Checks what the tool schemas use: required fields, property types, minimum and
    maximum, no unknown fields.
    """
    if not isinstance(arguments, dict):
        raise ToolError(f"arguments must be a JSON object, got {_json_type(arguments)}")
    properties: dict[str, Any] = schema.get("properties", {})
    required: list[str] = schema.get("required", [])
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        accepted = ", ".join(properties) or "none"
        raise ToolError(
            f"unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"{tool} accepts: {accepted}"
        )
    missing = [field for field in required if arguments.get(field) is None]
    if missing:
        raise ToolError(
            f"missing required argument{'s' if len(missing) > 1 else ''} "
            f"{', '.join(map(repr, missing))}; {tool} requires: {', '.join(required)}"
        )
    checked = {}
    for field, value in arguments.items():
        if value is None:
            continue  # models send null for "not given"; required ones were caught above
        checked[field] = _check_value(field, properties[field], value)
    return checked


def _check_value(field: str, schema: dict[str, Any], value: Any) -> Any:
    kind = schema.get("type")
    if kind is not None:
        ok = isinstance(value, _JSON_TYPES[kind])
        if kind in ("integer", "number") and isinstance(value, bool):
            ok = False  # bool is an int in Python, not in JSON
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            value, ok = int(value), True  # JSON does not tell 3 from 3.0
        if kind == "number" and ok and not math.isfinite(value):
            ok = False
        if not ok:
            raise ToolError(
                f"argument {field!r} must be {_TYPE_NAMES[kind]}, got {_json_type(value)}"
            )
        if kind == "integer" and value not in _INT64:
            # What every JSON library and our event log can hold; past it the model
            # meant "all", or nothing sensible.
            raise ToolError(
                f"argument {field!r} is out of range: {_json_type(value)} does not fit in "
                "64 bits; give a smaller number"
            )
    if "minimum" in schema and value < schema["minimum"]:
        raise ToolError(f"argument {field!r} must be at least {schema['minimum']}, got {value}")
    if "maximum" in schema and value > schema["maximum"]:
        raise ToolError(f"argument {field!r} must be at most {schema['maximum']}, got {value}")
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int) and value.bit_length() > 64:
        return f"the number {value:.3e}" if value.bit_length() < 1000 else "a huge number"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
