"""Record a real conversation with ``agent-host serve``: the examples in protocol.md.

    python docs/protocol_examples.py [--root DIR] [--json]

Spawns the server, drives every method (a turn with an edit that asks permission,
list, resume, history, checkpoints, a turn's changes, a restore's preview, the
restore and its undo, reverting a turn's file, compaction, both kinds
of cancellation, fork, close, delete) and provokes each reachable error, speaking raw JSON-RPC
with LSP framing so the transcript is byte-for-byte what crossed the pipe. Prints
it section by section (``--json``: one JSON object per line, which
tests/rpc/test_schema.py validates against ``agent-host schema``).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from agent_host.session import open_store
from agent_host.session.events import UserPrompt

SCRIPT = {
    "steps": [
        # turn 1: an edit (asks permission under approval "ask"), then the answer
        {
            "text": "I'll make greet() polite.",
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {
                        "path": "greet.py",
                        "old_string": "Hi",
                        "new_string": "Hello",
                    },
                }
            ],
            "usage": {"input_tokens": 412, "output_tokens": 31},
            "delay_ms": 150,  # slow enough for the conflict example to get in
        },
        {
            "text": "Done: greet() says Hello now.",
            "usage": {"input_tokens": 530, "output_tokens": 9},
        },
        # turn 2: slow, cancelled with session/cancel
        {"text": "Let me think about this for a while first.", "delay_ms": 400},
        # turn 3: slow, cancelled with $/cancelRequest
        {"text": "Thinking again, slowly and carefully.", "delay_ms": 400},
        # turn 4 would need a step 4: the script is exhausted (a model error)
    ]
}


class Wire:
    """A JSON-RPC peer over the child's stdin/stdout; records every message."""

    def __init__(self) -> None:
        self.log: list[dict[str, Any]] = []
        self.ids = itertools.count(1)
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.process: asyncio.subprocess.Process | None = None
        self.section = ""

    async def start(self, root: Path) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agent_host",
            "serve",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            cwd=root,
        )
        asyncio.create_task(self._read())

    def mark(self, section: str) -> None:
        self.section = section

    def _write(self, message: dict[str, Any]) -> None:
        self.log.append({"section": self.section, "from": "client", "message": message})
        body = json.dumps(message).encode()
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def send(self, method: str, params: Any) -> tuple[int, asyncio.Future[dict[str, Any]]]:
        msg_id = next(self.ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[msg_id] = future
        self._write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id, future

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        return await self.send(method, params)[1]

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        stream = self.process.stdout
        while True:
            length = 0
            while True:
                line = await stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            message = json.loads(await stream.readexactly(length))
            self.log.append({"section": self.section, "from": "server", "message": message})
            if "method" in message and "id" in message:
                self._write(
                    {"jsonrpc": "2.0", "id": message["id"], "result": self._answer(message)}
                )
            elif "id" in message and message["id"] in self.pending:
                self.pending.pop(message["id"]).set_result(message)

    def _answer(self, request: dict[str, Any]) -> Any:
        if request["method"] == "session/requestPermission":
            return {"outcome": "allow_once"}
        return None  # window/workDoneProgress/create


async def record(root: Path) -> list[dict[str, Any]]:
    project = root / "project"
    project.mkdir(parents=True)
    (project / "greet.py").write_text('def greet(name):\n    return f"Hi, {name}!"\n')
    script = root / "script.json"
    script.write_text(json.dumps(SCRIPT, indent=1))
    wire = Wire()
    await wire.start(root)

    wire.mark("initialize")
    await wire.request(
        "initialize",
        {
            "processId": None,
            "clientInfo": {"name": "example-client", "version": "1.0"},
            "rootUri": project.as_uri(),
            "capabilities": {"window": {"workDoneProgress": True}},
            "initializationOptions": {
                "store": str(root / "store"),
                "model": f"scripted:{script}",
                "approval": "ask",
            },
        },
    )
    wire.notify("initialized", {})

    wire.mark("session/new")
    new = await wire.request("session/new", {"title": "Make greet polite"})
    sid = new["result"]["sessionId"]

    wire.mark("session/send")
    sent = await wire.request(
        "session/send",
        {
            "sessionId": sid,
            "prompt": "Make greet() say Hello instead of Hi",
            "context": [{"uri": (project / "greet.py").as_uri(), "text": 'return f"Hi, {name}!"'}],
        },
    )
    checkpoint = sent["result"]["checkpoint"]

    wire.mark("session/list")
    await wire.request("session/list", {"limit": 10, "workspace": project.as_uri()})
    wire.mark("session/resume")
    await wire.request("session/resume", {"sessionId": sid})
    wire.mark("session/history")
    await wire.request("session/history", {"sessionId": sid, "limit": 4})
    wire.mark("session/checkpoints")
    await wire.request("session/checkpoints", {"sessionId": sid})
    wire.mark("session/changes")
    await wire.request("session/changes", {"sessionId": sid, "seq": checkpoint})
    wire.mark("session/restore dryRun")
    (project / "greet.py").write_text(
        'def greet(name):\n    return f"Hello, {name}!"  # polite now\n'
    )  # the user's own edit since the agent's: a conflict
    await wire.request("session/restore", {"sessionId": sid, "seq": checkpoint, "dryRun": True})
    (project / "greet.py").write_text('def greet(name):\n    return f"Hello, {name}!"\n')
    wire.mark("session/restore")
    await wire.request("session/restore", {"sessionId": sid, "seq": checkpoint})
    wire.mark("session/undoRestore")
    await wire.request("session/undoRestore", {"sessionId": sid})
    wire.mark("session/revertFiles")
    await wire.request(
        "session/revertFiles", {"sessionId": sid, "seq": checkpoint, "paths": ["greet.py"]}
    )
    await wire.request("session/undoRestore", {"sessionId": sid})

    wire.mark("session/cancel")
    _, slow = wire.send("session/send", {"sessionId": sid, "prompt": "Now refactor everything"})
    await _first_delta(wire)
    wire.mark("TurnInProgress")
    await wire.request("session/send", {"sessionId": sid, "prompt": "And this too"})
    wire.mark("session/cancel")
    wire.notify("session/cancel", {"sessionId": sid})
    await slow

    wire.mark("$/cancelRequest")
    slow_id, slow = wire.send("session/send", {"sessionId": sid, "prompt": "Try once more"})
    await _first_delta(wire)
    wire.notify("$/cancelRequest", {"id": slow_id})
    await slow

    wire.mark("session/compact")  # after three prompts: the first two are summarised
    await wire.request("session/compact", {"sessionId": sid, "instructions": "Keep file names."})

    wire.mark("ModelError")
    await wire.request("session/send", {"sessionId": sid, "prompt": "One more"})
    wire.mark("InvalidParams")
    await wire.request("session/send", {"sessionId": 42, "prompt": ""})
    wire.mark("InvalidSessionId")
    await wire.request("session/history", {"sessionId": "bad\x00id"})
    wire.mark("CheckpointNotFound")
    await wire.request("session/restore", {"sessionId": sid, "seq": 999})
    wire.mark("NothingToUndo")
    await wire.request("session/undoRestore", {"sessionId": sid})
    wire.mark("CheckpointConflict")  # another writer appends while a turn runs
    other = (await wire.request("session/new", {}))["result"]["sessionId"]
    _, racing = wire.send("session/send", {"sessionId": other, "prompt": "Be polite"})
    await _first_delta(wire)
    outside = open_store(root / "store")
    await outside.append(other, [UserPrompt(text="written by another process")])
    await outside.close()
    await racing

    wire.mark("StoreUnavailable")  # a log damaged before its last event
    damaged = open_store(root / "store")
    await damaged.append("damaged", [UserPrompt(text="one")])
    await damaged.append("damaged", [UserPrompt(text="two")])
    await damaged.close()
    log_file = next((root / "store" / "sessions").glob("damaged*"))
    log_file.write_bytes(log_file.read_bytes().replace(b'"one"', b'"0ne"', 1))
    await wire.request("session/history", {"sessionId": "damaged"})

    wire.mark("MethodNotFound")
    await wire.request("session/rename", {"sessionId": sid, "title": "greet"})
    wire.mark("session/fork")  # the conversation up to the second prompt, in a new session
    checkpoints = (await wire.request("session/checkpoints", {"sessionId": sid}))["result"]
    second = checkpoints["checkpoints"][1]["seq"]
    await wire.request("session/fork", {"sessionId": sid, "seq": second})
    wire.mark("session/close")
    await wire.request("session/close", {"sessionId": sid})
    wire.mark("session/delete")
    await wire.request("session/delete", {"sessionId": sid})
    wire.mark("SessionNotFound")
    await wire.request("session/delete", {"sessionId": sid})

    wire.mark("shutdown")
    await wire.request("shutdown", None)
    wire.notify("exit", None)
    assert wire.process is not None
    await asyncio.wait_for(wire.process.wait(), 10)
    return wire.log


async def _first_delta(wire: Wire) -> None:
    start = len(wire.log)
    while not any(
        e["message"].get("method") == "session/event"
        and e["message"]["params"]["kind"] == "text_delta"
        for e in wire.log[start:]
    ):
        await asyncio.sleep(0.02)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="work folder (default: a temporary one)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    args = parser.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="agent-host-example-"))
    if args.root and root.exists():
        shutil.rmtree(root)
    try:
        log = asyncio.run(record(root))
    finally:
        if not args.root:
            shutil.rmtree(root, ignore_errors=True)
    section = None
    for entry in log:
        if args.json:
            print(json.dumps(entry))
            continue
        if entry["section"] != section:
            section = entry["section"]
            print(f"\n## {section}\n")
        arrow = "-->" if entry["from"] == "client" else "<--"
        print(arrow, json.dumps(entry["message"], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
