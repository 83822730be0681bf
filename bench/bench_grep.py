"""grep's matching on a 10,000-file tree: Python ``re`` line by line (grep before RE2)
beside RE2 over each file's whole text (grep now) and RE2 line by line; ripgrep too
when ``rg`` is on PATH. Also the grep tool end to end on the tree, and the time
``(a+)+$`` takes on a 31-character line in each engine.

    python bench/bench_grep.py [--files N] [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import shutil
import subprocess
import tempfile
import time
from functools import partial
from pathlib import Path

from agent_host.session.tools import ToolContext, run_tool
from agent_host.session.tools.files import split_lines
from agent_host.session.tools.regex import Re2Pattern, compile_pattern
from agent_host.session.workspace import DiskWorkspace

PATTERNS = [r"TODO", r"os\.\w+", r"^def \w+\(", r"(?i)error: \d+", r"zzz_no_such_thing"]
WORDS = "def class return import os path error value self data TODO for in if else".split()


def make_tree(root: Path, files: int) -> None:
    rng = random.Random(7)
    for i in range(files):
        lines = []
        for _ in range(rng.randint(20, 200)):
            words = rng.choices(WORDS, k=rng.randint(2, 12))
            lines.append(" " * rng.choice([0, 4, 8]) + " ".join(words))
            if rng.random() < 0.02:
                lines.append(f"    os.getenv('X{i}')  # error: {i}")
        path = root / f"pkg{i % 100}" / f"mod{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")


def python_re(pattern: str, texts: list[bytes]) -> int:
    regex = re.compile(pattern)
    found = 0
    for data in texts:
        for line in split_lines(data.decode("utf-8", errors="replace")):
            if regex.search(line):
                found += 1
    return found


def re2_whole(pattern: str, texts: list[bytes]) -> int:
    compiled = compile_pattern(pattern)
    assert isinstance(compiled, Re2Pattern)
    return sum(len(compiled.hits(data, 1 << 30)) for data in texts)


def re2_lines(pattern: str, texts: list[bytes]) -> int:
    compiled = compile_pattern(r"\A(?:" + pattern + ")" if pattern.startswith("^") else pattern)
    assert isinstance(compiled, Re2Pattern)
    compiled._whole_text = False
    return sum(len(compiled.hits(data, 1 << 30)) for data in texts)


def best(fn, repeat: int) -> tuple[float, int]:
    times, result = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return min(times), result


async def tool(root: Path, pattern: str) -> str:
    async def change_file(path: str, data: bytes | None) -> None:
        raise AssertionError

    ctx = ToolContext(workspace=DiskWorkspace([root]), change_file=change_file)
    return (await run_tool("grep", {"pattern": pattern}, ctx)).output


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_tree(root, args.files)
        texts = [p.read_bytes() for p in sorted(root.rglob("*.py"))]
        size = sum(map(len, texts)) / 1e6
        print(f"{len(texts):,} files, {size:.1f} MB; best of {args.repeat}, matching only")
        rg = shutil.which("rg")
        header = f"{'pattern':<22} {'re lines':>10} {'re2 whole':>10} {'re2 lines':>10}"
        print(header + (f" {'rg':>8}" if rg else "") + "  lines")
        for pattern in PATTERNS:
            t_re, n_re = best(partial(python_re, pattern, texts), args.repeat)
            t_whole, n_whole = best(partial(re2_whole, pattern, texts), args.repeat)
            t_lines, n_lines = best(partial(re2_lines, pattern, texts), args.repeat)
            assert n_re == n_whole == n_lines, (pattern, n_re, n_whole, n_lines)
            row = f"{pattern:<22} {t_re * 1e3:8.0f}ms {t_whole * 1e3:8.0f}ms {t_lines * 1e3:8.0f}ms"
            if rg:
                command = [rg, "-c", "--no-config", "-e", pattern, str(root)]
                t_rg, _ = best(partial(subprocess.run, command, capture_output=True), args.repeat)
                row += f" {t_rg * 1e3:6.0f}ms"
            print(f"{row}  {n_re:,}")
        if not rg:
            print("(rg is not on PATH: ripgrep not measured)")
        print("\nthe grep tool end to end (list, read, match, format; first 250 matches):")
        for pattern in PATTERNS:
            t_tool, _ = best(partial(lambda p: asyncio.run(tool(root, p)), pattern), args.repeat)
            print(f"{pattern:<22} {t_tool * 1e3:8.0f}ms")
    line = "a" * 30 + "!"
    started = time.perf_counter()
    compile_pattern("(a+)+$").hits(line.encode(), 1)
    t_re2 = time.perf_counter() - started
    started = time.perf_counter()
    re.compile("(a+)+$").search("a" * 22 + "!")
    t_re22 = time.perf_counter() - started
    print(f"\n(a+)+$ on {line!r}: re2 {t_re2 * 1e3:.2f} ms; Python re takes {t_re22:.2f} s")
    print("on 22 a's (doubling with each further a: ~256x that on 30)")


if __name__ == "__main__":
    main()
