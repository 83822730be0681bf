"""A gateway's 401/403 (a LiteLLM proxy, an OpenAI-compatible server at a base
URL), through the real ``openai`` SDK against a loopback server: the gateway's
own message is kept, and the key we sent is blamed only when the body does not
say the failing key is the gateway's upstream one."""

from __future__ import annotations

import pytest

from agent_host.session.providers import ModelAuthError, ModelConfigError, open_provider

from .conftest import FAKE_KEY
from .fakes import json_response
from .test_openai_compat import assert_no_key, collect_until_error

UPSTREAM_KEY = "sk-upstream-0123456789abcdefREVOKED"
LITELLM_UPSTREAM_REVOKED = {
    "error": {
        # LiteLLM proxy's shape for a failure of the upstream call (its "auth_error"),
        # here with the upstream's key echoed, which must not reach the user either
        "message": "litellm.AuthenticationError: AuthenticationError: OpenAIException - "
        f"upstream key revoked: {UPSTREAM_KEY}. Received Model Group=coder\n"
        "Available Model Group Fallbacks=None",
        "type": "auth_error",
        "param": "None",
        "code": "401",
    }
}
LITELLM_1_110_UPSTREAM_REVOKED = {
    "error": {
        # what litellm 1.110.2's proxy answered, seen in front of a loopback upstream
        # (1.108.7's too: test_litellm_proxy_real.py's pin)
        "message": "litellm.AuthenticationError: AuthenticationError: OpenAIException - "
        "upstream key revoked\n\nLiteLLM: model group 'coder' failed with the error above. "
        "No fallback was attempted.",
        "type": "authentication_error",
        "param": None,
        "code": "401",
    }
}
LITELLM_1_106_UPSTREAM_REVOKED = {
    "error": {
        # what litellm 1.106.12's proxy answered there: no "AuthenticationError" in it
        "message": "litellm.BadRequestError: OpenAIException - upstream key revoked\n\n"
        "LiteLLM: model group 'coder' failed with the error above. No fallback was attempted.",
        "type": "invalid_request_error",
        "param": None,
        "code": "401",
    }
}
PLAIN_INVALID_KEY = {
    "error": {"message": "invalid api key", "type": "auth_error", "param": "None", "code": "401"}
}


def proxy_for(server, **kwargs):
    kwargs.setdefault("api_key", FAKE_KEY)
    return open_provider("litellm_proxy/coder", base_url=server.url, max_retries=0, **kwargs)


@pytest.mark.parametrize(
    "body",
    [LITELLM_UPSTREAM_REVOKED, LITELLM_1_110_UPSTREAM_REVOKED, LITELLM_1_106_UPSTREAM_REVOKED],
)
async def test_litellm_upstream_401_keeps_its_message_and_blames_no_key_of_ours(serve, body):
    server = serve(json_response(401, body))
    _, err = await collect_until_error(proxy_for(server))
    assert isinstance(err, ModelAuthError)
    text = str(err)
    error_class = body["error"]["message"].split(":", 1)[0]  # litellm.AuthenticationError
    assert f"the gateway at {server.url} answered 401: {error_class}" in text, text
    assert "OpenAIException - upstream key revoked" in text, text
    assert "coder" in text, text
    assert "not the key agent-host sent" in text, text
    assert "LITELLM_PROXY_API_KEY" not in text and "was rejected" not in text, text
    assert UPSTREAM_KEY not in text
    assert_no_key(err)
    assert len(server.received) == 1


# The proxy's own refusals of the key we sent (litellm/proxy/auth's wording).
OUR_KEY_REFUSED = [
    "invalid api key",
    "Authentication Error, Invalid proxy server token passed. key=88dc28d0f030c55e, "
    "not found in db. Create key via `/key/generate` call.",
    "key not allowed to access model. This key can only access models=['gpt']. "
    "Tried to access coder",
]


@pytest.mark.parametrize("message", OUR_KEY_REFUSED)
async def test_litellm_401_for_our_key_blames_it_and_keeps_the_message(serve, message):
    body = {"error": {**PLAIN_INVALID_KEY["error"], "message": message}}
    server = serve(json_response(401, body))
    _, err = await collect_until_error(proxy_for(server))
    assert isinstance(err, ModelAuthError)
    text = str(err)
    assert f"the API key was rejected by {server.url} (401) -- {message}" in text, text
    assert "the gateway at" not in text, text
    assert "set LITELLM_PROXY_API_KEY to a key the proxy accepts" in text, text
    assert "in the environment agent-host starts in" in text, text
    assert_no_key(err)


async def test_an_openai_compatible_server_saying_upstream_in_a_403(serve):
    body = {"error": {"message": "upstream provider refused access to model", "code": 403}}
    server = serve(json_response(403, body))
    provider = open_provider(
        "openai/gpt-4.1-mini", base_url=server.url + "/v1", api_key=FAKE_KEY, max_retries=0
    )
    _, err = await collect_until_error(provider)
    assert isinstance(err, ModelAuthError)
    text = str(err)
    assert f"the gateway at {server.url}/v1 answered 403: upstream provider" in text, text
    assert "upstream provider refused access to model" in text, text
    assert "OPENAI_API_KEY" not in text, text


async def test_an_openai_compatible_server_plain_401_names_openai_api_key(serve):
    server = serve(json_response(401, PLAIN_INVALID_KEY))
    provider = open_provider(
        "openai/gpt-4.1-mini", base_url=server.url + "/v1", api_key=FAKE_KEY, max_retries=0
    )
    _, err = await collect_until_error(provider)
    text = str(err)
    assert "the API key was rejected" in text and "-- invalid api key" in text, text
    assert "set OPENAI_API_KEY to a key valid for this base URL" in text, text


def test_a_missing_openai_key_names_the_variable_and_where_to_set_it():
    try:
        open_provider("openai/gpt-4.1-mini")
    except ModelConfigError as exc:
        text = str(exc)
    else:
        raise AssertionError("no ModelConfigError without OPENAI_API_KEY")
    assert text.startswith(
        "No API key for openai/gpt-4.1-mini: set OPENAI_API_KEY in the environment "
        "agent-host starts in"
    ), text
    assert "pass api_key= to AgentHost" in text, text
