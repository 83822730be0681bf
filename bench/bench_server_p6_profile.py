"""P6's diagnostics (``--explain``, or a miss): where the server's time goes in the relay."""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import orjson
from bench_server_p6 import SESSION_ID, relay_hand

# The header pygls writes before every body (server.protocol._send_data).
PYGLS_HEADER = (
    "Content-Length: {}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"
)


# The server under cProfile for one relay: the profile is written when start_io returns
# (after exit), or if the server is killed, never.
PROFILED_SERVER = r"""
import cProfile, sys
from agent_host.server.app import create_server
profile = cProfile.Profile()
profile.enable()
try:
    create_server().start_io()
finally:
    profile.disable()
    profile.dump_stats(sys.argv[1])
"""


def notify_cost(repeats: int = 3, n: int = 50_000) -> dict[str, float]:
    """CPU per text delta in this process, writer discarding the bytes (no syscall):
    the server's relay as it is, and the same notification framed directly."""
    from pygls.io_ import StdoutWriter

    from agent_host.server.app import create_server
    from agent_host.session.model import TextDelta

    class Null:
        def write(self, data: bytes) -> None:
            pass

        def flush(self) -> None:
            pass

    server = create_server()
    server.protocol.set_writer(StdoutWriter(Null()))
    deltas = [TextDelta("the model reads ") for _ in range(n)]
    writer = StdoutWriter(Null())
    header = PYGLS_HEADER.encode().replace(b"{}", b"%d")

    def relay() -> None:
        for d in deltas:
            server.relay(SESSION_ID, d)

    def direct_orjson() -> None:
        for d in deltas:
            params = {"sessionId": SESSION_ID, "kind": "text_delta", "data": {"text": d.text}}
            body = orjson.dumps({"jsonrpc": "2.0", "method": "session/event", "params": params})
            writer.write(header % len(body) + body)

    def direct_json() -> None:
        for d in deltas:
            params = {"sessionId": SESSION_ID, "kind": "text_delta", "data": {"text": d.text}}
            body = json.dumps({"jsonrpc": "2.0", "method": "session/event", "params": params})
            writer.write((PYGLS_HEADER.format(len(body)) + body).encode())

    out: dict[str, list[float]] = {}
    for _ in range(repeats):
        for name, fn in (("relay", relay), ("orjson", direct_orjson), ("json", direct_json)):
            t0 = time.perf_counter()
            fn()
            out.setdefault(name, []).append((time.perf_counter() - t0) / n * 1e6)
    return {k: statistics.median(v) for k, v in out.items()}


def relay_report(work: Path) -> str:
    import pstats

    script = work / "p6-script.json"
    server = work / "profiled_server.py"
    server.write_text(PROFILED_SERVER)
    prof = work / "relay.prof"
    options = {"store": str(work / "p6-store-profiled"), "model": f"scripted:{script}"}
    profiled = relay_hand(
        [sys.executable, str(server), str(prof)], work, "p6-profiled", options, True
    )
    stats = pstats.Stats(str(prof)).stats  # type: ignore[attr-defined]

    def cum(file_end: str, func: str) -> float:
        return sum(v[3] for k, v in stats.items() if k[0].endswith(file_end) and k[2] == func)

    def own(func: str) -> float:
        return sum(v[2] for k, v in stats.items() if k[2] == func)

    turn = cum("session/turn.py", "_call_model")
    parts = [
        ("AgentServer.relay (app.py)", cum("server/app.py", "relay")),
        ("  pygls JsonRPCProtocol.notify", cum("protocol/json_rpc.py", "notify")),
        ("    json.dumps of the notification", cum("json/__init__.py", "dumps")),
        (
            "      of which cattrs unstructure via default=",
            cum("json_rpc.py", "_serialize_message"),
        ),
        (
            "    write + flush (one write(2) per message)",
            own("<method 'write' of '_io.FileIO' objects>"),
        ),
        ("scripted provider (_turn/_play)", cum("providers/scripted.py", "_turn")),
    ]
    costs = notify_cost()
    lines = [
        f"Where the server's time goes in the relay: cProfile of one relay "
        f"({profiled.rate:,.0f} deltas/s under the profiler; it inflates call-heavy code), "
        f"share of _Turn._call_model's {turn:.2f} s:",
    ]
    for label, seconds in parts:
        lines.append(f"  {seconds / turn:6.1%}  {seconds:6.2f} s  {label}")
    lines.append(
        "CPU per delta in-process, writer discarding the bytes (no profiler, no syscall): "
        f"AgentServer.relay {costs['relay']:.1f} us; the same bytes via stdlib json.dumps "
        f"of a dict {costs['json']:.1f} us; via orjson.dumps {costs['orjson']:.1f} us"
    )
    return "\n".join(lines)
