"""A client that writes requests without reading a byte of the answers, then exits.

``python tests/deaf_client.py DIALECT MODE STORE MODEL SECONDS`` starts ``agent-host
DIALECT`` (serve or acp) on pipes, prints its pid, initializes it, starts a turn
(the model's long answer streams as many small notifications) and writes
requests of 64 KiB each from a thread for SECONDS -- the agent's stdout fills, and
so may its stdin -- then exits at once (``os._exit``), its ends of both pipes
closed by the kernel. The test then waits for the agent to exit by itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

PAD = "x" * (1 << 16)


def lsp_frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def acp_line(message: dict) -> bytes:
    return json.dumps(message).encode() + b"\n"


def main(dialect: str, mode: str, store: str, model: str, seconds: float) -> None:
    """``mode`` "turn": a turn streams while the requests flood in; "list": 30
    sessions are made first, so each session/list answer is a few KiB."""
    command = [sys.executable, "-m", "agent_host", dialect]
    if dialect == "acp":
        command += ["--store", store, "--model", model]
    agent = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    print(agent.pid, flush=True)
    assert agent.stdin is not None and agent.stdout is not None
    ids = iter(range(-1, -1000, -1))

    def send(method: str, params: dict) -> int:
        msg_id = next(ids)
        agent.stdin.write(
            encode({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        )
        agent.stdin.flush()
        return msg_id

    if dialect == "serve":
        encode = lsp_frame
        options = {"store": store, "model": model, "approval": "auto"}
        send("initialize", {"capabilities": {}, "rootUri": None, "initializationOptions": options})
        agent.stdin.write(encode({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        for _ in range(30 if mode == "list" else 0):
            send("session/new", {})
        if mode == "turn":
            send("session/send", {"prompt": "talk"})
        request = {"jsonrpc": "2.0", "method": "session/list", "params": {"pad": PAD}}
        agent.stdout.read(1)  # it is up and answering; nothing more is read
    else:
        encode = acp_line
        send("initialize", {"protocolVersion": 1})
        for _ in range(30 if mode == "list" else 1):
            msg_id = send("session/new", {"cwd": os.getcwd(), "mcpServers": []})
            while (answer := json.loads(agent.stdout.readline())).get("id") != msg_id:
                pass
        if mode == "turn":
            prompt = [{"type": "text", "text": "talk"}]
            send("session/prompt", {"sessionId": answer["result"]["sessionId"], "prompt": prompt})
        request = {"jsonrpc": "2.0", "method": "session/list", "params": {"_meta": {"pad": PAD}}}

    def write_forever() -> None:
        for n in range(1, 1 << 30):
            agent.stdin.write(encode({**request, "id": n}))
            agent.stdin.flush()

    threading.Thread(target=write_forever, daemon=True).start()
    time.sleep(seconds)
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
