"""The cattrs converter between wire JSON (camelCase) and the attrs types.

Structuring is strict: a string where a number belongs is an error, not a
conversion, and every error names the field it is about. It is also bounded: a
value of the wrong kind is one error (a 3 MiB string where an array belongs was
taken item by item, a million errors), an array holds at most
``limits.MAX_LIST_ITEMS``, and a message names the first few problems and
counts the rest.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, get_args, get_origin

import attrs
import cattrs
from cattrs.errors import IterableValidationError, IterableValidationNote
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ..jsonrpc.limits import MAX_LIST_ITEMS, REPORTED_PROBLEMS, clip
from ..session.errors import InvalidArgument


class InvalidParams(InvalidArgument):
    """Params that do not fit the method: the message names the field."""


class _Uncounted(TypeError):
    """Stands for the invalid items of an array past the ones reported."""


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

    def structure_limit(value: Any, _: type) -> Any:
        # A model time limit: checked by the engine, which names the setting.
        if value is None or isinstance(value, (int, float, str, dict)):
            return value
        raise TypeError(f"expected a number, a string or an object, got {_json_type(value)}")

    converter.register_structure_hook_func(
        lambda t: t == (float | str | dict[str, float] | None), structure_limit
    )

    def structure_sandbox(value: Any, _: type) -> Any:
        # A sandbox policy: checked by the engine, which names the field.
        if value is None or isinstance(value, (str, dict)):
            return value
        raise TypeError(f"expected a mode name or an object, got {_json_type(value)}")

    converter.register_structure_hook_func(
        lambda t: t == (str | dict[str, Any] | None), structure_sandbox
    )
    converter.register_structure_hook_factory(
        lambda t: get_origin(t) is list, lambda t: _list_structure(converter, t)
    )

    def camel_fields(cls: type) -> dict[str, Any]:
        return {a.name: override(rename=camel(a.name)) for a in attrs.fields(cls)}

    def attrs_structure(cls: type) -> Any:
        fields: Callable[[Any, Any], Any] = make_dict_structure_fn(
            cls, converter, **camel_fields(cls)
        )

        def structure_object(value: Any, _: type) -> Any:
            if not isinstance(value, dict):
                raise TypeError(f"expected an object, got {_json_type(value)}")
            return fields(value, cls)

        return structure_object

    converter.register_structure_hook_factory(attrs.has, attrs_structure)
    converter.register_unstructure_hook_factory(
        attrs.has,
        lambda cls: make_dict_unstructure_fn(
            cls, converter, _cattrs_omit_if_default=False, **camel_fields(cls)
        ),
    )
    return converter


def _list_structure(converter: cattrs.Converter, list_type: Any) -> Any:
    """An array's hook: anything but a JSON array is one error, so is one too long;
    items are structured one by one, the first few failures kept and the rest
    counted."""
    (item_type,) = get_args(list_type) or (Any,)

    def structure_list(value: Any, _: type) -> list:
        if not isinstance(value, list):
            raise TypeError(f"expected an array, got {_json_type(value)}")
        if len(value) > MAX_LIST_ITEMS:
            raise TypeError(f"expected at most {MAX_LIST_ITEMS} items, got {len(value)}")
        item = converter.get_structure_hook(item_type)
        items: list[Any] = []
        failures: list[Exception] = []
        uncounted = 0
        for index, element in enumerate(value):
            try:
                items.append(item(element, item_type))
            except Exception as exc:
                if len(failures) < REPORTED_PROBLEMS:
                    note = f"Structuring {list_type} @ index {index}"
                    exc.add_note(IterableValidationNote(note, index, item_type))
                    failures.append(exc)
                else:
                    uncounted += 1
        if uncounted:
            failures.append(_Uncounted(f"and {uncounted} more invalid items"))
        if failures:
            raise IterableValidationError("invalid items", failures, list_type)
        return items

    return structure_list


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
        messages = [_describe(m) for m in cattrs.transform_error(exc, format_exception=_explain)]
        # (one over: an array's own "and N more invalid items" stays whole)
        if len(messages) > REPORTED_PROBLEMS + 1:
            more = len(messages) - REPORTED_PROBLEMS
            messages = [*messages[:REPORTED_PROBLEMS], f"and {more} more problems"]
        raise InvalidParams(clip("invalid params: " + "; ".join(messages))) from None


def unstructure(value: Any) -> Any:
    return converter.unstructure(value)


def _explain(exc: BaseException, _type: Any) -> str:
    if isinstance(exc, _Uncounted):
        return str(exc)
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
    return clip(f"{field}: {text}", 200)
