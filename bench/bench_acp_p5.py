"""P5 for ACP: cold start of ``agent-host acp``, spawn to the ``initialize`` result,
beside ``agent-host serve`` (P5 proper) and a bare agent on the same official SDK
(``acp.run_agent`` with an agent that only answers initialize) -- the floor any
agent built on the SDK pays.

    python bench/bench_acp_p5.py [--spawns N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_server_common import AGENT_CMD, Row, Samples, print_section, spawn_and_initialize

ACP_CMD = [sys.executable, "-m", "agent_host", "acp"]
BARE_AGENT = """
import asyncio, acp
from acp import schema

class Bare:
    def on_connect(self, conn):
        pass
    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kw):
        return schema.InitializeResponse(protocol_version=protocol_version)

asyncio.run(acp.run_agent(Bare()))
"""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientCapabilities": {}},
}


def acp_initialize(cmd: list[str], cwd: Path) -> float:
    """Seconds from spawn to the initialize result line on stdout."""
    started = time.perf_counter()
    child = subprocess.Popen(
        cmd, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    child.stdin.flush()
    while True:
        line = child.stdout.readline()
        if not line:
            raise RuntimeError(f"{cmd} closed stdout before answering initialize")
        if json.loads(line).get("id") == 1:
            elapsed = time.perf_counter() - started
            break
    child.stdin.close()
    try:
        child.wait(10)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
    return elapsed


def bench(work: Path, spawns: int) -> list[Row]:
    bare = work / "bare_acp_agent.py"
    bare.write_text(BARE_AGENT)
    ws = work / "ws"
    ws.mkdir(exist_ok=True)
    samples = {"acp": Samples(), "serve": Samples(), "bare": Samples()}
    for it in range(1 + spawns):  # the first round warms the page cache and the pycs
        store = str(work / f"store-{it}")
        order = ["acp", "serve", "bare"]
        order = order[it % 3 :] + order[: it % 3]
        for name in order:
            if name == "acp":
                elapsed = acp_initialize([*ACP_CMD, "--store", store], ws)
            elif name == "bare":
                elapsed = acp_initialize([sys.executable, str(bare)], ws)
            else:
                child, elapsed = spawn_and_initialize(
                    AGENT_CMD, work, f"serve-{it}", {"store": store}
                )
                child.close()
            if it:
                samples[name].values.append(elapsed * 1e3)
    return [
        Row(
            "agent-host acp: spawn -> initialize result",
            samples["acp"],
            "ms",
            samples["bare"],
            "bare",
            max_ratio=1.3,
        ),
        Row("bare agent on the ACP SDK (floor)", samples["bare"], "ms"),
        Row("agent-host serve, the same runs (P5)", samples["serve"], "ms", samples["acp"], "acp"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spawns", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="acp-p5-") as tmp:
        os.environ.pop("AGENT_HOST_STORE", None)
        rows = bench(Path(tmp), args.spawns)
    print_section(
        f"P5 (ACP)  cold start to the initialize result ({args.spawns} spawns each)", rows
    )


if __name__ == "__main__":
    main()
