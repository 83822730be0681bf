"""The Anthropic provider, through the real ``anthropic`` SDK, against a loopback
server speaking the Messages streaming protocol; and the message conversion."""

from __future__ import annotations

import sys

import pytest

from agent_host.session.model import (
    Finish,
    ModelRequest,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    UsageReport,
)
from agent_host.session.providers import (
    ModelAuthError,
    ModelConfigError,
    ModelStreamBroken,
    ModelUnavailable,
    open_provider,
)
from agent_host.session.providers.anthropic_format import to_anthropic

from .conftest import FAKE_KEY
from .fakes import anthropic_event, anthropic_message_start, json_response, sse
from .test_openai_compat import assert_no_key, collect, collect_until_error

pytest.importorskip("anthropic")

CONVERSATION = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "look at a.py and b.py"},
    {
        "role": "assistant",
        "content": "Reading.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
            },
            {
                "id": "call.2",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "b.py"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "print(1)"},
    {"role": "tool", "tool_call_id": "call.2", "content": ""},
    {"role": "assistant", "content": "Both print."},
    {"role": "user", "content": "now list files"},
]
TOOLS = [
    ToolSpec(
        "read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}
    ),
    ToolSpec("list_files", "List files", {}),
]
REQUEST = ModelRequest(messages=CONVERSATION, tools=TOOLS)

TEXT_AND_TOOL_USE = [
    anthropic_message_start(20, cache_read_input_tokens=100, cache_creation_input_tokens=5),
    anthropic_event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
    anthropic_event("ping"),
    anthropic_event(
        "content_block_delta", index=0, delta={"type": "text_delta", "text": "Listing "}
    ),
    anthropic_event("content_block_delta", index=0, delta={"type": "text_delta", "text": "now."}),
    anthropic_event("content_block_stop", index=0),
    anthropic_event(
        "content_block_start",
        index=1,
        content_block={"type": "tool_use", "id": "toolu_1", "name": "list_files", "input": {}},
    ),
    anthropic_event(
        "content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": '{"dir'}
    ),
    anthropic_event(
        "content_block_delta",
        index=1,
        delta={"type": "input_json_delta", "partial_json": '": "src"}'},
    ),
    anthropic_event("content_block_stop", index=1),
    anthropic_event(
        "message_delta",
        delta={"stop_reason": "tool_use", "stop_sequence": None},
        usage={"output_tokens": 33},
    ),
    anthropic_event("message_stop"),
]
EXPECTED = [
    TextDelta("Listing "),
    TextDelta("now."),
    ToolCallRequest("toolu_1", "list_files", {"dir": "src"}),
    UsageReport(125, 33),
    Finish("tool_use"),
]


def sent_key(received) -> str | None:
    """The key a request carried: this anthropic SDK sends it as a bearer token,
    older ones as x-api-key."""
    bearer = received.headers.get("authorization", "").removeprefix("Bearer ")
    return received.headers.get("x-api-key") or bearer or None


def provider_for(server, **kwargs):
    kwargs.setdefault("api_key", FAKE_KEY)
    return open_provider("anthropic/claude-sonnet-4-20250514", base_url=server.url, **kwargs)


async def test_streams_text_and_a_tool_call_and_converts_the_conversation(serve):
    server = serve(sse(TEXT_AND_TOOL_USE))
    assert await collect(provider_for(server), REQUEST) == EXPECTED

    [received] = server.received
    assert received.path == "/v1/messages"
    assert sent_key(received) == FAKE_KEY
    body = received.body
    assert body["model"] == "claude-sonnet-4-20250514"
    assert body["stream"] is True and body["max_tokens"] == 8192
    assert body["system"] == "You are terse."
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "look at a.py and b.py"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading."},
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "read_file",
                    "input": {"path": "a.py"},
                },
                # an id Anthropic would reject is made safe, at both ends of the call
                {
                    "type": "tool_use",
                    "id": "call_2",
                    "name": "read_file",
                    "input": {"path": "b.py"},
                },
            ],
        },
        {
            "role": "user",
            "content": [  # both results of the parallel calls share one user message
                {"type": "tool_result", "tool_use_id": "call_1", "content": "print(1)"},
                {"type": "tool_result", "tool_use_id": "call_2", "content": "(no output)"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Both print."}]},
        {"role": "user", "content": [{"type": "text", "text": "now list files"}]},
    ]
    assert body["tools"] == [
        {"name": "read_file", "description": "Read a file", "input_schema": TOOLS[0].parameters},
        {
            "name": "list_files",
            "description": "List files",
            "input_schema": {"type": "object", "properties": {}},
        },
    ]


async def test_max_output_tokens_and_plain_end_turn(serve):
    server = serve(
        sse(
            [
                anthropic_message_start(7),
                anthropic_event(
                    "content_block_start", index=0, content_block={"type": "text", "text": ""}
                ),
                anthropic_event(
                    "content_block_delta", index=0, delta={"type": "text_delta", "text": "hi"}
                ),
                anthropic_event("content_block_stop", index=0),
                anthropic_event(
                    "message_delta", delta={"stop_reason": "max_tokens"}, usage={"output_tokens": 2}
                ),
                anthropic_event("message_stop"),
            ]
        )
    )
    request = ModelRequest(messages=[{"role": "user", "content": "hi"}], max_output_tokens=2)
    events = await collect(provider_for(server), request)
    assert events == [TextDelta("hi"), UsageReport(7, 2), Finish("max_tokens")]
    body = server.received[0].body
    assert body["max_tokens"] == 2 and "system" not in body and "tools" not in body


async def test_401_names_the_env_var_and_never_the_key(serve):
    body = {
        "type": "error",
        "error": {"type": "authentication_error", "message": f"invalid x-api-key {FAKE_KEY}"},
    }
    server = serve(json_response(401, body))
    _, err = await collect_until_error(provider_for(server), REQUEST)
    assert isinstance(err, ModelAuthError) and "ANTHROPIC_API_KEY" in str(err)
    assert_no_key(err)


async def test_overloaded_is_retried_by_the_sdk(serve):
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server = serve(json_response(529, overloaded, {"retry-after-ms": "5"}), sse(TEXT_AND_TOOL_USE))
    assert await collect(provider_for(server), REQUEST) == EXPECTED
    assert len(server.received) == 2


async def test_an_error_event_after_output_breaks_the_stream(serve):
    error = anthropic_event("error", error={"type": "overloaded_error", "message": "Overloaded"})
    server = serve(sse(TEXT_AND_TOOL_USE[:4] + [error]))
    events, err = await collect_until_error(provider_for(server), REQUEST)
    assert events == [TextDelta("Listing ")]
    assert isinstance(err, ModelStreamBroken) and "overloaded_error" in str(err)
    assert len(server.received) == 1


async def test_an_error_event_before_output_is_retried(serve):
    error = anthropic_event("error", error={"type": "overloaded_error", "message": "Overloaded"})
    server = serve(sse(TEXT_AND_TOOL_USE[:2] + [error]), sse(TEXT_AND_TOOL_USE))
    provider = provider_for(server)
    provider.retry_initial_delay = 0.01
    assert await collect(provider, REQUEST) == EXPECTED
    assert len(server.received) == 2


async def test_a_cut_stream_is_a_model_error(serve):
    server = serve(sse(TEXT_AND_TOOL_USE[:8], cut=True))
    events, err = await collect_until_error(provider_for(server, max_retries=0), REQUEST)
    assert events == [TextDelta("Listing "), TextDelta("now.")]
    assert isinstance(err, ModelStreamBroken)


async def test_a_500_storm_ends_as_unavailable(serve):
    server = serve(
        json_response(
            500,
            {"type": "error", "error": {"type": "api_error", "message": "boom"}},
            {"retry-after-ms": "5"},
        )
    )
    _, err = await collect_until_error(provider_for(server, max_retries=2), REQUEST)
    assert isinstance(err, ModelUnavailable) and "after 2 retries" in str(err)
    assert len(server.received) == 3


async def test_no_key_anywhere_is_a_config_error(serve):
    server = serve(sse(TEXT_AND_TOOL_USE))
    provider = open_provider("anthropic/claude-sonnet-4", base_url=server.url)
    _, err = await collect_until_error(provider, REQUEST)
    assert isinstance(err, ModelConfigError) and "ANTHROPIC_API_KEY" in str(err)
    assert server.received == []


async def test_the_key_comes_from_the_environment(serve, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # base_url wins
    server = serve(sse(TEXT_AND_TOOL_USE))
    provider = open_provider("anthropic/claude-sonnet-4", base_url=server.url)
    assert await collect(provider, REQUEST) == EXPECTED
    assert sent_key(server.received[0]) == FAKE_KEY


def test_a_named_but_missing_credentials_profile_is_a_config_error(monkeypatch, tmp_path):
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(ModelConfigError, match="ANTHROPIC_API_KEY.*Config file not found"):
        open_provider("anthropic/claude-sonnet-4")


def test_without_the_sdk_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "anthropic", None)  # makes `import anthropic` fail
    with pytest.raises(ModelConfigError, match=r"pip install 'agent-host\[anthropic\]'"):
        open_provider("anthropic/claude-sonnet-4", api_key=FAKE_KEY)


def test_conversion_merges_roles_and_drops_empty_text():
    system, messages = to_anthropic(
        [
            {"role": "system", "content": "one"},
            {
                "role": "user",
                "content": [{"type": "text", "text": "parts "}, {"type": "text", "text": "joined"}],
            },
            {"role": "user", "content": "again"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}
                ],
            },
            {"role": "tool", "tool_call_id": "c", "content": "ok"},
            {"role": "user", "content": "Summary of the conversation so far: ..."},
            {"role": "system", "content": "two"},
        ]
    )
    assert system == "one\n\ntwo"
    assert messages == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "parts joined"},
                {"type": "text", "text": "again"},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c", "name": "f", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c", "content": "ok"},
                {"type": "text", "text": "Summary of the conversation so far: ..."},
            ],
        },
    ]
