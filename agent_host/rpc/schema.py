"""The wire contract as JSON Schema (draft 2020-12), generated from the method table
(``rpc.methods``) and its types (``rpc.types``).

``protocol_schema()`` returns one document: a ``$defs`` entry per attrs type (and
per named ``Literal`` alias such as ``StopReason``), with camelCase property names,
``required`` from the fields without defaults and each field's docstring as its
``description``; plus a ``methods`` map from each method name to its params and
result (``$ref`` into ``$defs``), its direction, whether it is a request or a
notification, and its description; plus ``eventData``: the ``data`` of each
``session/event`` kind.

``agent-host schema`` prints it. Nothing here is written by hand except the
``session/event`` kinds that are not log events (``text_delta``,
``compaction_progress``, ``model_wait``, ``session_changed`` and ``mcp_server``);
the tests validate real server output against it.
"""

from __future__ import annotations

import ast
import inspect
import sys
import types as pytypes
import typing
from functools import cache
from typing import Any, Literal, Union

import attrs

from ..session import events as session_events
from . import methods
from . import types as rpc
from .converter import camel

DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID = f"urn:agent-host:protocol:{methods.PROTOCOL_VERSION}"

# session/event kinds that are not log events (see AgentServer.relay).
_EXTRA_EVENT_DATA: dict[str, dict[str, Any]] = {
    "text_delta": {
        "type": "object",
        "description": "A piece of the assistant's text as the model streams it; "
        "the assistant_message event that follows holds the whole text.",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
    "compaction_progress": {
        "type": "object",
        "description": "A compaction (session/compact or automatic) moving on.",
        "properties": {"stage": {"type": "string"}, "message": {"type": "string"}},
        "required": ["stage", "message"],
    },
    "model_wait": {
        "type": "object",
        "description": "A model call still waits for its answer (retryIn null), or did not "
        "get one within the first-byte bound and will try again in retryIn seconds. Not "
        "logged. The message is what to show: 'no answer from openai/gpt-4.1 in 15 s; "
        "retry 1 of 2 in 0.5 s'.",
        "properties": {
            "model": {"type": "string"},
            "waited": {"type": "number"},
            "attempt": {"type": "integer", "minimum": 1},
            "attempts": {"type": "integer", "minimum": 1},
            "retryIn": {"type": ["number", "null"]},
            "message": {"type": "string"},
        },
        "required": ["model", "waited", "attempt", "attempts", "retryIn", "message"],
    },
    "session_changed": {
        "type": "object",
        "description": "Another process or host sharing the store (PostgreSQL) changed a "
        "session this server holds: appended to it or cut it back (head: its new head), "
        "or deleted it (head 0). Reload what the session shows if it matters.",
        "properties": {"head": {"type": "integer", "minimum": 0}},
        "required": ["head"],
    },
    "mcp_server": {
        "type": "object",
        "description": "An MCP server of the session started (ready), failed to start or "
        "to answer in time (failed: its tools are left out of the turn), was restarted "
        "after it died, or stopped. The message names the server and never holds its "
        "env or header values.",
        "properties": {
            "server": {"type": "string"},
            "state": {"enum": ["ready", "failed", "restarted", "stopped"]},
            "message": {"type": "string"},
            "tools": {"type": "integer"},
        },
        "required": ["server", "state", "message", "tools"],
    },
}


class SchemaError(TypeError):
    """A type in rpc.types that this generator cannot express."""


def protocol_schema() -> dict[str, Any]:
    """The whole protocol as one JSON Schema document (a fresh copy each call)."""
    builder = _Builder()
    for cls in _attrs_classes(rpc):
        builder.define(cls)
    method_map: dict[str, Any] = {}
    for method in methods.TABLE:
        method_map[method.name] = {
            "description": method.doc,
            "direction": method.direction,
            "kind": method.kind,
            "params": builder.ref(method.params),
            "result": None if method.result is None else builder.ref(method.result),
        }

    event_data: dict[str, Any] = {}
    for kind, cls in session_events.EVENT_TYPES.items():
        event_data[kind] = builder.ref(cls, name=_event_def_name(cls), event=True)
    for kind, schema in _EXTRA_EVENT_DATA.items():
        name = "".join(p.title() for p in kind.split("_")) + "Data"
        builder.defs[name] = dict(schema)
        event_data[kind] = {"$ref": f"#/$defs/{name}"}

    return {
        "$schema": DIALECT,
        "$id": SCHEMA_ID,
        "title": f"agent-host protocol {methods.PROTOCOL_VERSION}",
        "description": (
            "JSON-RPC 2.0 over stdio with LSP framing. Property names are camelCase; "
            "objects may gain properties in later versions, so do not reject unknown "
            "ones. See docs/protocol.md."
        ),
        "protocolVersion": methods.PROTOCOL_VERSION,
        "initializationOptions": builder.ref(rpc.InitializationOptions),
        "methods": method_map,
        "eventData": event_data,
        "$defs": dict(sorted(builder.defs.items())),
    }


def definition(schema: dict[str, Any], name: str) -> dict[str, Any]:
    """A schema that validates one ``$defs`` entry of ``schema`` (for validators)."""
    return {"$schema": DIALECT, "$ref": f"#/$defs/{name}", "$defs": schema["$defs"]}


def _event_def_name(cls: type) -> str:
    return f"{cls.__name__}Event"


def _attrs_classes(module: pytypes.ModuleType) -> list[type]:
    return [
        obj
        for obj in vars(module).values()
        if isinstance(obj, type) and attrs.has(obj) and obj.__module__ == module.__name__
    ]


class _Builder:
    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}
        self._aliases = _literal_aliases(rpc)

    def ref(self, cls: type, name: str | None = None, event: bool = False) -> dict[str, str]:
        name = name or cls.__name__
        if name not in self.defs:
            self.define(cls, name, event)
        return {"$ref": f"#/$defs/{name}"}

    def define(self, cls: type, name: str | None = None, event: bool = False) -> None:
        name = name or cls.__name__
        if name in self.defs:
            return
        self.defs[name] = {}  # placeholder: a recursive type refers to itself safely
        hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
        docs = field_docstrings(cls)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for field in attrs.fields(cls):
            wire = camel(field.name)
            prop = self.type_schema(hints[field.name])
            doc = docs.get(field.name)
            if doc:
                prop = {**prop, "description": doc}
            if field.default is attrs.NOTHING or (event and not _omitted(cls, field)):
                # events are sent whole: every field is there but the rare ones
                # a stored event leaves out when they are null
                required.append(wire)
            else:
                default = _default_value(field)
                if default is not _NO_DEFAULT:
                    prop = {**prop, "default": default}
            properties[wire] = prop
        if event:
            # session/event data is the stored event, camelCased, with its type tag
            kind = typing.cast(Any, cls).type
            properties["type"] = {"const": kind}
            required = ["type", *required]
        schema: dict[str, Any] = {"type": "object"}
        description = _class_doc(cls)
        if description:
            schema["description"] = description
        schema["properties"] = properties
        if required:
            schema["required"] = required
        self.defs[name] = schema

    def type_schema(self, tp: Any) -> dict[str, Any]:
        if tp is Any:
            return {}
        if tp is type(None):
            return {"type": "null"}
        if tp is bool:
            return {"type": "boolean"}
        if tp is int:
            return {"type": "integer"}
        if tp is float:
            return {"type": "number"}
        if tp is str:
            return {"type": "string"}
        if isinstance(tp, type) and attrs.has(tp):
            return self.ref(tp)
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if origin is Literal:
            alias = self._alias(tp)
            if alias is not None:
                return alias
            return _enum(args)
        if origin in (Union, pytypes.UnionType):
            options = [a for a in args if a is not type(None)]
            inner = [self.type_schema(a) for a in options]
            if len(options) < len(args):
                inner.append({"type": "null"})
            return inner[0] if len(inner) == 1 else {"anyOf": inner}
        if origin in (list, tuple, set, frozenset) or tp in (list, tuple):
            items = self.type_schema(args[0]) if args else {}
            out: dict[str, Any] = {"type": "array"}
            if items:
                out["items"] = items
            return out
        if origin is dict or tp is dict:
            out = {"type": "object"}
            if args and args[0] is not str:
                raise SchemaError(f"{tp}: JSON object keys are strings")
            values = self.type_schema(args[1]) if args else {}
            if values:
                out["additionalProperties"] = values
            return out
        raise SchemaError(f"no JSON Schema for {tp!r}")

    def _alias(self, tp: Any) -> dict[str, Any] | None:
        for name, alias in self._aliases.items():
            if alias == tp:
                if name not in self.defs:
                    self.defs[name] = _enum(typing.get_args(alias))
                return {"$ref": f"#/$defs/{name}"}
        return None


def _enum(values: tuple[Any, ...]) -> dict[str, Any]:
    kinds = {type(v) for v in values}
    out: dict[str, Any] = {"enum": list(values)}
    if kinds == {str}:
        out = {"type": "string", **out}
    return out


def _literal_aliases(module: pytypes.ModuleType) -> dict[str, Any]:
    """Module-level names bound to a Literal (``StopReason = Literal[...]``)."""
    return {
        name: value
        for name, value in vars(module).items()
        if typing.get_origin(value) is Literal and not name.startswith("_")
    }


_NO_DEFAULT = object()


def _omitted(cls: type, field: attrs.Attribute) -> bool:
    from ..session.events import _OMITTED_WHEN_NONE

    return field.name in _OMITTED_WHEN_NONE and field.default is None


def _default_value(field: attrs.Attribute) -> Any:
    default: Any = field.default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        if default.takes_self:
            return _NO_DEFAULT
        default = default.factory()
    if default is None or isinstance(default, (bool, int, float, str)):
        return default
    if isinstance(default, (list, dict)):
        return default
    return _NO_DEFAULT


def _class_doc(cls: type) -> str | None:
    doc = cls.__dict__.get("__doc__")
    return inspect.cleandoc(doc) if doc else None


def field_docstrings(cls: type) -> dict[str, str]:
    """The string literal right after each annotated field in ``cls``'s source.

    attrs keeps no attribute docstrings, so they are read from the class body;
    base classes' fields come first, a subclass's docstring wins.
    """
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object or not attrs.has(klass):
            continue
        out.update(_own_field_docstrings(klass.__module__, klass.__qualname__))
    return out


@cache
def _own_field_docstrings(module_name: str, qualname: str) -> dict[str, str]:
    node = _class_node(module_name, qualname)
    if node is None:
        return {}
    out: dict[str, str] = {}
    body = node.body
    for stmt, after in zip(body, body[1:], strict=False):
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            out[stmt.target.id] = inspect.cleandoc(after.value.value)
    return out


@cache
def _module_tree(module_name: str) -> ast.Module | None:
    try:
        source = inspect.getsource(sys.modules[module_name])
    except (OSError, TypeError, KeyError):
        return None  # no source (a frozen build): descriptions are left out
    return ast.parse(source)


def _class_node(module_name: str, qualname: str) -> ast.ClassDef | None:
    tree = _module_tree(module_name)
    if tree is None:
        return None
    scope: list[ast.stmt] = tree.body
    node: ast.ClassDef | None = None
    for part in qualname.split("."):
        node = next((n for n in scope if isinstance(n, ast.ClassDef) and n.name == part), None)
        if node is None:
            return None
        scope = node.body
    return node
