"""The wire contract as TypeScript, for the VS Code extension.

``python -m agent_host.rpc.typescript > editors/vscode/src/protocol/wire.generated.ts``
writes it (``agent-host schema --typescript`` prints the same). It is made from the
method table (names, the ``REQUESTS`` list, a ``Methods`` map of each method's
params and result), the error codes, and the JSON Schema's definitions of the
params and results: an interface per attrs type with each field's docstring, a
union type per ``Literal`` alias (and its values: ``DECISIONS``). A field is
optional (``?``) exactly when the schema does not require it (it has a default):
this server sends every field, but a reader that copes with one missing copes with
an older server too. tests/rpc/test_typescript.py fails when the
checked-in file is not what this prints.
"""

from __future__ import annotations

import json
import re
from typing import Any

from . import methods
from .errors import ErrorCode
from .schema import protocol_schema

COMMAND = "python -m agent_host.rpc.typescript > editors/vscode/src/protocol/wire.generated.ts"
INDENT = "    "


def typescript() -> str:
    """The whole generated module, as text."""
    schema = protocol_schema()
    defs: dict[str, Any] = schema["$defs"]
    out = [
        "/**",
        " * The agent-host wire contract, GENERATED from agent_host/rpc (the method table",
        " * in methods.py, the types in types.py, the codes in errors.py). Do not edit:",
        f" * run `{COMMAND}`.",
        " */",
        "",
        f"export const PROTOCOL_VERSION = {methods.PROTOCOL_VERSION};",
        "",
        "// -- methods",
        "",
    ]
    names = _constant_names()
    for method in methods.TABLE:
        out.append(f"/** {method.doc} ({_route(method)}) */")
        out.append(f"export const {names[method]} = {_string(method.name)};")
    requests = ", ".join(names[m] for m in methods.REQUESTS)
    out += [
        "",
        "/** The requests a client sends, each answered by the server. */",
        f"export const REQUESTS = [{requests}] as const;",
        "",
        "/** Each method's params and result (null: none, or answered with null). */",
        "export interface Methods {",
    ]
    for method in methods.TABLE:
        params = method.params.__name__
        result = "null" if method.result is None else method.result.__name__
        out.append(f"{INDENT}{_string(method.name)}: {{ params: {params}; result: {result} }};")
    out += ["}", "", "// -- error codes", "", "export const ErrorCode = {"]
    out += [f"{INDENT}{code.name}: {int(code)}," for code in ErrorCode]
    out += ["} as const;", "", "// -- params, results and the types they hold", ""]
    for name in _reachable(schema, _roots(schema)):
        out += _declaration(name, defs[name])
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _constant_names() -> dict[methods.Method, str]:
    """Each row's Python name in ``rpc.methods`` (``UNDO_RESTORE``), its TypeScript name too."""
    return {
        value: name
        for name, value in vars(methods).items()
        if isinstance(value, methods.Method) and name.isupper()
    }


def _route(method: methods.Method) -> str:
    return f"{method.direction} {method.kind}"


def _roots(schema: dict[str, Any]) -> list[Any]:
    """The initialization options, and each method's params and result."""
    roots: list[Any] = [schema["initializationOptions"]]
    for entry in schema["methods"].values():
        roots += [entry["params"], entry["result"]]
    return roots


def _reachable(schema: dict[str, Any], roots: list[Any]) -> list[str]:
    """The definitions ``roots`` use, in the order first reached (so a file reads
    from the methods down)."""
    seen: list[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                name = ref.rsplit("/", 1)[-1]
                if name not in seen:
                    seen.append(name)
                    visit(schema["$defs"][name])
            for key, value in node.items():
                if key != "$ref":
                    visit(value)
        elif isinstance(node, list):
            for item in node:
                visit(item)

    visit(roots)
    return seen


def _declaration(name: str, definition: dict[str, Any]) -> list[str]:
    """``name`` as a type (an enum, a JSON value) or an interface."""
    lines = _doc(definition.get("description"), "")
    if "enum" in definition:  # a Literal alias: the type, and its values to iterate
        values = ", ".join(_literal(v) for v in definition["enum"])
        plural = re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper() + "S"
        return [
            *lines,
            f"export type {name} = {_type(definition)};",
            f"export const {plural}: readonly {name}[] = [{values}];",
        ]
    if "properties" not in definition:
        return [*lines, f"export type {name} = {_type(definition)};"]
    lines.append(f"export interface {name} {{")
    required = set(definition.get("required", []))
    for prop, schema in definition["properties"].items():
        lines += _doc(schema.get("description"), INDENT)
        optional = "" if prop in required else "?"
        lines.append(f"{INDENT}{prop}{optional}: {_type(schema)};")
    lines.append("}")
    return lines


def _type(schema: dict[str, Any]) -> str:
    """A JSON Schema (of the shapes ``schema.py`` writes) as a TypeScript type."""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " | ".join(_type(option) for option in schema["anyOf"])
    if "enum" in schema:
        return " | ".join(_literal(value) for value in schema["enum"])
    if "const" in schema:
        return _literal(schema["const"])
    kind = schema.get("type")
    if kind == "array":
        items = _type(schema.get("items", {}))
        return f"({items})[]" if " | " in items else f"{items}[]"
    if kind == "object":
        values = schema.get("additionalProperties")
        return f"Record<string, {_type(values) if isinstance(values, dict) else 'unknown'}>"
    simple = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean"}
    if kind in simple:
        return simple[kind]
    if kind == "null":
        return "null"
    if not schema or set(schema) <= {"description", "default"}:
        return "unknown"
    raise ValueError(f"no TypeScript for the schema {schema!r}")


def _literal(value: Any) -> str:
    return _string(value) if isinstance(value, str) else json.dumps(value)


def _string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _doc(text: str | None, indent: str) -> list[str]:
    if not text:
        return []
    text = re.sub(r"``([^`]+)``", r"`\1`", text).replace("*/", "*\\/")
    lines = text.splitlines()
    if len(lines) == 1:
        return [f"{indent}/** {lines[0]} */"]
    return [f"{indent}/**", *(f"{indent} * {line}".rstrip() for line in lines), f"{indent} */"]


def main() -> None:
    print(typescript(), end="")


if __name__ == "__main__":
    main()
