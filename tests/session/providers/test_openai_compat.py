"""The OpenAI-compatible provider, through the real ``openai`` SDK, against a
loopback server speaking the chat-completions streaming protocol."""

from __future__ import annotations

import json
import time
import traceback

import pytest

from agent_host.session.errors import ModelError
from agent_host.session.model import (
    Finish,
    ModelRequest,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    UsageReport,
)
from agent_host.session.providers import (
    RAW_ARGUMENTS_KEY,
    ModelAuthError,
    ModelNotFound,
    ModelRateLimited,
    ModelStreamBroken,
    ModelTimeout,
    ModelUnavailable,
    open_provider,
)

from .conftest import FAKE_KEY
from .fakes import (
    OPENAI_DONE,
    hang,
    json_response,
    openai_chunk,
    sse,
    tool_fragment,
)

TOOLS = [
    ToolSpec(
        "read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}
    ),
    ToolSpec("list_files", "List files", {}),
]
REQUEST = ModelRequest(
    messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
    tools=TOOLS,
    max_output_tokens=100,
)

TEXT_AND_TWO_CALLS = [
    openai_chunk({"role": "assistant", "content": ""}),
    openai_chunk({"content": "Reading "}),
    openai_chunk({"content": "both."}),
    openai_chunk(tool_fragment(0, id="call_a", name="read_file", arguments="")),
    openai_chunk(tool_fragment(0, arguments='{"pa')),
    openai_chunk(tool_fragment(1, id="call_b", name="list_files", arguments="")),
    openai_chunk(tool_fragment(0, arguments='th": "a.py"}')),
    openai_chunk(tool_fragment(1, arguments="{}")),
    openai_chunk(finish="tool_calls"),
    openai_chunk(usage=(42, 17)),
    OPENAI_DONE,
]
EXPECTED = [
    TextDelta("Reading "),
    TextDelta("both."),
    ToolCallRequest("call_a", "read_file", {"path": "a.py"}),
    ToolCallRequest("call_b", "list_files", {}),
    UsageReport(42, 17),
    Finish("tool_use"),
]
HELLO = [
    openai_chunk({"content": "hello"}),
    openai_chunk(finish="stop"),
    openai_chunk(usage=(3, 1)),
    OPENAI_DONE,
]


def provider_for(server, model: str = "openai/gpt-4.1-mini", **kwargs):
    kwargs.setdefault("api_key", FAKE_KEY)
    return open_provider(model, base_url=server.url + "/v1", **kwargs)


async def collect(provider, request: ModelRequest = REQUEST) -> list:
    try:
        return [event async for event in provider.stream(request)]
    finally:
        await provider.close()


async def collect_until_error(provider, request: ModelRequest = REQUEST):
    events: list = []
    try:
        async for event in provider.stream(request):
            events.append(event)
    except ModelError as exc:
        return events, exc
    finally:
        await provider.close()
    raise AssertionError(f"no ModelError; got {events}")


def assert_no_key(err: BaseException) -> None:
    assert FAKE_KEY not in str(err)
    assert FAKE_KEY not in "".join(traceback.format_exception(err))


async def test_streams_text_then_parallel_tool_calls_then_usage(serve):
    server = serve(sse(TEXT_AND_TWO_CALLS))
    assert await collect(provider_for(server)) == EXPECTED

    [received] = server.received
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == f"Bearer {FAKE_KEY}"
    body = received.body
    assert body["model"] == "gpt-4.1-mini"
    assert body["messages"] == REQUEST.messages
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 100 and "max_tokens" not in body
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": TOOLS[0].parameters,
        },
    }
    # a tool without parameters still gets an object schema
    assert body["tools"][1]["function"]["parameters"] == {"type": "object", "properties": {}}


async def test_compatible_servers_get_max_tokens_and_no_tools_when_none(serve, monkeypatch):
    server = serve(sse(HELLO))
    monkeypatch.setenv("OLLAMA_BASE_URL", server.url)  # a bare host: /v1 is added
    events = await collect(
        open_provider("ollama/llama3.2"),
        ModelRequest(messages=[{"role": "user", "content": "hi"}], max_output_tokens=50),
    )
    assert events == [TextDelta("hello"), UsageReport(3, 1), Finish("end_turn")]
    [received] = server.received
    assert received.path == "/v1/chat/completions"
    assert received.body["max_tokens"] == 50 and "tools" not in received.body
    assert received.headers["authorization"] == "Bearer ollama"


async def test_429_with_retry_after_is_retried(serve):
    server = serve(
        json_response(
            429, {"error": {"message": "slow down", "type": "rate_limit"}}, {"Retry-After": "0"}
        ),
        sse(TEXT_AND_TWO_CALLS),
    )
    assert await collect(provider_for(server)) == EXPECTED
    assert len(server.received) == 2


async def test_500_storm_fails_after_max_retries(serve):
    # retry-after-ms keeps the SDK's backoff short; the count is what matters
    server = serve(json_response(500, {"error": {"message": "boom"}}, {"retry-after-ms": "5"}))
    _, err = await collect_until_error(provider_for(server, max_retries=3))
    assert isinstance(err, ModelUnavailable)
    assert len(server.received) == 1 + 3
    assert "HTTP 500" in str(err) and "after 3 retries" in str(err) and "boom" in str(err)
    assert server.url in str(err)


async def test_persistent_429_says_rate_limited(serve):
    server = serve(json_response(429, {"error": {"message": "slow"}}, {"retry-after-ms": "5"}))
    _, err = await collect_until_error(provider_for(server, max_retries=1))
    assert isinstance(err, ModelRateLimited) and "rate limited" in str(err)
    assert len(server.received) == 2


async def test_401_names_the_env_var_and_never_the_key(serve):
    # Servers echo the key (or a prefix of it) back; none of it may reach the user.
    echo = {
        "error": {
            "message": f"Incorrect API key provided: {FAKE_KEY}. Bearer {FAKE_KEY}",
            "code": "invalid_api_key",
        }
    }
    server = serve(json_response(401, echo))
    _, err = await collect_until_error(provider_for(server))
    assert isinstance(err, ModelAuthError)
    assert "API key was rejected" in str(err) and "OPENAI_API_KEY" in str(err)
    assert_no_key(err)
    assert err.__cause__ is None and err.__context__ is None
    assert len(server.received) == 1  # not retried


async def test_404_says_which_model_is_missing_where(serve):
    server = serve(json_response(404, {"error": {"message": "The model does not exist"}}))
    _, err = await collect_until_error(provider_for(server, model="openai/gpt-nope"))
    assert isinstance(err, ModelNotFound)
    assert f"model 'gpt-nope' not found at {server.url}/v1" in str(err)


async def test_a_hanging_server_times_out_quickly(serve):
    server = serve(hang)
    started = time.monotonic()
    _, err = await collect_until_error(provider_for(server, timeout=0.3, max_retries=0))
    assert time.monotonic() - started < 5
    assert isinstance(err, ModelTimeout) and err.bound == "idle"
    assert "the model sent nothing for 0.3 s (model idle timeout" in str(err)


async def test_connection_refused_asks_if_the_server_runs(unused_tcp_port):
    provider = open_provider(
        "openai/gpt-4.1",
        base_url=f"http://127.0.0.1:{unused_tcp_port}/v1",
        api_key=FAKE_KEY,
        max_retries=0,
    )
    _, err = await collect_until_error(provider)
    assert isinstance(err, ModelUnavailable)
    assert f"cannot reach http://127.0.0.1:{unused_tcp_port}/v1" in str(err)
    assert "is the server running?" in str(err)


async def test_a_stream_cut_after_output_raises_and_is_not_retried(serve):
    server = serve(sse(TEXT_AND_TWO_CALLS[:5], cut=True), sse(TEXT_AND_TWO_CALLS))
    events, err = await collect_until_error(provider_for(server))
    assert events == [TextDelta("Reading "), TextDelta("both.")]
    assert isinstance(err, ModelStreamBroken) and "Retry the turn" in str(err)
    assert len(server.received) == 1


async def test_a_stream_that_stops_without_finishing_is_broken(serve):
    # a clean end of the body, but no finish_reason and no [DONE]
    server = serve(sse(TEXT_AND_TWO_CALLS[:2]))
    events, err = await collect_until_error(provider_for(server))
    assert events == [TextDelta("Reading ")]
    assert isinstance(err, ModelStreamBroken) and "ended before the model finished" in str(err)


async def test_a_stream_stalling_mid_way_times_out(serve):
    server = serve(sse(TEXT_AND_TWO_CALLS[:2], hang_at_end=True))
    events, err = await collect_until_error(provider_for(server, timeout=0.3, max_retries=0))
    assert events == [TextDelta("Reading ")]
    assert isinstance(err, ModelTimeout) and "sent nothing more for 0.3 s" in str(err)


async def test_a_stream_cut_before_any_output_is_retried(serve):
    server = serve(sse([openai_chunk({"role": "assistant"})], cut=True), sse(TEXT_AND_TWO_CALLS))
    provider = provider_for(server)
    provider.retry_initial_delay = 0.01
    assert await collect(provider) == EXPECTED
    assert len(server.received) == 2


async def test_an_error_event_in_the_stream_becomes_a_model_error(serve):
    error = 'data: {"error": {"message": "context too long", "type": "invalid_request"}}\n\n'
    server = serve(sse([error]))
    _, err = await collect_until_error(provider_for(server))
    assert "context too long" in str(err)


async def test_bad_arguments_odd_finish_and_missing_usage(serve):
    server = serve(
        sse(
            [
                openai_chunk(tool_fragment(0, id="c1", name="read_file", arguments='{"path": ')),
                openai_chunk(tool_fragment(1, id="c2", name="read_file", arguments='"a.py"')),
                openai_chunk(finish="stop"),  # some servers say stop even with calls
                OPENAI_DONE,
            ]
        )
    )
    events = await collect(provider_for(server))
    assert events[:2] == [
        ToolCallRequest("c1", "read_file", {RAW_ARGUMENTS_KEY: '{"path": '}),
        ToolCallRequest("c2", "read_file", {RAW_ARGUMENTS_KEY: '"a.py"'}),
    ]
    usage = events[2]
    assert isinstance(usage, UsageReport) and usage.input_tokens > 0  # estimated
    assert events[3] == Finish("tool_use")


@pytest.mark.parametrize(
    ("reason", "stop"),
    [("stop", "end_turn"), ("length", "max_tokens"), ("content_filter", "refusal")],
)
async def test_finish_reasons_map(serve, reason, stop):
    server = serve(sse([openai_chunk({"content": "x"}), openai_chunk(finish=reason), OPENAI_DONE]))
    events = await collect(provider_for(server))
    assert events[-1] == Finish(stop)


@pytest.mark.parametrize(
    ("reported", "passed_on"),
    [(0.00123, 0.00123), (0, 0.0), (None, None), ("0.5", None), (True, None), (-1.0, None)],
)
async def test_a_proxys_reported_cost_is_passed_on_when_it_is_an_amount(serve, reported, passed_on):
    usage = {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
    if reported is not None:
        usage["cost"] = reported  # what a LiteLLM proxy adds
    chunk = json.loads(openai_chunk(usage=(3, 1)).removeprefix("data: "))
    chunk["usage"] = usage
    stream = [*HELLO[:2], f"data: {json.dumps(chunk)}\n\n", OPENAI_DONE]
    server = serve(sse(stream))
    events = await collect(provider_for(server, "litellm_proxy/some-model"))
    [report] = [e for e in events if isinstance(e, UsageReport)]
    assert (report.input_tokens, report.output_tokens) == (3, 1)
    assert report.cost == passed_on
