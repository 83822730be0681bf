"""MCP servers as a source of tools: configuration, connections, results as text.

Protocol-neutral: a front end parses the servers (:func:`parse_servers` for ACP's
``mcpServers``, :func:`load_config_file` for a Claude Code / Cursor file), a session
lists their tools through :class:`McpServers` and calls them by the name the model
sees, ``mcp__<server>__<tool>``. The MCP SDK is imported only when a server starts.
"""

from .config import McpServerConfig, load_config_file, parse_config_file, parse_servers
from .results import result_text
from .servers import McpServers, McpServerStatus, Report
from .tool import McpTool, qualified_name

__all__ = [
    "McpServerConfig",
    "McpServerStatus",
    "McpServers",
    "McpTool",
    "Report",
    "load_config_file",
    "parse_config_file",
    "parse_servers",
    "qualified_name",
    "result_text",
]
