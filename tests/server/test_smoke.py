"""The smallest round trips: a turn answered, a bad request answered."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException


async def test_send_answers_with_the_turns_text(client):
    result = await client.protocol.send_request_async("session/send", {"prompt": "hi"})
    assert result.stopReason == "end_turn"
    assert result.text == "Hello from the script."


async def test_invalid_params_name_the_field(client):
    with pytest.raises(JsonRpcException) as caught:
        await client.protocol.send_request_async("session/send", {"prompt": 5})
    assert caught.value.code == -32602
    assert "prompt" in caught.value.message
