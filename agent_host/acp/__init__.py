"""The Agent Client Protocol front end (``agent-host acp``), on the official SDK.

The SDK does the framing, JSON-RPC and schema; this package is glue over the
session service, by seam:

- ``serve``: the stdio entry point and its options
- ``agent``: the method handlers (initialize, session/*, extension methods)
- ``port``: the client port: engine updates as session/update, permission asks
- ``tool_calls``: a running turn's tool calls as ACP shows them, with diffs
- ``client_files``: the sessions' workspace: the client's files where it offers them
- ``terminal``: run_command in the client's terminal, where it offers one
- ``commands``: slash commands and the ``_agent-host/*`` extension methods
- ``convert``: engine values as ACP values and back, plain functions
- ``errors``: engine errors as JSON-RPC errors, in one place

Importing it imports the SDK: the CLI does so only when ``acp`` runs.
"""

from .serve import AcpOptions, serve_stdio

__all__ = ["AcpOptions", "serve_stdio"]
