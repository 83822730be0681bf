"""LiteLLM's harness session API on agent-host: one-turn and multi-turn facades.

::

    r = agent("Fix the failing test.", model="openai/gpt-4.1-mini", workdir=".")

    with agent_session(model="openai/gpt-4.1-mini", workdir=".") as s:
        s.run("Install dev deps.")
        r = s.run("Fix the first failure.")
        print(s.cost)              # every turn's, turns before a resume included
        state = s.detach()         # or s.stop(); s.close() ends it for good

    s = await aagent_resume(State.loads(state.dumps()), api_key=...)

Options are AgentHost's constructor keywords and hold for every turn;
``session_id=`` names a session to start or continue. LiteLLM's call shape is
taken too: ``agent_session("agent-host", sandbox=None, model=...)`` (a harness
first: agent-host runs only its own; ``sandbox=``: see ``check_sandbox``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .session import FROM_STATE, OpeningSession, Session, open_blocking
from .shape import NO_SANDBOX, check_harness, check_sandbox
from .state import FORMAT_VERSION, HARNESS, IN_PROCESS_STORES, State

if TYPE_CHECKING:
    from ..session.turn import TurnResult

__all__ = [
    "FORMAT_VERSION",
    "HARNESS",
    "NO_SANDBOX",
    "OpeningSession",
    "Session",
    "State",
    "aagent",
    "aagent_resume",
    "aagent_session",
    "agent",
    "agent_resume",
    "agent_session",
]


def agent(first: Any, prompt: str | None = None, /, **options: Any) -> TurnResult:
    """One turn in a fresh session, which is then closed (and kept in the store):
    ``agent(prompt, ...)``, or LiteLLM's ``agent(harness, prompt, sandbox=..., ...)``."""
    harness, prompt = (None, first) if prompt is None else (first, prompt)
    with agent_session(harness, **options) as session:
        return session.run(prompt)


async def aagent(first: Any, prompt: str | None = None, /, **options: Any) -> TurnResult:
    harness, prompt = (None, first) if prompt is None else (first, prompt)
    async with aagent_session(harness, **options) as session:
        return await session.arun(prompt)


def agent_session(harness: Any = None, /, *, sandbox: Any = None, **options: Any) -> Session:
    """A Session, for ``with``; ``session_id=`` continues a stored session.
    ``harness``: None or agent-host's own (CapabilityUnsupported for another);
    ``sandbox``: the policy commands run under: None (workspace-write), a mode's
    name, its JSON form or a SandboxPolicy (CapabilityUnsupported for a sandbox
    object to run in)."""
    options = _shaped(harness, sandbox, options)
    return open_blocking(options, _continues(options), "agent_session")


def aagent_session(
    harness: Any = None, /, *, sandbox: Any = None, **options: Any
) -> OpeningSession:
    """``await`` it, or ``async with aagent_session(...) as s``."""
    options = _shaped(harness, sandbox, options)
    return OpeningSession(options, _continues(options))


def agent_resume(state: State, *, sandbox: Any = None, **options: Any) -> Session:
    """Continue the session ``state`` names, in its store, folder, model and
    approval; ``options`` override them and add what a State never holds
    (``api_key``, ``base_url``, ``provider``, callbacks). StateIncompatible when
    that session is no longer in the store (deleted)."""
    options = _shaped(None, sandbox, options)
    return open_blocking(_resumed(state, options), FROM_STATE, "agent_resume")


def aagent_resume(state: State, *, sandbox: Any = None, **options: Any) -> OpeningSession:
    options = _shaped(None, sandbox, options)
    return OpeningSession(_resumed(state, options), FROM_STATE)


def _shaped(harness: Any, sandbox: Any, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with the sandbox LiteLLM's shape named (checked first)."""
    check_harness(harness)
    policy = check_sandbox(sandbox)
    return options if policy is None else {**options, "sandbox": policy}


def _continues(options: dict[str, Any]) -> bool:
    # A named session is resumed, so its cost and history are loaded (and a restore
    # a crash interrupted is finished); a host without stored sessions has none.
    return "session_id" in options and options.get("sessions", True) is not False


def _resumed(state: State, options: dict[str, Any]) -> dict[str, Any]:
    from ..session.errors import CapabilityUnsupported

    if not isinstance(state, State):
        raise TypeError(f"agent_resume takes a State (State.loads(raw)), not {type(state)}")
    if "session_id" in options:
        raise TypeError(
            "agent_resume continues the State's session; "
            "use agent_session(session_id=...) for another one"
        )
    merged = {
        "store": state.store,
        "workdir": state.workdir,
        "model": state.model,
        "approval": state.approval,
        **options,
        "session_id": state.session_id,
    }
    if merged["store"] in IN_PROCESS_STORES:
        raise CapabilityUnsupported(
            f"this State's store is {merged['store']}, which lives only in the process "
            "that made it; pass store=<that store object> to resume there, or use a file "
            "or sqlite file store to resume anywhere"
        )
    return merged
