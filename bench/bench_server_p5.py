"""P5: cold start, spawn to the initialize result, against a bare pygls server; on a
miss, ``-X importtime`` of both."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from bench_server_common import (
    AGENT_CMD,
    Child,
    Row,
    Samples,
    initialize_params,
    spawn_and_initialize,
)

BARE_SERVER = (
    'from pygls.lsp.server import LanguageServer\nLanguageServer("bare", "0").start_io()\n'
)


def bench_cold_start(work: Path, spawns: int) -> tuple[list[Row], dict[str, Samples]]:
    bare_script = work / "bare_server.py"
    bare_script.write_text(BARE_SERVER)
    bare_cmd = [sys.executable, str(bare_script)]
    contenders = {
        "agent": (AGENT_CMD, lambda i: {"store": str(work / f"p5-store-{i}")}),
        "bare": (bare_cmd, lambda i: None),
    }
    times = {k: Samples() for k in contenders}
    cpu = {k: Samples() for k in contenders}
    rss = {k: Samples() for k in contenders}
    names = list(contenders)
    for it in range(1 + spawns):  # the first round warms the page cache and the pycs
        k = it % len(names)
        for name in names[k:] + names[:k]:
            cmd, options = contenders[name]
            child, elapsed = spawn_and_initialize(cmd, work, f"p5-{name}", options(it))
            try:
                used = child.cpu_ms()
                time.sleep(0.2)  # idle: the initialized notification handled, nothing else
                resident, _ = child.rss_kib()
            finally:
                child.close()
            if it:
                times[name].values.append(elapsed * 1e3)
                cpu[name].values.append(used)
                rss[name].values.append(resident / 1024)
    fastest = {k: min(v.values) for k, v in times.items()}
    rows = [
        Row(
            "agent-host serve: spawn -> initialize result",
            times["agent"],
            "ms",
            times["bare"],
            "bare",
            max_ratio=1.3,
            note=f"fastest spawns: {fastest['agent']:.0f} ms against {fastest['bare']:.0f} ms, "
            f"{fastest['agent'] / fastest['bare']:.2f}x",
        ),
        Row("bare pygls LanguageServer (floor)", times["bare"], "ms"),
        Row(
            "  CPU time to the result, agent-host (extra)",
            cpu["agent"],
            "ms",
            cpu["bare"],
            "bare",
            note="user+sys of the child from /proc/<pid>/stat (10 ms ticks): "
            "less moved by other tenants than wall time",
        ),
        Row("  CPU time to the result, bare (extra)", cpu["bare"], "ms"),
    ]
    return rows, rss


def importtime(
    commands: dict[str, list[str]], work: Path, runs: int = 3
) -> dict[str, dict[str, tuple[float, float, int]]]:
    """``-X importtime`` of spawn + initialize + shutdown, the commands interleaved:
    per command, module -> (self ms, cumulative ms, depth), each the least of ``runs``
    runs (the run least disturbed by other work on the machine)."""
    seen: dict[str, dict[str, list[tuple[int, int, int]]]] = {k: {} for k in commands}
    for i in range(runs):
        for key, cmd in commands.items():
            child = Child([cmd[0], "-X", "importtime", *cmd[1:]], work, f"importtime-{key}-{i}")
            child.result(
                child.request(
                    "initialize",
                    initialize_params(work / "ws", {"store": str(work / "importtime-store")}),
                )
            )
            child.close()
            for line in child.err_path.read_text().splitlines():
                if not line.startswith("import time:") or "[us]" in line:
                    continue
                own, cum, name = line[len("import time:") :].split("|")
                depth = (len(name) - len(name.lstrip(" "))) // 2
                seen[key].setdefault(name.strip(), []).append((int(own), int(cum), depth))
    return {
        key: {
            name: (min(v[0] for v in vals) / 1e3, min(v[1] for v in vals) / 1e3, vals[0][2])
            for name, vals in modules.items()
        }
        for key, modules in seen.items()
    }


def importtime_report(work: Path, bare_cmd: list[str]) -> str:
    found = importtime({"agent": AGENT_CMD, "bare": bare_cmd}, work)
    agent, bare = found["agent"], found["bare"]
    lines = [
        "python -X importtime -m agent_host serve (spawn, initialize, shutdown; "
        "least of 3 runs, interleaved with the bare server's):"
    ]
    lines.append(f"  {'cumulative ms':>13} {'self ms':>8}  module (indented under its importer)")
    # The tree's heaviest branches: every module of >= 10 ms cumulative. importtime lists a
    # module after the ones it imports; reversed, each importer comes before its imports.
    for name in reversed(list(agent)):
        own, cum, depth = agent[name]
        if cum >= 10 and depth <= 4:
            lines.append(f"  {cum:>13.1f} {own:>8.1f}  {'  ' * depth}{name}")
    only: dict[str, float] = {}
    for name, (own, _, _) in agent.items():
        if name not in bare:
            top = (
                name.split(".")[0]
                if not name.startswith("agent_host")
                else ".".join(name.split(".")[:3])
            )
            only[top] = only.get(top, 0.0) + own
    total_only = sum(only.values())
    total_agent = sum(v[0] for v in agent.values())
    total_bare = sum(v[0] for v in bare.values())
    lines.append(
        f"self time of all imports: agent-host {total_agent:.0f} ms, bare pygls "
        f"{total_bare:.0f} ms; modules only agent-host imports: {total_only:.0f} ms, by package:"
    )
    for top, ms in sorted(only.items(), key=lambda kv: -kv[1])[:20]:
        if ms >= 2:
            lines.append(f"  {ms:>8.1f} ms  {top}")
    shared = sorted(((n, v[0]) for n, v in bare.items()), key=lambda kv: -kv[1])[:3]
    lines.append(
        "heaviest imports the bare server shares: "
        + ", ".join(f"{n} {ms:.0f} ms self" for n, ms in shared)
    )
    return "\n".join(lines)
