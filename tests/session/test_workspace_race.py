"""DiskWorkspace writes cannot be redirected outside the workspace by a folder that is
swapped for a symlink after the path was checked (time of check, time of use)."""

from __future__ import annotations

import ctypes
import errno
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_host.session.errors import PathOutsideWorkspace, ToolError
from agent_host.session.workspace import DiskWorkspace

# The flipper swaps ``sub`` (a real folder) and ``sub.swap`` (a symlink to ../outside)
# with one renameat2(RENAME_EXCHANGE): ``sub`` is never missing, so a write's mkdir
# never races the flipper, and the one real folder is where every write that
# succeeded must have landed. An even number of swaps between stop checks means it
# stops with ``sub`` the real folder again.
_FLIPPER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
os.chdir(sys.argv[1])
while not os.path.exists("stop"):
    for _ in range(64):
        if libc.renameat2(-100, b"sub", -100, b"sub.swap", 2) != 0:
            raise OSError(ctypes.get_errno(), "renameat2")
"""


def _exchange_supported(where: Path) -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "renameat2"):
        return False
    (where / "x").mkdir()
    (where / "y").symlink_to("x")
    ok = libc.renameat2(-100, bytes(where / "x"), -100, bytes(where / "y"), 2) == 0
    if not ok and ctypes.get_errno() not in (errno.EINVAL, errno.ENOSYS):
        raise OSError(ctypes.get_errno(), "renameat2")
    (where / ("x" if ok else "y")).unlink()
    (where / ("y" if ok else "x")).rmdir()
    return ok


def _contents(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """``ws/sub`` and a sibling ``outside/`` full of files named like the ones written."""
    if not _exchange_supported(tmp_path):
        pytest.skip("needs renameat2(RENAME_EXCHANGE) to swap a folder and a symlink")
    root = (tmp_path / "ws").resolve()
    (root / "sub").mkdir(parents=True)
    (root / "sub.swap").symlink_to("../outside")
    outside = tmp_path / "outside"
    outside.mkdir()
    for i in range(20):
        (outside / f"f{i}.txt").write_bytes(b"OUTSIDE %d" % i)
    return root, outside.resolve()


_WALK_ERROR = re.compile("changed while being (read|written|deleted)")


def _flip_error(e: Exception) -> str | None:
    """Which typed error a flip caused: resolve saw the link ("outside") or saw it
    vanish mid-realpath ("resolve"), or the walk met a folder turned into a symlink
    after resolve ("walk", the catch this test is about); None for any other error."""
    if isinstance(e, PathOutsideWorkspace):
        return "outside"
    if isinstance(e, ToolError) and "changed while being resolved" in str(e):
        return "resolve"
    if isinstance(e, ToolError) and _WALK_ERROR.search(str(e)):
        return "walk"
    return None


@pytest.mark.slow
async def test_a_folder_flipping_to_an_outside_symlink_never_lets_a_write_out(layout):
    root, outside = layout
    before = _contents(outside)
    ws = DiskWorkspace([root])
    flipper = subprocess.Popen([sys.executable, "-c", _FLIPPER, str(root)])
    rng = random.Random(8)
    model: dict[str, bytes | None] = {}  # what the real folder must hold
    outcomes = {"ok": 0, "outside": 0, "resolve": 0, "walk": 0}
    ops = 0
    deadline = time.monotonic() + 60
    try:
        # Hundreds of operations, and more until the walk itself caught some flips,
        # and successes, so that the test cannot pass without the race having been run.
        while ops < 600 or outcomes["walk"] < 20 or outcomes["ok"] < 20:
            assert time.monotonic() < deadline, f"too few flips caught: {outcomes}"
            assert flipper.poll() is None, "the flipper died"
            name = f"f{rng.randrange(20)}.txt"
            op = rng.choice(("write", "write", "delete", "read"))
            data = b"inside %d" % ops
            ops += 1
            try:
                if op == "write":
                    await ws.write_bytes(f"sub/{name}", data)
                    model[name] = data
                elif op == "delete":
                    await ws.delete(f"sub/{name}")
                    model[name] = None
                else:
                    got = await ws.read_bytes(f"sub/{name}")
                    assert got == model.get(name), f"read {name}: {got!r}"
            except (PathOutsideWorkspace, ToolError) as e:
                kind = _flip_error(e)
                assert kind is not None, e
                outcomes[kind] += 1
            else:
                outcomes["ok"] += 1
    finally:
        (root / "stop").touch()
        try:
            flipper.wait(10)
        except subprocess.TimeoutExpired:
            flipper.kill()
            raise
    assert flipper.returncode == 0
    (root / "stop").unlink()
    assert (root / "sub").is_dir() and not (root / "sub").is_symlink()
    assert _contents(outside) == before  # no new file, no temp file, nothing changed
    assert _contents(root / "sub") == {n: d for n, d in model.items() if d is not None}
    assert sorted(p.name for p in root.iterdir()) == ["sub", "sub.swap"]
    assert outcomes["ok"] >= 20


# --- a swap at one chosen moment: after resolve, before the walk ---------------------


def _swap_after_resolve(monkeypatch, ws: DiskWorkspace, swap) -> None:
    resolve = ws.resolve

    def resolve_then_swap(path: str) -> Path:
        real = resolve(path)
        swap()
        return real

    monkeypatch.setattr(ws, "resolve", resolve_then_swap)


def _file_to_link(file: Path, target: Path):
    def swap() -> None:
        file.unlink()
        file.symlink_to(target)

    return swap


async def test_a_file_swapped_for_a_symlink_is_not_read_through(monkeypatch, root, outside):
    (root / "f.txt").write_text("mine")
    ws = DiskWorkspace([root])
    _swap_after_resolve(monkeypatch, ws, _file_to_link(root / "f.txt", outside / "secret.txt"))
    with pytest.raises(ToolError, match="f.txt changed while being read"):
        await ws.read_bytes("f.txt")


async def test_a_file_swapped_for_a_symlink_is_not_written_through(monkeypatch, root, outside):
    (root / "f.txt").write_text("mine")
    ws = DiskWorkspace([root])
    _swap_after_resolve(monkeypatch, ws, _file_to_link(root / "f.txt", outside / "secret.txt"))
    with pytest.raises(ToolError, match="changed while being written"):
        await ws.write_bytes("f.txt", b"new")
    assert (outside / "secret.txt").read_text() == "secret"
    assert sorted(p.name for p in root.iterdir()) == ["f.txt"]  # no temp file


async def test_deleting_a_file_swapped_for_a_symlink_removes_the_link(monkeypatch, root, outside):
    (root / "f.txt").write_text("mine")
    ws = DiskWorkspace([root])
    _swap_after_resolve(monkeypatch, ws, _file_to_link(root / "f.txt", outside / "secret.txt"))
    await ws.delete("f.txt")
    assert not (root / "f.txt").is_symlink() and not (root / "f.txt").exists()
    assert (outside / "secret.txt").read_text() == "secret"


@pytest.mark.parametrize("op", ["read", "write", "delete"])
async def test_a_folder_swapped_for_a_symlink_is_not_entered(monkeypatch, root, outside, op):
    (root / "sub").mkdir()
    (root / "sub" / "secret.txt").write_text("mine")

    def swap() -> None:
        (root / "sub").rename(root / "sub.real")
        (root / "sub").symlink_to(outside)

    ws = DiskWorkspace([root])
    _swap_after_resolve(monkeypatch, ws, swap)
    done = {"read": "read", "write": "written", "delete": "deleted"}[op]
    with pytest.raises(ToolError, match=f"sub/secret.txt changed while being {done}: 'sub'"):
        if op == "read":
            await ws.read_bytes("sub/secret.txt")
        elif op == "write":
            await ws.write_bytes("sub/secret.txt", b"new")
        else:
            await ws.delete("sub/secret.txt")
    assert _contents(outside) == {"secret.txt": b"secret"}
    assert _contents(root / "sub.real") == {"secret.txt": b"mine"}


async def test_a_missing_folder_made_a_symlink_is_not_entered_by_a_write(
    monkeypatch, root, outside
):
    # The folder did not exist when checked; the write's mkdir -p must not follow
    # the link that appeared in its place.
    ws = DiskWorkspace([root])
    _swap_after_resolve(monkeypatch, ws, lambda: (root / "new").symlink_to(outside))
    with pytest.raises(ToolError, match="changed while being written"):
        await ws.write_bytes("new/deeper/f.txt", b"x")
    assert _contents(outside) == {"secret.txt": b"secret"}
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


async def test_nested_roots_walk_from_the_innermost(tmp_path, root):
    inner = root / "inner"
    inner.mkdir()
    ws = DiskWorkspace([root, inner])
    await ws.write_bytes(str(inner / "a" / "f.txt"), b"x")
    assert await ws.read_bytes("inner/a/f.txt") == b"x"
    await ws.delete("inner/a/f.txt")
    assert await ws.read_bytes(str(inner / "a" / "f.txt")) is None


async def test_the_root_itself_is_a_directory_not_a_file(root):
    ws = DiskWorkspace([root])
    with pytest.raises(ToolError, match="is a directory"):
        await ws.read_bytes(".")
    with pytest.raises(ToolError, match="is a directory"):
        await ws.write_bytes(".", b"x")
    with pytest.raises(ToolError, match="is a directory"):
        await ws.delete(".")


async def test_a_symlink_loop_on_the_way_is_reported_as_a_loop(root):
    (root / "loop").symlink_to("loop")
    ws = DiskWorkspace([root])
    for call in (ws.read_bytes("loop/f.txt"), ws.write_bytes("loop/f.txt", b"x")):
        with pytest.raises(OSError, match="symbolic links") as e:
            await call
        assert e.value.errno == errno.ELOOP


async def test_a_link_that_vanishes_mid_resolve_is_a_typed_error(monkeypatch, root):
    (root / "real").mkdir()
    (root / "alias").symlink_to("real")
    ws = DiskWorkspace([root])

    def swapped_back(path, *args, **kwargs):  # lstat saw a link, then it was a folder
        raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), path)

    monkeypatch.setattr(os, "readlink", swapped_back)
    with pytest.raises(ToolError, match="alias/f.txt changed while being resolved"):
        ws.resolve("alias/f.txt")
