"""``agent-host demo``: a whole session offline, on a copy of a small project.

A scripted model (``script.json``) plays three turns that edit, create and delete
files; the demo then lists the checkpoints, restores the second one and undoes
the restore, printing the files at each point.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..session.changes import count
from ..session.events import FileSnapshot, ToolCall, ToolResult, TurnEnd
from ..session.host import AgentHost
from ..session.model import TextDelta

HERE = Path(__file__).parent
PROMPTS = [
    "Add a docstring to greet.py",
    "Add a test for greet",
    "Delete the stale NOTES.md",
]


async def run_demo(
    store: str | None = None, write: Callable[[str], object] = sys.stdout.write
) -> None:
    def out(text: str = "") -> None:
        write(text + "\n")

    with tempfile.TemporaryDirectory(prefix="agent-host-demo-") as tmp:
        project = Path(tmp) / "project"
        shutil.copytree(HERE / "project", project)
        host = AgentHost(
            store=store or Path(tmp) / "store",
            model=f"scripted:{HERE / 'script.json'}",
            workdir=project,
            on_event=_printer(write),
        )
        try:
            out(f"project: {project}\nstore:   {host.store!r}\n")
            for prompt in PROMPTS:
                out(f"> {prompt}")
                await host.send(prompt)
                out()
            _show_files(project, out)

            out("\ncheckpoints:")
            checkpoints = await host.list_checkpoints()
            for c in checkpoints:
                out(f"  {c.ordinal} · {c.prompt!r}  changed: {', '.join(c.files) or '-'}")

            target = checkpoints[1]
            out(f"\nrestore to before {target.prompt!r}:")
            restored = await host.restore(host.session_id, target.seq)
            out(
                f"  {len(restored.restored_files)} files "
                f"({', '.join(sorted(restored.restored_files))}), "
                f"{count(restored.messages_removed, 'message')} removed"
            )
            _show_files(project, out)

            out("\nundo the restore:")
            undone = await host.undo_restore()
            out(
                f"  {count(len(undone.restored_files), 'file')} and "
                f"{count(undone.messages_restored, 'message')} back"
            )
            _show_files(project, out)
            turns = len(await host.list_checkpoints())
            out(f"\nsession {host.session_id}: {turns} turns, cost ${host.cost:.4f}")
        finally:
            await host.close()


def _printer(write: Callable[[str], object]) -> Callable[[str, object], None]:
    """Streams the turn as it happens: text as it arrives, tools and file changes."""
    mid_line = False

    def line(text: str) -> None:
        nonlocal mid_line
        write(("\n" if mid_line else "") + text + "\n")
        mid_line = False

    def show(session_id: str, item: object) -> None:
        nonlocal mid_line
        if isinstance(item, TextDelta):
            write(item.text)
            mid_line = True
        elif isinstance(item, ToolCall):
            shown = ", ".join(f"{k}={str(v)[:30]!r}" for k, v in item.arguments.items())
            line(f"  tool {item.name}({shown})")
        elif isinstance(item, ToolResult) and item.is_error:
            line(f"  ! {item.output[:200]}")
        elif isinstance(item, FileSnapshot):
            verb = "changed"
            if item.before is None:
                verb = "created"
            elif item.after is None:
                verb = "deleted"
            line(f"  {verb} {item.path}")
        elif isinstance(item, TurnEnd):
            line(f"  [{item.stop_reason}]")

    return show


def _show_files(project: Path, out: Callable[[str], None]) -> None:
    names = sorted(
        p.relative_to(project).as_posix()
        for p in project.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )
    out("  files: " + ", ".join(names))
