"""McpServers against @modelcontextprotocol/server-everything from the npm registry:
a server nobody here wrote, with images, embedded resources, structured content,
annotations, and a long-running tool to cancel."""

from __future__ import annotations

import asyncio
import time

import pytest

from agent_host.session.mcp import McpServerConfig, McpServers

from ...mcp_npm import npm_mcp  # noqa: F401  (fixture)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture
async def everything(npm_mcp):  # noqa: F811
    servers = McpServers(
        [McpServerConfig(name="ev", command=npm_mcp["everything"], args=("stdio",))],
        start_timeout=60,
    )
    yield servers
    await servers.close()


async def test_its_tools_and_their_annotations(everything):
    tools = {t.name: t for t in await everything.tools()}
    assert {"echo", "get-sum", "get-tiny-image", "get-structured-content"} <= set(tools)
    assert tools["echo"].qualified == "mcp__ev__echo" and tools["echo"].read_only
    assert not tools["toggle-simulated-logging"].read_only
    assert tools["get-sum"].input_schema["properties"]["a"]["type"] == "number"


async def test_images_resources_and_structured_content_become_text(everything):
    assert await everything.call("mcp__ev__echo", {"message": "hi"}) == ("Echo: hi", False)
    text, error = await everything.call("mcp__ev__get-tiny-image", {})
    assert not error and "[image: image/png," in text
    text, error = await everything.call(
        "mcp__ev__get-resource-reference", {"resourceType": "Text", "resourceId": 1}
    )
    assert not error and "[resource " in text
    text, error = await everything.call("mcp__ev__get-structured-content", {"location": "New York"})
    assert not error and "temperature" in text
    text, error = await everything.call("mcp__ev__get-sum", {"a": "one", "b": 2})
    assert error  # the server's own validation, given back to the model as an error


async def test_a_long_operation_is_cancelled_and_the_server_goes_on(everything):
    await everything.tools()
    call = asyncio.create_task(
        everything.call("mcp__ev__trigger-long-running-operation", {"duration": 30, "steps": 5})
    )
    await asyncio.sleep(1.0)
    started = time.monotonic()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert time.monotonic() - started < 5
    assert await everything.call("mcp__ev__echo", {"message": "after"}) == ("Echo: after", False)
