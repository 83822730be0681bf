from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException


async def test_send_streams_and_answers(client):
    events = []
    client.protocol.fm.features  # noqa: B018
    result = await client.protocol.send_request_async("session/send", {"prompt": "hi"})
    assert result.stopReason == "end_turn"
    assert result.text == "Hello from the script."


async def test_invalid_params_name_the_field(client):
    with pytest.raises(JsonRpcException) as caught:
        await client.protocol.send_request_async("session/send", {"prompt": 5})
    assert caught.value.code == -32602
    assert "prompt" in caught.value.message
