"""What a failed model call becomes: a :class:`ModelError` subtype with a message
that says what to fix, and never the API key.

Both SDKs raise their own exception trees, and mid-stream their HTTP library's
exceptions can escape unwrapped, so failures are classified by status code, error
body and exception *type names* rather than by importing either SDK here.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import attrs

from ..errors import ModelError
from ..redaction import SECRETS

if TYPE_CHECKING:
    from .limits import Limits

KEY_PLACES = (
    "in the environment agent-host starts in (for an editor: the environment it starts "
    "`agent-host acp` or `agent-host serve` in, then restart the agent; the agent cannot read "
    "it from the editor), or pass api_key= to AgentHost"
)
"""Where a model's key can be given: the CLI, both dialects and the editors read it
only from the environment; the Python API takes it as an argument too."""


def set_key(variable: str, to: str = "") -> str:
    """``set OPENAI_API_KEY [to <to>] in the environment agent-host starts in (...)``."""
    return f"set {variable}{f' to {to}' if to else ''} {KEY_PLACES}"


def no_key(model: str, variable: str) -> str:
    """The message for a model whose key is missing, naming the variable and where
    to set it (the same words in the CLI, both dialects and ACP's -32000)."""
    return f"No API key for {model}: {set_key(variable)}"


class ModelConfigError(ModelError):
    """The provider cannot be set up: unknown model name, missing key, package,
    environment variable or script file."""


class ModelAuthError(ModelError):
    """The server rejected the credentials (401) or refused access (403)."""


class ModelNotFound(ModelError):
    """The model (or the API path) does not exist at the base URL (404)."""


class ModelRequestRejected(ModelError):
    """The server refused the request itself (400, 413, 422): retrying won't help."""


class ModelRateLimited(ModelError):
    """Still rate limited (429) after the retries."""


class ModelUnavailable(ModelError):
    """The server failed (5xx), was unreachable, or overloaded, after the retries."""


class ModelTimeout(ModelUnavailable):
    """No response (or no further response) within the timeout.

    ``bound`` names the bound that ran out when it is one of ours: ``"idle"`` (the
    model sent nothing meaningful for that long) or ``"total"`` (the whole call took
    that long); None when the SDK's own request timeout did."""

    def __init__(self, message: str, bound: str | None = None) -> None:
        super().__init__(message)
        self.bound = bound


class ModelStreamBroken(ModelError):
    """The response broke off after output had already been delivered.

    Not retried: the caller has shown those deltas, so a silent retry would
    duplicate or contradict them. Retry the whole turn instead.
    """


class ScriptExhausted(ModelError):
    """A scripted model was asked for a step past the end of its script."""


@attrs.frozen
class Endpoint:
    """Where a provider sends its calls, and what to tell the user when they fail."""

    provider: str
    """The ``provider/`` prefix: openai, litellm_proxy, ollama, anthropic."""
    model: str
    """The model name as the API sees it (without the prefix)."""
    base_url: str
    key_hint: str
    """What to do when the key is rejected, e.g. ``set OPENAI_API_KEY ... to a valid key``."""
    limits: Limits
    """How long a call may wait and how often it is retried (see limits.py)."""
    secrets: tuple[str, ...] = attrs.field(default=(), repr=False)
    """Strings scrubbed from every message (the API key)."""

    @property
    def timeout(self) -> float:
        """The idle bound: seconds the model may send nothing meaningful (the first
        token included); keep-alives and pings do not count."""
        return self.limits.timeout

    @property
    def max_retries(self) -> int:
        return self.limits.retries

    @property
    def total_timeout(self) -> float:
        """Seconds one model call may take in all, retries included."""
        return self.limits.total_timeout

    def __attrs_post_init__(self) -> None:
        # Known to the process's registry, every output masks them, not only our messages.
        SECRETS.add_all(self.secrets)
        SECRETS.add_url(self.base_url)

    @property
    def gateway(self) -> bool:
        """Whether the URL is something in front of the model's vendor (a LiteLLM
        proxy, an OpenAI-compatible server), which holds keys of its own."""
        if self.provider == "litellm_proxy":
            return True
        host = urlsplit(self.base_url).hostname or ""
        return host not in _VENDOR_HOSTS


_VENDOR_HOSTS = {"api.openai.com", "api.anthropic.com"}
# What a gateway's 401/403 says when the key that failed is its upstream's, not
# ours: LiteLLM names the upstream's exception ("OpenAIException - ...") and the
# model group; others say "upstream" or "provider".
_UPSTREAM_SIGNS = re.compile(
    r"upstream|\b[A-Z]\w*Exception\b|model[ _]group|\bprovider\b", re.IGNORECASE
)


# Shapes of API keys that may come back in a server's error text even when it is
# not our key verbatim (OpenAI echoes a masked prefix, proxies sometimes the whole key).
_KEY_SHAPES = re.compile(r"\b(sk-[A-Za-z0-9_\-*]{6,}|Bearer\s+\S+)")
_TRANSIENT_ERROR_TYPES = {"overloaded_error", "api_error", "rate_limit_error", "server_error"}
_MAX_SERVER_TEXT = 300


def scrub(text: str, endpoint: Endpoint | None = None) -> str:
    """``text`` with every secret the process knows masked (in all its forms, see
    redaction.py), and whatever looks like an API key or a bearer token."""
    return _KEY_SHAPES.sub("[redacted]", SECRETS.mask(text))


def type_names(exc: BaseException) -> set[str]:
    """Class names along the exception's MRO and its cause chain."""
    names: set[str] = set()
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        names.update(cls.__name__ for cls in type(current).__mro__)
        current = current.__cause__ or current.__context__
    return names


def status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def is_transient(exc: BaseException | None) -> bool:
    """Whether trying the same request again could succeed."""
    if exc is None:  # the stream just stopped early
        return True
    names = type_names(exc)
    if names & {"TimeoutException", "APITimeoutError", "APIConnectionError", "TransportError"}:
        return True
    status = status_of(exc)
    if status in (408, 409, 429) or (status is not None and status >= 500):
        return True
    return _error_type(getattr(exc, "body", None)) in _TRANSIENT_ERROR_TYPES


def translate(
    exc: BaseException | None,
    endpoint: Endpoint,
    *,
    midstream: bool = False,
    delivered: bool = False,
    retries: int | None = None,
) -> ModelError:
    """The ModelError for ``exc``; ``exc`` None means the stream ended early.

    ``midstream``: the request had succeeded and its response broke.
    ``delivered``: events of this call had already been handed to the caller.
    ``retries``: how many retries preceded this failure; by default the SDK's
    budget, which it spends on every retryable request failure.
    """
    if isinstance(exc, ModelError):
        return exc
    if retries is None:
        retries = 0 if midstream else endpoint.max_retries
    cls, message = _classify(
        exc, endpoint, midstream=midstream, retries=0 if delivered else retries
    )
    if delivered:
        return ModelStreamBroken(
            scrub(
                f"{endpoint.provider}/{endpoint.model}: the response broke off after output "
                f"had been streamed ({message}); it was not retried because the partial "
                "output was already delivered. Retry the turn.",
                endpoint,
            )
        )
    return cls(scrub(f"{endpoint.provider}/{endpoint.model}: {message}", endpoint))


def _classify(
    exc: BaseException | None, endpoint: Endpoint, *, midstream: bool, retries: int
) -> tuple[type[ModelError], str]:
    url = endpoint.base_url
    retried = f" after {retries} {'retry' if retries == 1 else 'retries'}" if retries else ""
    if exc is None:
        return ModelUnavailable, f"the response from {url} ended before the model finished"
    names = type_names(exc)
    if names & {"TimeoutException", "APITimeoutError"}:
        what = "no further response" if midstream else "no response"
        return ModelTimeout, (
            f"{what} from {url} within {endpoint.timeout:g} s{retried}; "
            "the server may be overloaded, or raise the timeout"
        )
    if "gaierror" in names:
        return ModelUnavailable, f"cannot resolve the host in {url}: check the base URL"
    if "ConnectionRefusedError" in names or ("ConnectError" in names and not midstream):
        return ModelUnavailable, f"cannot reach {url}{retried}: is the server running?"
    if names & {"APIConnectionError", "TransportError", "OSError"}:
        if midstream:
            return ModelUnavailable, f"the connection to {url} broke mid-response{retried}"
        return ModelUnavailable, f"cannot reach {url}{retried}: check the base URL and network"
    if "TypeError" in names and "authentication" in str(exc):
        # anthropic raises this before sending when it found no credentials at all
        return ModelConfigError, f"no API key: {endpoint.key_hint}"
    status = status_of(exc)
    detail = _server_text(exc)
    if status is None or (midstream and status < 400):
        # An error event inside a 200 stream, or something no HTTP status explains.
        error_type = _error_type(getattr(exc, "body", None))
        if error_type in _TRANSIENT_ERROR_TYPES:
            return ModelUnavailable, f"{url} reported {error_type} mid-response{detail}"
        if midstream:
            return ModelError, f"{url} reported an error mid-response{detail}"
        return ModelError, f"unexpected failure calling {url}: {type(exc).__name__}{detail}"
    return _classify_status(status, detail, endpoint, retried, exc)


def _classify_status(
    status: int, detail: str, endpoint: Endpoint, retried: str, exc: BaseException
) -> tuple[type[ModelError], str]:
    url = endpoint.base_url
    if status in (401, 403) and endpoint.gateway and _upstream_rejected(exc):
        said = f": {detail.removeprefix(' -- ')}" if detail else ""
        return ModelAuthError, (
            f"the gateway at {url} answered {status}{said} -- a key or access of the "
            "gateway's own for its upstream failed (set in the gateway's configuration), "
            "not the key agent-host sent: whoever runs the gateway must fix it"
        )
    if status == 401:
        hint = endpoint.key_hint
        return ModelAuthError, f"the API key was rejected by {url} (401){detail}; {hint}"
    if status == 403:
        return ModelAuthError, (
            f"access to model {endpoint.model!r} was refused by {url} (403){detail}; "
            "check the key's project or organisation can use this model"
        )
    if status == 404:
        return ModelNotFound, (
            f"model {endpoint.model!r} not found at {url}{detail}; check the model name "
            "(and that the base URL points at the API root)"
        )
    if status == 429:
        if getattr(exc, "code", None) == "insufficient_quota":
            return ModelRateLimited, f"the account behind the API key has no quota left{detail}"
        return ModelRateLimited, (
            f"rate limited by {url} (429){retried}{detail}; "
            "wait and retry, or lower the request rate"
        )
    if status in (408, 409) or status >= 500:
        return ModelUnavailable, (
            f"{url} failed with HTTP {status}{retried}{detail}; the service may be down, "
            "try again later"
        )
    if status == 413:
        return ModelRequestRejected, f"the request is too large for {url} (413){detail}"
    return ModelRequestRejected, f"{url} rejected the request (HTTP {status}){detail}"


def _upstream_rejected(exc: BaseException) -> bool:
    """Whether a gateway's error body says the key or access that failed is its
    upstream's (see _UPSTREAM_SIGNS)."""
    message = _error_message(getattr(exc, "body", None))
    return bool(message and _UPSTREAM_SIGNS.search(message))


def _server_text(exc: BaseException) -> str:
    """The server's own error message, short, as `` -- message`` (or "")."""
    body = getattr(exc, "body", None)
    message = _error_message(body)
    if message is None and getattr(exc, "status_code", None) is None:
        message = str(exc) or None
    if not message:
        return ""
    # Masked before the cut: a cut can leave a fragment no longer equal to the key.
    message = " ".join(scrub(message).split())
    if len(message) > _MAX_SERVER_TEXT:
        message = message[: _MAX_SERVER_TEXT - 3] + "..."
    return f" -- {message}"


def _error_message(body: Any) -> str | None:
    if isinstance(body, str):
        return body or None
    if not isinstance(body, dict):
        return None
    message = body.get("message")
    if isinstance(message, str) and message:
        return message
    inner = body.get("error")
    return _error_message(inner) if inner is not body else None


def _error_type(body: Any) -> str | None:
    if not isinstance(body, dict):
        return None
    inner = body.get("error")
    if isinstance(inner, dict) and isinstance(inner.get("type"), str):
        return inner["type"]
    kind = body.get("type")
    return kind if isinstance(kind, str) and kind != "error" else None
