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
``session_id=`` names a session to start or continue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .session import OpeningSession, Session, open_blocking
from .state import FORMAT_VERSION, HARNESS, IN_PROCESS_STORES, State

if TYPE_CHECKING:
    from ..session.turn import TurnResult

__all__ = [
    "FORMAT_VERSION",
    "HARNESS",
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


def agent(prompt: str, **options: Any) -> TurnResult:
    """One turn in a fresh session, which is then closed (and kept in the store)."""
    with agent_session(**options) as session:
        return session.run(prompt)


async def aagent(prompt: str, **options: Any) -> TurnResult:
    async with aagent_session(**options) as session:
        return await session.arun(prompt)


def agent_session(**options: Any) -> Session:
    """A Session, for ``with``; ``session_id=`` continues a stored session."""
    return open_blocking(options, _continues(options), "agent_session")


def aagent_session(**options: Any) -> OpeningSession:
    """``await`` it, or ``async with aagent_session(...) as s``."""
    return OpeningSession(options, _continues(options))


def agent_resume(state: State, **options: Any) -> Session:
    """Continue the session ``state`` names, in its store, folder, model and
    approval; ``options`` override them and add what a State never holds
    (``api_key``, ``base_url``, ``provider``, callbacks)."""
    return open_blocking(_resumed(state, options), True, "agent_resume")


def aagent_resume(state: State, **options: Any) -> OpeningSession:
    return OpeningSession(_resumed(state, options), True)


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
