"""A small MCP server for the tests: ``server_app.py stdio``, ``server_app.py http
PORT``, ``server_app.py hang`` (never answers initialize), ``server_app.py
hang-child`` (the same, with a child process holding its stdout and ignoring
SIGTERM), ``server_app.py stdio-child`` (stdio, with such a child) or
``server_app.py exit`` (says why on stderr and exits at once).

``MCP_TEST_LOG``, when set, is a file the server appends what happened to (its pid
at start, its children's pids, the slow tool's start, cancel and end), so a test
can see it.
"""

import base64
import os
import sys
import time

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def log(line: str) -> None:
    path = os.environ.get("MCP_TEST_LOG")
    if path:
        with open(path, "a") as f:
            f.write(f"{line}\n")


def leave_child() -> int:
    """Start a process that holds this one's stdout and outlives it (ignores SIGTERM)."""
    import subprocess

    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"
    child = subprocess.Popen([sys.executable, "-c", code])
    log(f"child {child.pid}")
    return child.pid


def build():
    import anyio
    from mcp import types
    from mcp.server.mcpserver import Context, Image, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic import BaseModel

    app = MCPServer("test-server")

    @app.tool(annotations=types.ToolAnnotations(read_only_hint=True))
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    class Sum(BaseModel):
        total: int
        terms: list[int]

    @app.tool()
    def add(a: int, b: int) -> Sum:
        """Add two numbers (structured output)."""
        return Sum(total=a + b, terms=[a, b])

    @app.tool()
    def tiny_image() -> Image:
        """A 1x1 PNG."""
        return Image(data=PNG, format="png")

    @app.tool()
    def mixed() -> list:
        """Text, an image and an embedded resource."""
        return [
            types.TextContent(type="text", text="hello"),
            Image(data=PNG, format="png"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(uri="file:///notes.txt", text="the notes"),
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(
                    uri="file:///blob.bin",
                    blob=base64.b64encode(b"12345").decode(),
                    mime_type="application/octet-stream",
                ),
            ),
            types.ResourceLink(type="resource_link", uri="file:///big.log", name="big.log"),
        ]

    @app.tool()
    def big(chars: int) -> str:
        """A text of ``chars`` characters."""
        return "x" * chars

    @app.tool()
    async def slow(seconds: float, ctx: Context) -> str:
        """Sleep, logging whether it was cancelled."""
        log(f"slow start {ctx.request_id}")
        try:
            await anyio.sleep(seconds)
        except BaseException as exc:
            log(f"slow cancelled {type(exc).__name__}")
            raise
        log("slow done")
        return "slept"

    @app.tool()
    def crash() -> str:
        """Kill the server mid-call."""
        print("crashing on purpose", file=sys.stderr, flush=True)
        os._exit(1)

    @app.tool()
    async def add_dynamic(ctx: Context) -> str:
        """Add the tool 'dynamic' and say the tool list changed."""
        app.add_tool(lambda: "dynamic result", name="dynamic", description="added at runtime")
        await ctx.session.send_tool_list_changed()
        return "added"

    @app.tool()
    def fail() -> str:
        """Fail on purpose."""
        raise ToolError("failed on purpose")

    @app.tool(annotations=types.ToolAnnotations(read_only_hint=True))
    def header(name: str, ctx: Context) -> str:
        """An HTTP request header ('none' over stdio)."""
        headers = ctx.headers
        return str(headers.get(name) if headers is not None else "none")

    @app.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    app.add_tool(lambda: "dotted", name="dotted.name", description="a name the model can't take")
    return app


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode in ("hang", "hang-child"):
        log(f"pid {os.getpid()} {time.time():.3f}")
        if mode == "hang-child":
            leave_child()
        for _ in sys.stdin:  # reads, never answers; ends when the client closes stdin
            pass
        return
    if mode == "exit":
        print("starting up", file=sys.stderr)
        print(f"fatal: token {os.environ.get('TOKEN', '?')} was refused", file=sys.stderr)
        sys.exit(2)
    log(f"pid {os.getpid()} {time.time():.3f}")
    if mode == "stdio-child":
        leave_child()  # before the SDK's server moves the wire off fd 1
    app = build()
    if mode == "http":
        app.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run()


if __name__ == "__main__":
    main()
