"""MCP server configurations: what to spawn or where to connect, parsed from the two
shapes they arrive in.

``parse_servers`` reads ACP's ``mcpServers`` list (what an editor sends with a new
session); ``parse_config_file`` reads the ``{"mcpServers": {name: ...}}`` file that
Claude Code and Cursor use. Both check every field and name it in the error, and
neither imports the MCP SDK: a session without MCP servers never pays for it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import attrs

from ..environment import looks_secret
from ..errors import McpConfigError, SandboxConfigError
from ..redaction import SECRETS, looks_like_token
from ..sandbox.policy import SandboxPolicy

Pairs = tuple[tuple[str, str], ...]

# The model sees a tool as mcp__<server>__<tool>: a "__" in the server name, or one
# at either end, would make two servers' tools read the same.
_NAME = re.compile(r"^[A-Za-z0-9-](?:[A-Za-z0-9_-]{0,62}[A-Za-z0-9-])?$")
_NAME_RULE = "1-64 letters, digits, '-' or '_', with no '__' and no '_' at either end"


def name_ok(name: str) -> bool:
    """Whether ``name`` can name an MCP server."""
    return bool(_NAME.match(name)) and "__" not in name


def safe_url(url: str) -> str:
    """``url`` without credentials or query string, which often carry tokens."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


@attrs.frozen(repr=False)
class McpServerConfig:
    """One MCP server: a command to spawn (stdio) or a URL to connect to (http).

    ``env`` is merged over a small safe environment (HOME, PATH, SHELL, TERM), not
    over this process's. The repr shows env and header names only, never values.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Pairs = ()
    cwd: str | None = None
    url: str | None = None
    headers: Pairs = ()
    tool_timeout: float | None = None
    """Seconds a call of one of its tools may take (None: :class:`McpServers`' default)."""
    sandbox: SandboxPolicy | None = None
    """How a stdio server is confined (None: as the session's commands are). A
    server that needs the network, say, is given ``{"network": true}``, or ``"full"``."""

    def __attrs_post_init__(self) -> None:
        if not name_ok(self.name):
            raise McpConfigError(f"MCP server name {self.name!r} must be {_NAME_RULE}")
        if (self.command is None) == (self.url is None):
            raise McpConfigError(f"MCP server {self.name!r} needs exactly one of command and url")
        if self.tool_timeout is not None and not 0 < self.tool_timeout < math.inf:
            raise McpConfigError(
                f"MCP server {self.name!r}: the tool timeout must be a positive number of seconds"
            )
        register_secrets(self)

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    def secrets(self) -> list[str]:
        """The env and header values, so messages built from server output can hide them."""
        return [v for _, v in (*self.env, *self.headers) if v]

    def __repr__(self) -> str:
        if self.transport == "stdio":
            env = [k for k, _ in self.env]
            where = f"command={self.command!r}, args={self.args!r}, env={env!r}, cwd={self.cwd!r}"
        else:
            headers = [k for k, _ in self.headers]
            where = f"url={safe_url(self.url or '')!r}, headers={headers!r}"
        timeout = "" if self.tool_timeout is None else f", tool_timeout={self.tool_timeout:g}"
        return (
            f"McpServerConfig(name={self.name!r}, transport={self.transport!r}, {where}{timeout})"
        )

    __str__ = __repr__


def register_secrets(config: McpServerConfig) -> None:
    """The config's secrets into the process's registry: every header value (and a
    bearer token alone), env values of secret-looking names (``*TOKEN*``...) or that
    look like tokens, and a password in the URL. Plain env values such as ``true``
    or a path are left out: masking them would garble every output."""
    for _, value in config.headers:
        SECRETS.add(value)
        scheme, _, token = value.partition(" ")
        if token and scheme.lower() in ("bearer", "token", "basic"):
            SECRETS.add(token)
    for name, value in config.env:
        if looks_secret(name) or looks_like_token(value):
            SECRETS.add(value, fragments=looks_like_token(value))
    SECRETS.add_url(config.url)


def parse_servers(value: object) -> list[McpServerConfig]:
    """ACP's ``mcpServers``: a list of stdio ``{name, command, args, env: [{name,
    value}], cwd?}`` and http ``{type: "http", name, url, headers: [{name, value}]}``;
    either may add ``timeout``, its tool calls' bound in milliseconds (as in the
    config file)."""
    if not isinstance(value, list):
        raise McpConfigError("mcpServers must be a list")
    configs = []
    for i, item in enumerate(value):
        path = f"mcpServers[{i}]"
        obj = _object(item, path)
        name = _string(obj, "name", path, required=True) or ""
        kind = _kind(obj, path, http_types=("http",), bare_url=False)
        configs.append(_server(name, f"{path}.name", obj, path, kind, _pair_list))
    return _unique(configs)


def parse_config_file(data: object) -> list[McpServerConfig]:
    """The Claude Code / Cursor file: ``{"mcpServers": {"<name>": {"command", "args",
    "env": {K: V}, "cwd"?} | {"type": "http" | "streamable-http", "url", "headers":
    {K: V}}}}``; a bare ``url`` means http. A server's tool calls are bounded by
    ``timeout`` (milliseconds, as Claude Code reads it) or ``tool_timeout_sec``
    (seconds, as Codex names it)."""
    root = _object(data, "the MCP config")
    if "mcpServers" not in root:
        raise McpConfigError("mcpServers is required")
    servers = root["mcpServers"]
    if not isinstance(servers, dict):
        raise McpConfigError("mcpServers must be an object of server name to server")
    configs = []
    for name, item in servers.items():
        path = f"mcpServers[{json.dumps(name)}]"
        obj = _object(item, path)
        kind = _kind(obj, path, http_types=("http", "streamable-http"), bare_url=True)
        configs.append(_server(name, f"{path}: the server name", obj, path, kind, _pair_object))
    return _unique(configs)


def load_config_file(path: str | Path) -> list[McpServerConfig]:
    """The servers of the MCP config file at ``path``; errors name the file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise McpConfigError(
            f"cannot read MCP config {path}: {exc.strerror or type(exc).__name__}"
        ) from exc
    except UnicodeDecodeError as exc:
        raise McpConfigError(f"MCP config {path} is not UTF-8 text") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(
            f"MCP config {path} is not valid JSON: {exc.msg} at line {exc.lineno} "
            f"column {exc.colno}"
        ) from exc
    try:
        return parse_config_file(data)
    except McpConfigError as exc:
        raise McpConfigError(f"MCP config {path}: {exc}") from exc


def _server(
    name: str,
    name_path: str,
    obj: dict,
    path: str,
    kind: Literal["stdio", "http"],
    pairs: Callable[[dict, str, str], Pairs],
) -> McpServerConfig:
    if not name_ok(name):
        raise McpConfigError(f"{name_path} {name!r} must be {_NAME_RULE}")
    timeout = _tool_timeout(obj, path)
    if kind == "stdio":
        return McpServerConfig(
            name=name,
            command=_command(obj, path),
            args=_strings(obj, "args", path),
            env=pairs(obj, "env", path),
            cwd=_string(obj, "cwd", path),
            tool_timeout=timeout,
            sandbox=_sandbox(obj, path),
        )
    return McpServerConfig(
        name=name, url=_url(obj, path), headers=pairs(obj, "headers", path), tool_timeout=timeout
    )


def _sandbox(obj: dict, path: str) -> SandboxPolicy | None:
    if "sandbox" not in obj:
        return None
    try:
        return SandboxPolicy.from_json(obj["sandbox"], where=f"{path}.sandbox")
    except SandboxConfigError as exc:
        raise McpConfigError(str(exc)) from None


def _tool_timeout(obj: dict, path: str) -> float | None:
    """Seconds, from ``timeout`` (milliseconds) or ``tool_timeout_sec`` (seconds)."""
    given = [(key, obj[key]) for key in ("timeout", "tool_timeout_sec") if key in obj]
    if not given:
        return None
    if len(given) > 1:
        raise McpConfigError(f"{path}: give timeout (ms) or tool_timeout_sec, not both")
    key, value = given[0]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise McpConfigError(f"{path}.{key} must be a number")
    if not 0 < value < math.inf:
        raise McpConfigError(f"{path}.{key} must be above 0")
    return value / 1000 if key == "timeout" else float(value)


def _unique(configs: list[McpServerConfig]) -> list[McpServerConfig]:
    seen: set[str] = set()
    for config in configs:
        if config.name in seen:
            raise McpConfigError(f"duplicate MCP server name {config.name!r}")
        seen.add(config.name)
    return configs


def _kind(
    obj: dict, path: str, *, http_types: tuple[str, ...], bare_url: bool
) -> Literal["stdio", "http"]:
    kind = obj.get("type")
    if kind is None:
        return "http" if bare_url and "url" in obj and "command" not in obj else "stdio"
    if kind == "stdio":
        return "stdio"
    if kind in http_types:
        return "http"
    shown = repr(kind) if isinstance(kind, str) else "of the wrong kind"
    raise McpConfigError(
        f"{path}.type {shown} is not supported: only stdio and http MCP servers are"
    )


def _object(value: object, path: str) -> dict:
    if not isinstance(value, dict):
        raise McpConfigError(f"{path} must be an object")
    return value


def _string(obj: dict, key: str, path: str, *, required: bool = False) -> str | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise McpConfigError(f"{path}.{key} is required")
        return None
    if not isinstance(value, str):
        raise McpConfigError(f"{path}.{key} must be a string")
    return value


def _command(obj: dict, path: str) -> str:
    command = _string(obj, "command", path, required=True)
    if not command or not command.strip():
        raise McpConfigError(f"{path}.command must not be empty")
    return command


def _url(obj: dict, path: str) -> str:
    url = _string(obj, "url", path, required=True) or ""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise McpConfigError(f"{path}.url must be an http:// or https:// URL")
    return url


def _strings(obj: dict, key: str, path: str) -> tuple[str, ...]:
    value = obj.get(key)
    if value is None:
        return ()
    if not isinstance(value, list):
        raise McpConfigError(f"{path}.{key} must be a list of strings")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise McpConfigError(f"{path}.{key}[{i}] must be a string")
    return tuple(value)


def _pair_list(obj: dict, key: str, path: str) -> Pairs:
    """ACP's ``[{"name": ..., "value": ...}]``."""
    value = obj.get(key)
    if value is None:
        return ()
    if not isinstance(value, list):
        raise McpConfigError(f"{path}.{key} must be a list of {{name, value}} objects")
    pairs = []
    for i, item in enumerate(value):
        where = f"{path}.{key}[{i}]"
        entry = _object(item, where)
        name = _string(entry, "name", where, required=True)
        if not name:
            raise McpConfigError(f"{where}.name must not be empty")
        pairs.append((name, _string(entry, "value", where, required=True) or ""))
    return tuple(pairs)


def _pair_object(obj: dict, key: str, path: str) -> Pairs:
    """The config file's ``{"NAME": "value"}``."""
    value = obj.get(key)
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise McpConfigError(f"{path}.{key} must be an object of names to strings")
    for name, item in value.items():
        if not name:
            raise McpConfigError(f"{path}.{key} has an empty name")
        if not isinstance(item, str):
            raise McpConfigError(f"{path}.{key}[{json.dumps(name)}] must be a string")
    return tuple(value.items())
