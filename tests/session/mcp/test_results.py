"""CallToolResult as text for the model, for the content kinds no test server call
covers: structured content alone, audio, nothing at all."""

from __future__ import annotations

from mcp import types

from agent_host.session.mcp import result_text


def test_structured_content_without_text_is_its_json() -> None:
    result = types.CallToolResult(content=[], structured_content={"total": 3, "név": "ü"})
    assert result_text(result) == ('{"total": 3, "név": "ü"}', False)


def test_text_wins_over_structured_content() -> None:
    result = types.CallToolResult(
        content=[types.TextContent(type="text", text="3")], structured_content={"total": 3}
    )
    assert result_text(result) == ("3", False)


def test_audio_empty_and_error() -> None:
    audio = types.AudioContent(type="audio", data="AAAAAA==", mime_type="audio/wav")
    assert result_text(types.CallToolResult(content=[audio])) == (
        "[audio: audio/wav, 4 bytes]",
        False,
    )
    assert result_text(types.CallToolResult(content=[], is_error=True)) == (
        "(the tool returned no content)",
        True,
    )
