"""The protocol-neutral session service both front ends (LSP, ACP) sit on, and the
client port each of them implements."""

from .port import ClientPort, Update
from .sessions import ContextItem, Resumed, SendOutcome, SessionPage, SessionService

__all__ = [
    "ClientPort",
    "ContextItem",
    "Resumed",
    "SendOutcome",
    "SessionPage",
    "SessionService",
    "Update",
]
