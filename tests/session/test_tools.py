"""The agent's tools through run_tool, over a real DiskWorkspace."""

from __future__ import annotations

import asyncio
import errno
import os
import tempfile
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agent_host.session.errors import PermissionDenied
from agent_host.session.tools import TOOL_KINDS, TOOL_SPECS, ToolContext, ToolOutcome, run_tool
from agent_host.session.tools import search as search_module
from agent_host.session.tools.dispatch import _HANDLERS
from agent_host.session.workspace import DiskWorkspace, Workspace


@attrs.define
class Recorder:
    """A real change_file: note the change, check nothing was written yet, write it.

    It stands in for the engine's (blobs + FileSnapshot event, then the write).
    """

    workspace: Workspace
    changes: list[tuple[str, bytes | None, bytes | None]] = attrs.field(factory=list)
    on_disk_at_hook: list[bytes | None] = attrs.field(factory=list)

    async def change_file(self, path: str, data: bytes | None) -> None:
        before = await self.workspace.read_bytes(path)
        self.on_disk_at_hook.append(before)
        self.changes.append((path, before, data))
        if data is None:
            await self.workspace.delete(path)
        else:
            await self.workspace.write_bytes(path, data)


@pytest.fixture
def recorder(root: Path) -> Recorder:
    return Recorder(DiskWorkspace([root]))


@pytest.fixture
def ctx(recorder: Recorder) -> ToolContext:
    return ToolContext(workspace=recorder.workspace, change_file=recorder.change_file)


async def ok(name: str, ctx: ToolContext, **arguments) -> str:
    outcome = await run_tool(name, arguments, ctx)
    assert not outcome.is_error, outcome.output
    return outcome.output


async def error(name: str, ctx: ToolContext, **arguments) -> str:
    outcome = await run_tool(name, arguments, ctx)
    assert outcome.is_error, outcome.output
    assert "Traceback" not in outcome.output
    return outcome.output


# --- specs ----------------------------------------------------------------------------


def test_every_spec_has_a_handler_a_kind_and_a_sound_schema():
    names = [spec.name for spec in TOOL_SPECS]
    assert len(names) == len(set(names))
    assert set(names) == set(_HANDLERS) == set(TOOL_KINDS)
    assert set(TOOL_KINDS.values()) <= {"read", "edit", "command"}
    for spec in TOOL_SPECS:
        schema = spec.parameters
        assert schema["type"] == "object"
        assert set(schema["required"]) <= set(schema["properties"])
        assert len(spec.description) > 40
        for prop in schema["properties"].values():
            assert prop["type"] in {"string", "integer", "number", "boolean"}
            assert prop.get("description")


# --- read_file -------------------------------------------------------------------------


async def test_read_file_numbers_lines_like_cat_n(ctx, root):
    (root / "f.py").write_text("one\ntwo\r\n\nfour")
    assert await ok("read_file", ctx, path="f.py") == (
        "     1\tone\n     2\ttwo\n     3\t\n     4\tfour"
    )


async def test_read_file_offset_and_limit_say_how_to_read_on(ctx, root):
    (root / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = await ok("read_file", ctx, path="f.txt", offset=3, limit=2)
    assert out.splitlines()[:2] == ["     3\tline 3", "     4\tline 4"]
    assert "lines 3-4 of 10" in out and "offset=5" in out
    last = await ok("read_file", ctx, path="f.txt", offset=10)
    assert last == "    10\tline 10"
    assert "past the end" in await error("read_file", ctx, path="f.txt", offset=11)


async def test_read_file_cuts_long_lines(ctx, root):
    (root / "f.txt").write_text("x" * 5000 + "\nshort\n")
    out = await ok("read_file", ctx, path="f.txt")
    first, second = out.splitlines()
    assert first.startswith("     1\t" + "x" * 2000) and "3,000 more characters" in first
    assert second == "     2\tshort"


async def test_read_file_reports_binary_files_without_dumping_them(ctx, root):
    (root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(range(256)) * 4)
    out = await ok("read_file", ctx, path="img.png")
    assert "binary" in out and "1,034 bytes" in out and "PNG" not in out


async def test_read_file_shows_invalid_utf8_with_a_note(ctx, root):
    (root / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    out = await ok("read_file", ctx, path="latin1.txt")
    assert "caf\ufffd" in out and "not valid UTF-8" in out


async def test_read_file_errors(ctx, root, tmp_path):
    (root / "d").mkdir()
    (root / "empty.txt").write_text("")
    assert "empty" in await ok("read_file", ctx, path="empty.txt")
    assert "does not exist" in await error("read_file", ctx, path="nope.txt")
    assert "is a directory" in await error("read_file", ctx, path="d")
    assert "outside the workspace" in await error("read_file", ctx, path="../x.txt")
    (tmp_path / "secret.txt").write_text("s")
    (root / "link").symlink_to(tmp_path / "secret.txt")
    assert "outside the workspace" in await error("read_file", ctx, path="link")


# --- write_file ------------------------------------------------------------------------


async def test_write_file_creates_and_overwrites_through_change_file(ctx, root, recorder):
    assert "Created a/b.txt" in await ok("write_file", ctx, path="a/b.txt", content="hi\n")
    assert (root / "a/b.txt").read_text() == "hi\n"
    assert "Wrote a/b.txt" in await ok("write_file", ctx, path="./a/b.txt", content="bye\n")
    assert "nothing changed" in await ok("write_file", ctx, path="a/b.txt", content="bye\n")
    assert recorder.changes == [("a/b.txt", None, b"hi\n"), ("a/b.txt", b"hi\n", b"bye\n")]


async def test_change_file_runs_before_the_file_changes(ctx, root, recorder):
    (root / "f.txt").write_text("old text")
    await ok("write_file", ctx, path="f.txt", content="new")
    await ok("edit_file", ctx, path="f.txt", old_string="new", new_string="newer")
    await ok("delete_file", ctx, path="f.txt")
    # The hook saw the old content still on disk each time: it can log before writing.
    assert recorder.on_disk_at_hook == [b"old text", b"new", b"newer"]
    assert not (root / "f.txt").exists()


async def test_tools_never_write_the_workspace_themselves(root):
    ws = DiskWorkspace([root])
    calls = []

    async def refusing_change_file(path, data):
        calls.append(path)
        raise PermissionDenied("the user declined this change")

    ctx = ToolContext(workspace=ws, change_file=refusing_change_file)
    (root / "f.txt").write_text("keep")
    for name, args in [
        ("write_file", {"path": "f.txt", "content": "x"}),
        ("write_file", {"path": "new.txt", "content": "x"}),
        ("edit_file", {"path": "f.txt", "old_string": "keep", "new_string": "x"}),
        ("delete_file", {"path": "f.txt"}),
    ]:
        # PermissionDenied is the engine's to handle, so it propagates.
        with pytest.raises(PermissionDenied):
            await run_tool(name, args, ctx)
    assert calls == ["f.txt", "new.txt", "f.txt", "f.txt"]
    assert (root / "f.txt").read_text() == "keep" and not (root / "new.txt").exists()


async def test_binary_content_goes_through_change_file_intact(ctx, root, recorder):
    blob = bytes(range(256)) * 3
    (root / "data.bin").write_bytes(blob)
    await ok("write_file", ctx, path="data.bin", content="text now")
    assert recorder.changes == [("data.bin", blob, b"text now")]
    # And a restore writing binary bytes back goes through the same hook.
    await ctx.change_file("data.bin", blob)
    assert (root / "data.bin").read_bytes() == blob
    assert recorder.changes[-1] == ("data.bin", b"text now", blob)


async def test_write_file_errors(ctx, root):
    (root / "d").mkdir()
    (root / "f.txt").write_text("x")
    assert "is a directory" in await error("write_file", ctx, path="d", content="x")
    assert "parent of it is a file" in await error(
        "write_file", ctx, path="f.txt/g.txt", content="x"
    )
    assert "outside the workspace" in await error("write_file", ctx, path="/tmp/x", content="")
    assert "not valid Unicode" in await error(
        "write_file", ctx, path="s.txt", content="bad \ud800 surrogate"
    )


# --- edit_file -------------------------------------------------------------------------


async def test_edit_file_replaces_one_exact_occurrence_and_shows_the_result(ctx, root):
    (root / "f.py").write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    out = await ok("edit_file", ctx, path="f.py", old_string="return 2", new_string="return 3")
    assert (root / "f.py").read_text() == "def f():\n    return 1\n\ndef g():\n    return 3\n"
    assert "replaced 1 occurrence" in out and "     5\t    return 3" in out


async def test_edit_file_missing_old_string(ctx, root, recorder):
    (root / "f.py").write_text("x = 1\n")
    out = await error("edit_file", ctx, path="f.py", old_string="y = 1", new_string="y = 2")
    assert "not found in f.py" in out and "whitespace" in out
    assert recorder.changes == []


async def test_edit_file_ambiguous_old_string_says_how_often_and_what_to_do(ctx, root):
    (root / "f.py").write_text("x = 1\nx = 1\nx = 1\n")
    out = await error("edit_file", ctx, path="f.py", old_string="x = 1", new_string="x = 2")
    assert "3 times" in out and "surrounding" in out and "replace_all" in out
    assert (root / "f.py").read_text() == "x = 1\nx = 1\nx = 1\n"


async def test_edit_file_replace_all(ctx, root):
    (root / "f.py").write_text("x = 1\nx = 1\ny = 1\n")
    out = await ok(
        "edit_file", ctx, path="f.py", old_string="x = 1", new_string="x = 2", replace_all=True
    )
    assert "replaced 2 occurrences" in out
    assert (root / "f.py").read_text() == "x = 2\nx = 2\ny = 1\n"


async def test_edit_file_overlapping_matches_are_ambiguous(ctx, root):
    (root / "f.txt").write_text("aaa")
    assert "2 times" in await error("edit_file", ctx, path="f.txt", old_string="aa", new_string="b")


async def test_edit_file_refusals(ctx, root):
    (root / "f.txt").write_text("abc")
    (root / "b.bin").write_bytes(b"abc\x00def")
    assert "the same" in await error(
        "edit_file", ctx, path="f.txt", old_string="abc", new_string="abc"
    )
    assert "old_string is empty" in await error(
        "edit_file", ctx, path="f.txt", old_string="", new_string="x"
    )
    assert "write_file" in await error(
        "edit_file", ctx, path="new.txt", old_string="a", new_string="b"
    )
    assert "binary" in await error("edit_file", ctx, path="b.bin", old_string="abc", new_string="x")


async def test_edit_file_keeps_crlf_line_ends_and_bytes_it_was_not_asked_to_change(ctx, root):
    (root / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await ok("edit_file", ctx, path="win.txt", old_string="one\ntwo", new_string="1\n2")
    assert (root / "win.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"
    (root / "latin1.txt").write_bytes(b"caf\xe9 = 1\n")
    await ok("edit_file", ctx, path="latin1.txt", old_string="= 1", new_string="= 2")
    assert (root / "latin1.txt").read_bytes() == b"caf\xe9 = 2\n"


# --- delete_file -----------------------------------------------------------------------


async def test_delete_file(ctx, root, recorder):
    (root / "f.txt").write_text("bye")
    (root / "d").mkdir()
    assert await ok("delete_file", ctx, path="f.txt") == "Deleted f.txt."
    assert not (root / "f.txt").exists()
    assert recorder.changes == [("f.txt", b"bye", None)]
    assert "does not exist" in await error("delete_file", ctx, path="f.txt")
    assert "is a directory" in await error("delete_file", ctx, path="d")
    assert "outside" in await error("delete_file", ctx, path="../f.txt")


# --- list_files and grep ---------------------------------------------------------------


def _tree(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


async def test_list_files(ctx, root):
    _tree(root, {".gitignore": "*.log\n", "a.py": "", "x.log": "", "src/b.py": "", "src/c.ts": ""})
    assert await ok("list_files", ctx) == ".gitignore\na.py\nsrc/b.py\nsrc/c.ts"
    assert await ok("list_files", ctx, pattern="**/*.py") == "a.py\nsrc/b.py"
    assert await ok("list_files", ctx, pattern="src") == "src/b.py\nsrc/c.ts"
    assert "No files match '*.rs'" in await ok("list_files", ctx, pattern="*.rs")
    assert "outside" in await error("list_files", ctx, pattern="../elsewhere")


async def test_list_files_notes_when_it_cut_the_list(ctx, root, monkeypatch):
    monkeypatch.setattr(search_module, "LIST_LIMIT", 5)
    _tree(root, {f"f{i}.txt": "" for i in range(8)})
    out = await ok("list_files", ctx)
    assert out.splitlines()[:5] == [f"f{i}.txt" for i in range(5)]
    assert "only the first 5 paths" in out


async def test_grep(ctx, root):
    _tree(
        root,
        {
            ".gitignore": "ignored/\n",
            "a.py": "import os\ndef main():\n    os.exit(1)\n",
            "src/b.py": "x = 1\n# TODO: fix\n",
            "src/c.ts": "// TODO later\n",
            "ignored/d.py": "# TODO hidden\n",
            "bin.dat": b"TODO\x00\x01",
        },
    )
    todo = "src/b.py:2:# TODO: fix\nsrc/c.ts:1:// TODO later"
    assert await ok("grep", ctx, pattern="TODO") == todo
    assert await ok("grep", ctx, pattern=r"os\.\w+", path=".") == "a.py:3:    os.exit(1)"
    assert await ok("grep", ctx, pattern="TODO", glob="*.ts") == "src/c.ts:1:// TODO later"
    assert await ok("grep", ctx, pattern="TODO", path="src", glob="*.py") == (
        "src/b.py:2:# TODO: fix"
    )
    # An explicitly named file is searched even when .gitignore excludes it.
    assert await ok("grep", ctx, pattern="(?i)todo", path="ignored/d.py") == (
        "ignored/d.py:1:# TODO hidden"
    )
    assert "No matches for 'nothing'" in await ok("grep", ctx, pattern="nothing")


async def test_grep_errors(ctx, root):
    out = await error("grep", ctx, pattern="foo(")
    assert "invalid regular expression 'foo('" in out and "position" in out
    assert "does not exist" in await error("grep", ctx, pattern="x", path="nope")
    assert "outside" in await error("grep", ctx, pattern="x", path="..")


async def test_grep_caps_its_output(ctx, root, monkeypatch):
    monkeypatch.setattr(search_module, "GREP_MAX_MATCHES", 3)
    _tree(root, {"a.txt": "hit " + "x" * 1000 + "\n" * 2 + "hit\n" * 5, "b.txt": "hit\n"})
    out = await ok("grep", ctx, pattern="hit")
    lines = out.splitlines()
    assert lines[0].startswith("a.txt:1:hit xxx") and lines[0].endswith("[...]")
    assert len(lines[0]) < 600
    assert lines[1:3] == ["a.txt:3:hit", "a.txt:4:hit"]
    assert "stopped after 3 matching lines" in out and "b.txt" not in out


# --- run_command -----------------------------------------------------------------------


async def test_run_command(ctx, root):
    assert await ok("run_command", ctx, command="echo hi; echo oops >&2") == (
        "hi\noops\n\n[exit code 0]"
    )
    out = await error("run_command", ctx, command="echo failing; exit 2")
    assert out == "failing\n\n[exit code 2]"
    assert "command is empty" in await error("run_command", ctx, command="  ")


async def test_run_command_timeout(ctx, root):
    out = await error("run_command", ctx, command="echo started; sleep 20", timeout=1)
    assert out.startswith("started") and "timed out after 1 s" in out
    assert "at most 600" in await error("run_command", ctx, command="true", timeout=601)


# --- run_tool --------------------------------------------------------------------------


async def test_unknown_tools_list_the_real_ones(ctx):
    out = await error("rm_rf", ctx)
    assert "Unknown tool 'rm_rf'" in out and "read_file" in out and "run_command" in out


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("read_file", {}, "missing required argument 'path'"),
        ("write_file", {"path": "x"}, "missing required argument 'content'"),
        ("edit_file", {"path": "x"}, "arguments 'old_string', 'new_string'"),
        ("read_file", {"path": None}, "missing required argument 'path'"),
        ("read_file", {"path": 3}, "'path' must be a string, got the number 3"),
        ("read_file", {"path": "x", "offset": "2"}, "'offset' must be an integer"),
        ("read_file", {"path": "x", "offset": True}, "'offset' must be an integer"),
        ("read_file", {"path": "x", "offset": 1.5}, "'offset' must be an integer"),
        ("read_file", {"path": "x", "offset": 0}, "'offset' must be at least 1"),
        (
            "edit_file",
            {"path": "x", "old_string": "a", "new_string": "b", "replace_all": "yes"},
            "'replace_all' must be true or false",
        ),
        ("read_file", {"file_path": "x"}, "unknown argument 'file_path'; read_file accepts: path"),
        ("run_command", {"command": "true", "timeout": float("nan")}, "'timeout' must be a number"),
    ],
)
async def test_arguments_are_checked_naming_the_field(ctx, name, arguments, message):
    assert message in await error(name, ctx, **arguments)


async def test_arguments_must_be_an_object(ctx):
    outcome = await run_tool("read_file", ["x"], ctx)  # type: ignore[arg-type]
    assert outcome.is_error and "must be a JSON object" in outcome.output


async def test_null_optional_arguments_count_as_absent_and_integral_floats_as_ints(ctx, root):
    (root / "f.txt").write_text("a\nb\n")
    assert await ok("read_file", ctx, path="f.txt", offset=None, limit=1.0) == (
        "     1\ta\n\n[showing lines 1-1 of 2; read on with offset=2]"
    )


async def test_symlink_loops_are_reported_not_raised(ctx, root):
    (root / "loop").symlink_to("loop")
    assert "symbolic links" in await error("read_file", ctx, path="loop")


async def test_os_errors_become_error_outcomes_and_bugs_propagate(root):
    ws = DiskWorkspace([root])

    async def disk_full(path, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(root / path))

    outcome = await run_tool(
        "write_file", {"path": "f.txt", "content": "x"}, ToolContext(ws, disk_full)
    )
    assert outcome == ToolOutcome(f"write_file: No space left on device: {root}/f.txt", True)

    async def buggy(path, data):
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        await run_tool("write_file", {"path": "f.txt", "content": "x"}, ToolContext(ws, buggy))


# --- the property ----------------------------------------------------------------------

PATHS = ["a.txt", "b.txt", "dir/c.txt", "dir/sub/d.txt"]
TEXT = st.text(alphabet="abcd\né", max_size=16)


def _expect_edit(text: str | None, old: str, new: str, replace_all: bool) -> str | None:
    """What edit_file should leave, by the spec; None where it must refuse."""
    if text is None or old == "" or old == new:
        return None
    overlapping = sum(text.startswith(old, i) for i in range(len(text)))
    if overlapping == 0 or (overlapping > 1 and not replace_all):
        return None
    return text.replace(old, new) if replace_all else text.replace(old, new, 1)


async def _run_operations(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        recorder = Recorder(DiskWorkspace([root]))
        ctx = ToolContext(recorder.workspace, recorder.change_file)
        model: dict[str, str] = {}
        for _ in range(data.draw(st.integers(0, 12), label="steps")):
            op = data.draw(st.sampled_from(["write", "create", "edit", "delete"]))
            existing = sorted(model)
            if op == "create" or (op != "create" and not existing):
                path = data.draw(st.sampled_from(PATHS))
            else:
                # Mostly existing files, sometimes missing ones, for the error paths.
                path = data.draw(st.sampled_from(existing + PATHS[:1]))
            if op in ("write", "create"):
                content = data.draw(TEXT)
                outcome = await run_tool("write_file", {"path": path, "content": content}, ctx)
                assert not outcome.is_error, outcome.output
                model[path] = content
            elif op == "edit":
                text = model.get(path)
                # Mostly a piece of the file, so that edits apply as well as fail.
                if text and data.draw(st.integers(0, 3)):
                    start = data.draw(st.integers(0, len(text) - 1))
                    old = text[start : data.draw(st.integers(start + 1, len(text)))]
                else:
                    old = data.draw(TEXT)
                new, replace_all = data.draw(TEXT), data.draw(st.booleans())
                expected = _expect_edit(text, old, new, replace_all)
                args = {
                    "path": path,
                    "old_string": old,
                    "new_string": new,
                    "replace_all": replace_all,
                }
                outcome = await run_tool("edit_file", args, ctx)
                event(f"edit {'refused' if outcome.is_error else 'applied'}")
                assert outcome.is_error == (expected is None), (args, text, outcome.output)
                if expected is not None:
                    model[path] = expected
            else:
                outcome = await run_tool("delete_file", {"path": path}, ctx)
                event(f"delete {'refused' if outcome.is_error else 'applied'}")
                assert outcome.is_error == (path not in model), outcome.output
                model.pop(path, None)

        on_disk = {
            p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
            for p in root.rglob("*")
            if p.is_file()
        }
        assert on_disk == model
        last: dict[str, bytes | None] = {}
        for path, before, after in recorder.changes:
            assert before == last.get(path), f"{path}: before does not chain"
            assert before != after
            last[path] = after
        assert {p: a for p, a in last.items() if a is not None} == {
            p: t.encode() for p, t in model.items()
        }


@settings(max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_changes_keep_files_and_snapshots_in_step(data):
    asyncio.run(_run_operations(data))
