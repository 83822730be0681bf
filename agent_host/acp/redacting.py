"""The ACP stdout with the process's secrets masked in what the agent answers and
notifies (redaction.py), as the LSP front end's ``AgentProtocol._send_data`` does.

The transport (wire.py) passes each newline-terminated message through
:func:`masked_line` before writing it. Requests to the client pass unchanged:
``fs/write_text_file`` carries file text that must reach the file whole, and
``terminal/create`` the command's own environment.
"""

from __future__ import annotations

import json

from ..session.redaction import SECRETS


def masked_line(data: bytes) -> bytes:
    if not SECRETS:
        return data
    try:
        message = json.loads(data)
    except ValueError:
        return data  # not one whole message: nothing the SDK writes
    if isinstance(message, dict) and "method" in message and "id" in message:
        return data
    masked = SECRETS.mask_json(message)
    if masked == message:
        return data
    return (json.dumps(masked, separators=(",", ":")) + "\n").encode("utf-8")
