"""The Neovim plugin: line endings, no final newline, beyond ASCII, new and deleted
files (edge.lua).

The harness (finding Neovim, running a scenario) is in neovim_harness.py.
"""

from __future__ import annotations

import pytest

from .neovim_harness import run_scenario

# -- line endings, no final newline, beyond ASCII, new and deleted files -----------


@pytest.fixture(scope="module")
def edge(nvim, tmp_path_factory):
    calls = [
        {
            "name": "edit_file",
            "arguments": {"path": "dos.txt", "old_string": "two", "new_string": "deux"},
        },
        {
            "name": "edit_file",
            "arguments": {"path": "noeol.txt", "old_string": "x = 1", "new_string": "x = 2"},
        },
        {
            "name": "edit_file",
            "arguments": {"path": "uni.txt", "old_string": "x'", "new_string": "y'"},
        },
        {"name": "write_file", "arguments": {"path": "new.txt", "content": "fresh\n"}},
        {"name": "delete_file", "arguments": {"path": "gone.txt"}},
    ]
    files = {
        "dos.txt": "one\r\ntwo\r\n",
        "noeol.txt": "x = 1",
        "uni.txt": "a = 'héllo'\nb = '😀 x'",
        "gone.txt": "bye\n",
    }
    steps = [{"text": "All of them.", "tool_calls": calls}, {"text": "Done."}]
    return run_scenario(nvim, tmp_path_factory.mktemp("edge"), "edge", steps, files)


def test_edits_keep_line_endings_and_missing_final_newline(edge):
    assert edge["loaded"] == {"dos_ff": "dos", "noeol_eol": False}
    after = edge["after"]
    assert after["dos.txt"]["disk"] == "one\r\ndeux\r\n"
    assert after["dos.txt"]["lines"] == ["one", "deux"]
    assert after["dos.txt"]["ff"] == "dos"
    assert after["noeol.txt"]["disk"] == "x = 2"
    assert after["noeol.txt"]["lines"] == ["x = 2"]
    assert after["noeol.txt"]["eol"] is False
    assert after["uni.txt"]["disk"] == "a = 'héllo'\nb = '😀 y'"
    assert after["uni.txt"]["lines"] == ["a = 'héllo'", "b = '😀 y'"]
    for name in ("dos.txt", "noeol.txt", "uni.txt"):
        assert after[name]["modified"] is False, name
    # each went the reload way: the whole-document edit was recognised
    assert [e["how"] for e in edge["edits_log"]] == ["reloaded from the file"] * 3


def test_new_file_stays_on_disk_and_deleted_file_keeps_its_buffer(edge):
    assert edge["new_file_disk"] == "fresh\n"
    assert edge["new_file_buffer"] is False
    gone = edge["after"]["gone.txt"]
    assert gone["disk"] is None
    assert gone["lines"] == ["bye"]
    assert "gone.txt no longer matches the file on disk" in edge["messages"]
