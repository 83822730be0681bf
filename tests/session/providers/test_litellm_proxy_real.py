"""The real LiteLLM proxy in front of a loopback upstream that answers 401 (its key
revoked): agent-host reports the proxy's own message, as the gateway's, and does
not blame the key it sent the proxy.

The proxy is the pinned release, installed once into a private venv
(litellm_install.py); skipped when it cannot be installed, failed on CI.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_host.session.providers import ModelAuthError, open_provider

from .conftest import FAKE_KEY
from .fakes import FakeServer, json_response
from .litellm_install import litellm_executable
from .test_openai_compat import assert_no_key, collect_until_error

# The first run installs the proxy (about 1.5 minutes, at most litellm_install's 900 s).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

UPSTREAM_KEY = "sk-upstream-0123456789abcdefREVOKED"
REVOKED = {
    "error": {
        "message": "upstream key revoked",
        "type": "invalid_request_error",
        "code": "invalid_api_key",
    }
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[str]:
    """A LiteLLM proxy serving model group ``coder`` from an upstream whose key is
    revoked; FAKE_KEY, the key agent-host sends, is its master key (a good key)."""
    litellm = litellm_executable()
    upstream = FakeServer([json_response(401, REVOKED) for _ in range(8)]).start()
    config = tmp_path / "litellm.yaml"
    config.write_text(
        "model_list:\n"
        "  - model_name: coder\n"
        "    litellm_params:\n"
        "      model: openai/gpt-4.1-mini\n"
        f"      api_base: {upstream.url}/v1\n"
        f"      api_key: {UPSTREAM_KEY}\n"
        "litellm_settings:\n"
        "  num_retries: 0\n"
        "general_settings:\n"  # the proxy refuses to start without one
        f"  master_key: {FAKE_KEY}\n"
    )
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    log = (tmp_path / "proxy.log").open("w")
    process = subprocess.Popen(
        [litellm, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health/liveliness", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail(f"the proxy did not start:\n{(tmp_path / 'proxy.log').read_text()}")
                time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        upstream.stop()


async def test_the_real_proxys_upstream_401_is_the_gateways_not_our_keys(proxy):
    provider = open_provider("litellm_proxy/coder", base_url=proxy, api_key=FAKE_KEY, max_retries=0)
    _, err = await collect_until_error(provider)
    assert isinstance(err, ModelAuthError)
    text = str(err)
    # The pinned release's body is test_gateway_errors' LITELLM_1_110_UPSTREAM_REVOKED.
    assert f"the gateway at {proxy} answered 401: litellm.AuthenticationError" in text, text
    assert "OpenAIException - upstream key revoked" in text, text
    assert "model group 'coder' failed" in text, text
    assert "not the key agent-host sent" in text, text
    assert "LITELLM_PROXY_API_KEY" not in text and "was rejected" not in text, text
    assert UPSTREAM_KEY not in text
    assert_no_key(err)
