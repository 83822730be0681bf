"""DiskWorkspace: path confinement, atomic writes, .gitignore-aware listing, commands."""

from __future__ import annotations

import asyncio
import os
import stat
import time
from pathlib import Path

import pytest

from agent_host.session.errors import PathOutsideWorkspace, ToolError
from agent_host.session.sandbox import Sandbox
from agent_host.session.workspace import DiskWorkspace, compile_glob


@pytest.fixture
def ws(root: Path) -> DiskWorkspace:
    return DiskWorkspace([root])


@pytest.fixture
def unconfined_ws(root: Path) -> DiskWorkspace:
    """For the tests that follow a command's processes by their host pids: the
    unconfined mode's (a confined command's pids are its namespace's, and all of
    them end with it: tests/session/test_sandbox_escapes.py)."""
    return DiskWorkspace([root], sandbox=Sandbox("full"))


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs; a zombie (killed, not yet reaped) counts as dead."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone between open and read
        return False


def _wait_dead(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.02)
    return False


async def _wait_for_file(path: Path, within: float = 5.0) -> str:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


# --- resolve and relative -----------------------------------------------------------


def test_relative_paths_resolve_against_the_first_root(ws, root):
    assert ws.resolve("a/b.txt") == root / "a" / "b.txt"
    assert ws.resolve("./a/../c.txt") == root / "c.txt"
    assert ws.resolve(str(root / "d.txt")) == root / "d.txt"
    assert ws.resolve(".") == root


@pytest.mark.parametrize("path", ["../x", "a/../../x", "/etc/passwd", "/"])
def test_paths_outside_the_roots_are_refused(ws, root, path):
    with pytest.raises(PathOutsideWorkspace) as e:
        ws.resolve(path)
    # The message names the path and where paths must be.
    assert repr(path) in str(e.value) and str(root) in str(e.value)


def test_symlinks_pointing_outside_are_refused(ws, root, outside):
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "linkdir").symlink_to(outside)
    (root / "dangling").symlink_to(outside / "not-yet.txt")
    for path in (
        "link.txt",
        "linkdir",
        "linkdir/secret.txt",
        "linkdir/new.txt",
        "linkdir/new/deeper.txt",
        "dangling",
    ):
        with pytest.raises(PathOutsideWorkspace, match="resolves to"):
            ws.resolve(path)


async def test_nothing_is_read_or_written_through_an_outside_symlink(ws, root, outside):
    (root / "linkdir").symlink_to(outside)
    with pytest.raises(PathOutsideWorkspace):
        await ws.read_bytes("linkdir/secret.txt")
    with pytest.raises(PathOutsideWorkspace):
        await ws.write_bytes("linkdir/new.txt", b"x")
    with pytest.raises(PathOutsideWorkspace):
        await ws.delete("linkdir/secret.txt")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_symlinks_inside_resolve_to_their_target(ws, root):
    (root / "real").mkdir()
    (root / "alias").symlink_to(root / "real")
    assert ws.resolve("alias/new.txt") == root / "real" / "new.txt"
    assert ws.relative(ws.resolve("alias/new.txt")) == "real/new.txt"


@pytest.mark.parametrize(("path", "message"), [("", "empty"), ("a\x00b", "NUL")])
def test_empty_and_nul_paths_are_refused_clearly(ws, path, message):
    with pytest.raises(ToolError, match=message):
        ws.resolve(path)


def test_relative_gives_posix_display_paths_that_resolve_back(tmp_path, root):
    second = tmp_path / "second"
    second.mkdir()
    ws = DiskWorkspace([root, second])
    assert ws.relative(root / "a" / "b.txt") == "a/b.txt"
    assert ws.relative(Path("a/b.txt")) == "a/b.txt"
    assert ws.relative(root) == "."
    in_second = ws.relative(second.resolve() / "c.txt")
    assert in_second == (second.resolve() / "c.txt").as_posix()
    assert ws.resolve(in_second) == second.resolve() / "c.txt"
    with pytest.raises(PathOutsideWorkspace):
        ws.relative(tmp_path / "elsewhere.txt")


def test_roots_must_exist(tmp_path):
    with pytest.raises(ValueError):
        DiskWorkspace([])
    with pytest.raises(NotADirectoryError):
        DiskWorkspace([tmp_path / "missing"])


# --- reading, writing, deleting ---------------------------------------------------------


async def test_read_bytes(ws, root):
    (root / "f.bin").write_bytes(b"\x00\x01data")
    (root / "d").mkdir()
    assert await ws.read_bytes("f.bin") == b"\x00\x01data"
    assert await ws.read_bytes("missing.txt") is None
    assert await ws.read_bytes("f.bin/under-a-file") is None
    with pytest.raises(ToolError, match="is a directory"):
        await ws.read_bytes("d")


async def test_reading_a_fifo_is_refused_instead_of_blocking(ws, root):
    os.mkfifo(root / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        await asyncio.wait_for(ws.read_bytes("pipe"), 5)


async def test_write_creates_parents_and_new_files_follow_the_umask(ws, root):
    await ws.write_bytes("a/b/c.txt", b"hello")
    assert (root / "a/b/c.txt").read_bytes() == b"hello"
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE((root / "a/b/c.txt").stat().st_mode) == 0o666 & ~umask


async def test_atomic_write_keeps_the_mode_and_leaves_no_temp_files(ws, root):
    script = root / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o755)
    await ws.write_bytes("run.sh", b"#!/bin/sh\necho new\n")
    assert script.read_text() == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert sorted(p.name for p in root.iterdir()) == ["run.sh"]


async def test_a_failed_write_leaves_the_old_file_whole_and_no_temp_file(ws, root, monkeypatch):
    (root / "f.txt").write_text("old")

    def broken_rename(src, dst, **dir_fds):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "rename", broken_rename)
    with pytest.raises(OSError, match="No space"):
        await ws.write_bytes("f.txt", b"new")
    assert (root / "f.txt").read_text() == "old"
    assert sorted(p.name for p in root.iterdir()) == ["f.txt"]


async def test_write_through_an_inside_symlink_updates_the_target(ws, root):
    (root / "target.txt").write_text("old")
    (root / "link.txt").symlink_to("target.txt")
    await ws.write_bytes("link.txt", b"new")
    assert (root / "link.txt").is_symlink()
    assert (root / "target.txt").read_text() == "new"


async def test_write_refuses_directories_and_file_parents(ws, root):
    (root / "d").mkdir()
    (root / "f.txt").write_text("x")
    with pytest.raises(ToolError, match="is a directory"):
        await ws.write_bytes("d", b"x")
    with pytest.raises(ToolError, match="parent of it is a file"):
        await ws.write_bytes("f.txt/g.txt", b"x")


async def test_delete(ws, root):
    (root / "f.txt").write_text("x")
    (root / "d").mkdir()
    await ws.delete("f.txt")
    assert not (root / "f.txt").exists()
    await ws.delete("f.txt")  # already gone is fine
    with pytest.raises(ToolError, match="is a directory"):
        await ws.delete("d")


# --- listing ---------------------------------------------------------------------


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


async def test_list_files_respects_nested_gitignores_and_negation(ws, root):
    _tree(
        root,
        {
            ".gitignore": "*.log\n!keep.log\nbuild/\n/rooted.txt\n",
            "a.py": "",
            "x.log": "",
            "keep.log": "",
            "rooted.txt": "",
            "build/out.js": "",
            "src/rooted.txt": "",  # '/rooted.txt' is anchored to the root
            "src/main.py": "",
            "src/debug.log": "",
            "src/.gitignore": "*.tmp\n!important.log\n",
            "src/scratch.tmp": "",
            "src/important.log": "",  # re-included by the deeper .gitignore
            "src/deep/x.tmp": "",
            "src/deep/y.py": "",
            "other/scratch.tmp": "",  # src/.gitignore does not reach here
            ".git/config": "",
            ".git/objects/ab": "",
        },
    )
    assert await ws.list_files() == [
        ".gitignore",
        "a.py",
        "keep.log",
        "other/scratch.tmp",
        "src/.gitignore",
        "src/deep/y.py",
        "src/important.log",
        "src/main.py",
        "src/rooted.txt",
    ]


async def test_an_ignored_directory_is_not_entered(ws, root):
    _tree(root, {".gitignore": "node_modules/\n", "node_modules/m/index.js": "", "a.js": ""})
    assert await ws.list_files() == [".gitignore", "a.js"]


async def test_git_info_exclude_applies(ws, root):
    _tree(root, {".git/info/exclude": "secret.txt\n", "secret.txt": "", "a.txt": ""})
    assert await ws.list_files() == ["a.txt"]


async def test_list_files_patterns(ws, root):
    _tree(
        root,
        {"a.py": "", "src/b.py": "", "src/c.ts": "", "src/sub/d.ts": "", "src/e.tsx": ""},
    )
    assert await ws.list_files("**/*.py") == ["a.py", "src/b.py"]
    assert await ws.list_files("*.py") == ["a.py", "src/b.py"]
    assert await ws.list_files("src/*.ts") == ["src/c.ts"]
    assert await ws.list_files("src/**/*.ts") == ["src/c.ts", "src/sub/d.ts"]
    assert await ws.list_files("**/*.{ts,tsx}") == ["src/c.ts", "src/e.tsx", "src/sub/d.ts"]
    assert await ws.list_files("src/") == ["src/b.py", "src/c.ts", "src/e.tsx", "src/sub/d.ts"]
    assert await ws.list_files(f"{root}/src/*.py") == ["src/b.py"]
    assert await ws.list_files("*.rs") == []


async def test_list_files_is_sorted_and_capped(ws, root):
    _tree(root, {f"f{i:03}.txt": "" for i in range(50)})
    files = await ws.list_files(limit=10)
    assert files == [f"f{i:03}.txt" for i in range(10)]


async def test_list_files_skips_symlinks_leading_outside(ws, root, outside):
    _tree(root, {"real.txt": ""})
    (root / "out.txt").symlink_to(outside / "secret.txt")
    (root / "outdir").symlink_to(outside)
    (root / "alias.txt").symlink_to("real.txt")
    assert await ws.list_files() == ["alias.txt", "real.txt"]


async def test_list_files_over_several_roots(tmp_path, root):
    second = tmp_path / "second"
    _tree(root, {"a.txt": ""})
    _tree(second, {"b.txt": "", ".gitignore": "*.log\n", "c.log": ""})
    ws = DiskWorkspace([root, second])
    b = (second.resolve() / "b.txt").as_posix()
    gitignore = (second.resolve() / ".gitignore").as_posix()
    assert await ws.list_files() == sorted([gitignore, b, "a.txt"])
    assert await ws.read_bytes(b) == b""


def test_bad_globs_are_tool_errors():
    # 2,048 alternatives, past wcmatch's limit of 1,000.
    with pytest.raises(ToolError, match="invalid glob pattern '\\{a,b\\}"):
        compile_glob("{a,b}" * 11)
    with pytest.raises(ToolError, match="empty"):
        compile_glob("./")


@pytest.mark.parametrize(
    ("pattern", "matches", "misses"),
    [
        ("*.py", ["a.py", "x/y/a.py", ".a.py"], ["a.pyc", "a.py/b"]),
        ("**/*.py", ["a.py", "x/a.py", ".x/a.py"], ["a.txt"]),
        ("src/*.ts", ["src/a.ts"], ["src/x/a.ts", "lib/src/a.ts"]),
        ("src/**", ["src/a", "src/x/y"], ["srcx/a"]),
        ("a?c.txt", ["abc.txt"], ["ac.txt", "a/c.txt"]),
        ("[ab].txt", ["a.txt", "b.txt"], ["c.txt"]),
        ("[!ab].txt", ["c.txt"], ["a.txt"]),
        ("x/**/y", ["x/y", "x/a/b/y"], ["y", "xy"]),
        ("{a,b/c}.md", ["a.md", "b/c.md"], ["c.md"]),
        ("with space.txt", ["with space.txt"], ["with"]),
        ("[[]x].txt", ["[x].txt"], ["x.txt"]),
        ("/top.txt", ["top.txt"], ["a/top.txt"]),
        ("[z-a]", [], ["a", "z", "-"]),  # a reversed range matches nothing, as in bash
    ],
)
def test_compile_glob(pattern, matches, misses):
    matcher = compile_glob(pattern)
    for path in matches:
        assert matcher.match(path), (pattern, path)
    for path in misses:
        assert not matcher.match(path), (pattern, path)


# --- commands ------------------------------------------------------------------------


async def test_run_command_merges_output_and_reports_the_exit_code(ws, root):
    result = await ws.run_command("echo out; echo err >&2; pwd; exit 3")
    assert result.exit_code == 3
    assert result.output == f"out\nerr\n{root}\n"
    assert not result.timed_out and not result.truncated


async def test_timeout_kills_the_whole_process_group(unconfined_ws, root):
    started = time.monotonic()
    result = await unconfined_ws.run_command("sleep 30 & echo $! > bg.pid; sleep 30", timeout=0.5)
    assert time.monotonic() - started < 5
    assert result.timed_out and result.exit_code is None
    assert _wait_dead(int((root / "bg.pid").read_text()))


async def test_children_holding_the_output_open_do_not_hold_the_call(unconfined_ws, root):
    started = time.monotonic()
    result = await unconfined_ws.run_command("sleep 30 & echo $! > bg.pid; echo done", timeout=20)
    assert time.monotonic() - started < 5
    assert result.exit_code == 0 and result.output == "done\n"
    assert _wait_dead(int((root / "bg.pid").read_text()))


async def test_output_is_capped_keeping_head_and_tail(ws):
    result = await ws.run_command("seq 1 100000", max_output=1000)
    assert result.truncated
    assert result.output.startswith("1\n2\n3\n")
    assert result.output.endswith("99999\n100000\n")
    assert "[... output truncated:" in result.output
    assert len(result.output) < 1200


async def test_capped_output_is_exact_when_it_fits_in_memory(ws):
    result = await ws.run_command(
        "printf 'a%.0s' $(seq 1 50); printf 'b%.0s' $(seq 1 50)", max_output=40
    )
    assert result.truncated
    head, tail = result.output.split("[... output truncated:")
    assert head.strip() == "a" * 20
    assert tail.split("...]")[1].strip() == "b" * 20


@pytest.mark.exclusive  # the killed group must be gone within 3 s
async def test_cancelling_the_call_kills_the_process_group(unconfined_ws, root):
    task = asyncio.create_task(unconfined_ws.run_command("sleep 30 & echo $! > bg.pid; sleep 30"))
    pid = int(await _wait_for_file(root / "bg.pid"))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _wait_dead(pid)


async def test_a_batch_of_writes_syncs_each_folder_once_at_its_end(tmp_path, monkeypatch):
    from agent_host.session.workspace import dirfd, disk

    synced: list[int] = []
    real = dirfd.fsync_folder

    def counted(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        real(fd)

    monkeypatch.setattr(disk, "fsync_folder", counted)
    monkeypatch.setattr(dirfd, "fsync_folder", counted)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "gone.txt").write_text("x")
    ws = DiskWorkspace([tmp_path])
    await ws.write_bytes("alone.txt", b"1")
    assert len(synced) == 1  # outside a batch: each write syncs its folder
    synced.clear()
    async with ws.batch_writes():
        await asyncio.gather(
            *(ws.write_bytes(f"a/f{i}.txt", b"x") for i in range(5)),
            ws.write_bytes("b.txt", b"y"),
            ws.delete("a/gone.txt"),
        )
        assert synced == []
    assert sorted(synced) == sorted({(tmp_path / "a").stat().st_ino, tmp_path.stat().st_ino})
    assert (tmp_path / "a" / "f4.txt").read_bytes() == b"x" and not (
        tmp_path / "a/gone.txt"
    ).exists()


async def test_a_conditional_write_or_delete_happens_only_over_the_expected_content(tmp_path):
    from agent_host.session.blobs import blob_id
    from agent_host.session.errors import FileChanged
    from agent_host.session.workspace import IfContent

    ws = DiskWorkspace([tmp_path])
    (tmp_path / "a.txt").write_bytes(b"mine")
    with pytest.raises(FileChanged) as changed:
        await ws.write_bytes("a.txt", b"theirs", expect=IfContent(blob_id(b"old")))
    assert changed.value.found == blob_id(b"mine")
    assert (tmp_path / "a.txt").read_bytes() == b"mine"
    with pytest.raises(FileChanged):
        await ws.write_bytes("a.txt", b"theirs", expect=IfContent(None))  # must be absent
    with pytest.raises(FileChanged):
        await ws.delete("a.txt", expect=IfContent(blob_id(b"old")))
    assert (tmp_path / "a.txt").read_bytes() == b"mine"
    await ws.write_bytes("a.txt", b"new", expect=IfContent(blob_id(b"mine")))
    assert (tmp_path / "a.txt").read_bytes() == b"new"
    await ws.write_bytes("sub/b.txt", b"b", expect=IfContent(None))
    with pytest.raises(FileChanged) as gone:
        await ws.delete("nowhere/c.txt", expect=IfContent(blob_id(b"c")))
    assert gone.value.found is None
    await ws.delete("a.txt", expect=IfContent(blob_id(b"new")))
    assert not (tmp_path / "a.txt").exists() and (tmp_path / "sub" / "b.txt").read_bytes() == b"b"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


async def test_a_write_an_editor_makes_is_checked_first_and_its_exec_bits_set_after(tmp_path):
    # ACP's ClientWorkspace: the condition is checked on disk before the editor is
    # asked to write, and the exec bits set once it has, never through a symlink.
    from agent_host.session.blobs import blob_id
    from agent_host.session.errors import FileChanged, PathOutsideWorkspace
    from agent_host.session.workspace import IfContent

    ws = DiskWorkspace([tmp_path])
    (tmp_path / "run.sh").write_bytes(b"echo hi\n")
    await ws.check("run.sh", IfContent(blob_id(b"echo hi\n")))
    await ws.check("absent.sh", IfContent(None))
    await ws.check("no/such/dir.sh", IfContent(None))
    with pytest.raises(FileChanged) as changed:
        await ws.check("run.sh", IfContent(blob_id(b"other")))
    assert changed.value.found == blob_id(b"echo hi\n")
    with pytest.raises(FileChanged):
        await ws.check("absent.sh", IfContent(blob_id(b"x")))

    await ws.set_executable("run.sh", True)
    assert (tmp_path / "run.sh").stat().st_mode & 0o100
    await ws.set_executable("run.sh", False)
    assert not (tmp_path / "run.sh").stat().st_mode & 0o111
    await ws.set_executable("absent.sh", True)  # gone: left so
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.write_bytes(b"x")
    outside.chmod(0o644)
    (tmp_path / "link.sh").symlink_to(outside)
    with pytest.raises(PathOutsideWorkspace):
        await ws.set_executable("link.sh", True)
    assert not outside.stat().st_mode & 0o111
