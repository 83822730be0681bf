"""Size bounds shared by the modules that hold file content in memory."""

MAX_FILE_BYTES = 8 * 1024 * 1024
"""The largest file whose content is read whole or snapshotted (8 MiB). Past this
size a file is data (a database, a model, a video), and a snapshot of each version
of it would grow the blob store by as much: capture indexes such a file by stat
only and reports its changes as not captured; the file tools read it a window at a
time (``read_file``), do not search it (``grep``) and do not change it."""

COMMAND_DEFAULT_TIMEOUT = 120
"""Seconds a shell command runs before it and everything it started are killed,
when nobody says otherwise (``run_command``'s ``timeout``, every workspace)."""
COMMAND_MAX_TIMEOUT = 600
"""The most ``run_command``'s ``timeout`` may ask for."""
COMMAND_MAX_OUTPUT = 30_000
"""Characters of a command's output kept (its beginning and end); an MCP tool's
result is cut to as much."""
