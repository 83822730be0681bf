"""How ``run`` prints a turn: streamed text, or JSON lines with ``--json``."""

from __future__ import annotations

import sys
from typing import Any

from ..service.text import shorten
from ..session.redaction import mask
from .output import print_json

UNKNOWN_COST = "$—"
"""A cost the server could not price (null): unknown, which $0.0000 would hide."""


def money(usd: float | None) -> str:
    return UNKNOWN_COST if usd is None else f"${usd:.4f}"


class TurnPrinter:
    """What ``run`` tells its printer; each method does nothing unless overridden."""

    def event(self, params: dict[str, Any]) -> None: ...
    def permission(self, params: dict[str, Any], decision: str) -> None: ...
    def result(self, result: dict[str, Any]) -> None: ...
    def failed(self, session_id: str | None, error: dict[str, Any]) -> None: ...
    def pause(self) -> None: ...


class TextPrinter(TurnPrinter):
    """The answer as it streams, tool activity as lines, a summary on stderr."""

    def __init__(self) -> None:
        self.mid_line = False

    def _write(self, text: str) -> None:
        sys.stdout.write(mask(text))
        sys.stdout.flush()

    def _line(self, text: str) -> None:
        self.pause()
        self._write(text + "\n")

    def pause(self) -> None:
        if self.mid_line:
            self._write("\n")
            self.mid_line = False

    def event(self, params: dict[str, Any]) -> None:
        kind = params.get("kind")
        data = params.get("data") or {}
        if kind == "text_delta":
            text = data.get("text", "")
            if text:
                self._write(text)
                self.mid_line = not text.endswith("\n")
        elif kind == "assistant_message":
            self.pause()
        elif kind == "tool_call":
            shown = ", ".join(
                f"{k}={shorten(str(v), 40)!r}" for k, v in (data.get("arguments") or {}).items()
            )
            self._line(f"  tool {data.get('name')}({shown})")
        elif kind == "tool_result" and data.get("isError"):
            self._line(f"  ! {shorten(data.get('output', ''), 200)}")
        elif kind == "file_snapshot":
            verb = "changed"
            if data.get("before") is None:
                verb = "created"
            elif data.get("after") is None:
                verb = "deleted"
            self._line(f"  {verb} {data.get('path')}")
        elif kind == "compaction_progress" and data.get("stage") == "done":
            self._line(f"  [compacted the conversation: {data.get('message', '')}]")
        elif kind == "model_wait":
            self.pause()
            print(f"agent-host: {data.get('message', '')}", file=sys.stderr, flush=True)
        elif kind == "mcp_server" and data.get("state") in ("failed", "restarted"):
            # On stderr, like the summary: the answer on stdout stays the answer.
            self.pause()
            print(f"agent-host: {data.get('message', '')}", file=sys.stderr)

    def result(self, result: dict[str, Any]) -> None:
        self.pause()
        usage = result.get("usage") or {}
        print(
            f"[{result['stopReason']}] session {result['sessionId']}, checkpoint "
            f"{result['checkpoint']}, {usage.get('inputTokens', 0)} in / "
            f"{usage.get('outputTokens', 0)} out tokens, {money(result.get('cost'))}",
            file=sys.stderr,
            flush=True,
        )

    def failed(self, session_id: str | None, error: dict[str, Any]) -> None:
        self.pause()


class JsonPrinter(TurnPrinter):
    """One JSON object per line: each session/event's params as sent, then a
    ``{"kind": "result"}`` (or ``"error"``) line."""

    def event(self, params: dict[str, Any]) -> None:
        print_json(params)

    def permission(self, params: dict[str, Any], decision: str) -> None:
        print_json(
            {
                "sessionId": params.get("sessionId"),
                "kind": "permission",
                "data": {**params, "outcome": decision},
            }
        )

    def result(self, result: dict[str, Any]) -> None:
        print_json({"sessionId": result.get("sessionId"), "kind": "result", "data": result})

    def failed(self, session_id: str | None, error: dict[str, Any]) -> None:
        print_json({"sessionId": session_id, "kind": "error", "data": error})
