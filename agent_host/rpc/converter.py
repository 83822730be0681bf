"""The cattrs converter between wire JSON (camelCase) and the attrs types.

Structuring is strict: a string where a number belongs is an error, not a
conversion, and every error names the field it is about.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ..session.errors import AgentHostError


class InvalidParams(AgentHostError, ValueError):
    """Params that do not fit the method: the message names the field."""


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _strict(kind: type, *accepted: type) -> Any:
    def structure(value: Any, _: type) -> Any:
        if not isinstance(value, accepted) or (kind is not bool and isinstance(value, bool)):
            raise TypeError(f"expected {_NAMES[kind]}, got {_json_type(value)}")
        return value

    return structure


_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=False)
    converter.register_structure_hook(str, _strict(str, str))
    converter.register_structure_hook(int, _strict(int, int))
    converter.register_structure_hook(float, _strict(float, int, float))
    converter.register_structure_hook(bool, _strict(bool, bool))

    def structure_dict(value: Any, _: type) -> dict:
        if not isinstance(value, dict):
            raise TypeError(f"expected an object, got {_json_type(value)}")
        return value

    converter.register_structure_hook_func(lambda t: t == dict[str, Any], structure_dict)

    def camel_fields(cls: type) -> dict[str, Any]:
        return {a.name: override(rename=camel(a.name)) for a in attrs.fields(cls)}

    converter.register_structure_hook_factory(
        attrs.has, lambda cls: make_dict_structure_fn(cls, converter, **camel_fields(cls))
    )
    converter.register_unstructure_hook_factory(
        attrs.has,
        lambda cls: make_dict_unstructure_fn(
            cls, converter, _cattrs_omit_if_default=False, **camel_fields(cls)
        ),
    )
    return converter


converter = make_converter()


def structure(data: Any, cls: type) -> Any:
    """``data`` as ``cls``, or InvalidParams naming every field that is wrong."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InvalidParams(f"params must be an object, got {_json_type(data)}")
    try:
        return converter.structure(data, cls)
    except cattrs.BaseValidationError as exc:
        messages = cattrs.transform_error(exc, format_exception=_explain)
        raise InvalidParams("invalid params: " + "; ".join(map(_describe, messages))) from None


def unstructure(value: Any) -> Any:
    return converter.unstructure(value)


def _explain(exc: BaseException, _type: Any) -> str:
    if isinstance(exc, KeyError):
        return "is required"
    if "not in literal" in str(exc):
        allowed = ", ".join(repr(a) for a in getattr(_type, "__args__", ()))
        return f"must be one of {allowed}"
    if isinstance(exc, TypeError) and str(exc).startswith("expected "):
        return str(exc)
    return f"is not valid ({type(exc).__name__})"


def _describe(message: str) -> str:
    # "expected a string, got a number @ $.session_id" -> "sessionId: expected ..."
    text, _, path = message.rpartition(" @ ")
    field = re.sub(r"^\$\.?", "", path) or "params"
    field = re.sub(r"[a-z0-9]+(?:_[a-z0-9]+)+", lambda m: camel(m.group(0)), field)
    return f"{field}: {text}"
