"""What a host starts on first use and stops when it closes: model providers, the
workspace index that captures commands' changes, and MCP servers.

Each is imported where it is first made, so a server's start-up pays for none of
them (P5): the provider SDKs, the folder walk and the MCP SDK load when a turn
first needs them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from .blobs import BlobStore
from .model import ModelProvider

if TYPE_CHECKING:
    from .capture import WorkspaceIndex
    from .mcp import McpServerConfig, McpServers

McpConfigs: TypeAlias = "Sequence[Mapping[str, Any] | McpServerConfig]"
"""MCP servers as McpServerConfigs or in ACP's McpServer shape (JSON objects)."""


class HostResources:
    def __init__(
        self,
        *,
        model: str,
        provider: ModelProvider | None,
        endpoint: Mapping[str, Any],
        roots: Sequence[Path],
        blobs: BlobStore,
        capture_commands: bool,
        mcp_servers: McpConfigs | None,
    ) -> None:
        self.model = model
        self._injected = provider
        self._endpoint = dict(endpoint)
        self._providers: dict[str, ModelProvider] = {}
        self._retired: list[ModelProvider] = []
        self._roots = list(roots)
        self._blobs = blobs
        self._capture = capture_commands
        self._indexes: dict[tuple[Path, ...], WorkspaceIndex] = {}
        """By the order of their roots: an index shows paths relative to its first."""
        self._mcp_configs = mcp_configs(mcp_servers)
        self._session_mcp: dict[str, list[McpServerConfig]] = {}
        self._mcp: dict[str | None, McpServers] = {}
        """Started server sets: the host's (key None) and sessions' own."""

    def set_limits(self, limits: Mapping[str, Any]) -> None:
        """The model time limits (``open_provider``'s keywords) of the providers opened
        from now on; those already open keep theirs until the host closes."""
        for name in ("first_byte_timeout", "timeout", "total_timeout", "max_retries"):
            self._endpoint.pop(name, None)
        self._endpoint.update(limits)
        self._retired.extend(self._providers.values())
        self._providers.clear()

    def provider(self, model: str | None = None) -> ModelProvider:
        """The provider for ``model`` (default: the host's), opened once and kept.

        A provider passed to the host answers for every model."""
        if self._injected is not None:
            return self._injected
        name = model or self.model
        provider = self._providers.get(name)
        if provider is None:
            from .providers import open_provider

            provider = self._providers[name] = open_provider(name, **self._endpoint)
        return provider

    def index(self, first: Path | None = None) -> WorkspaceIndex | None:
        """What captures shell commands' changes in the host's workspace, its paths
        relative to ``first`` (one of the roots; None: the first): built in the
        background from the first turn on, shared by the host's sessions started
        in that folder. Sessions of another of the roots get an index of their
        own, as the paths it logs must be their folder's."""
        if not self._capture:
            return None
        roots = tuple(self._roots)
        if first is not None and first != roots[0]:
            if first not in roots:
                raise ValueError(f"{first} is not one of the roots {roots}")
            roots = (first, *(r for r in roots if r != first))
        index = self._indexes.get(roots)
        if index is None:
            from .capture import WorkspaceIndex

            index = self._indexes[roots] = WorkspaceIndex(roots, self._blobs)
        index.start()
        return index

    async def use_mcp_servers(self, session_id: str, servers: McpConfigs) -> None:
        """The session's own MCP servers from now on, instead of the host's."""
        self._session_mcp[session_id] = mcp_configs(servers)
        started = self._mcp.pop(session_id, None)
        if started is not None:
            await started.close()  # the session's earlier set: replaced

    async def forget(self, session_id: str) -> None:
        """The session is closed: its own MCP servers stop."""
        self._session_mcp.pop(session_id, None)
        started = self._mcp.pop(session_id, None)
        if started is not None:
            await started.close()

    def mcp_servers(self, session_id: str) -> McpServers | None:
        """The MCP servers a turn of the session may call (None: there are none)."""
        key = session_id if session_id in self._session_mcp else None
        configs = self._session_mcp.get(session_id, self._mcp_configs)
        if not configs:
            return None
        servers = self._mcp.get(key)
        if servers is None:
            from .mcp import McpServers

            servers = self._mcp[key] = McpServers(configs)
        return servers

    async def close(self) -> None:
        for index in self._indexes.values():
            await index.close()
        for servers in self._mcp.values():
            await servers.close()
        opened = [*self._providers.values(), *self._retired]
        for provider in [*opened, *filter(None, [self._injected])]:
            await provider.close()


def mcp_configs(servers: McpConfigs | None) -> list[McpServerConfig]:
    """Configs as given (McpServerConfig) or in ACP's shape; McpConfigError if bad."""
    if not servers:
        return []
    from .mcp import McpServerConfig, parse_servers

    if all(isinstance(s, McpServerConfig) for s in servers):
        return list(servers)  # type: ignore[arg-type]
    return parse_servers(list(servers))
