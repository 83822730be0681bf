"""The built-in tools as the model sees them: names, descriptions, argument schemas
(one :class:`ToolSpec` each, which its row in :mod:`.registry` names)."""

from __future__ import annotations

from typing import Any

from ..limits import COMMAND_DEFAULT_TIMEOUT, COMMAND_MAX_OUTPUT, COMMAND_MAX_TIMEOUT
from ..model import ToolSpec

READ_DEFAULT_LINES = 2000
READ_MAX_LINE_CHARS = 2000
READ_MAX_CHARS = 100_000
LIST_LIMIT = 1000
GREP_MAX_MATCHES = 250
GREP_MAX_LINE_CHARS = 500
GREP_MAX_FILES = 20_000

_PATHS = (
    "Paths are relative to the workspace root (absolute paths inside the workspace "
    "also work); paths outside the workspace are refused."
)


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _path(what: str) -> dict[str, Any]:
    return {"type": "string", "description": what}


READ_FILE = ToolSpec(
    name="read_file",
    description=(
        "Read a text file. The lines come numbered like `cat -n` (line number, a "
        f"tab, the text), from line `offset` (1-based, default 1) for at most "
        f"`limit` lines (default {READ_DEFAULT_LINES}); the output says how to read "
        f"on when the file is longer. Lines over {READ_MAX_LINE_CHARS} characters "
        "are cut. A binary file is reported with its size instead of its content. "
        "The line numbers are not part of the file: leave them out of edit_file's "
        f"old_string. {_PATHS}"
    ),
    parameters=_schema(
        {
            "path": _path("The file to read."),
            "offset": {
                "type": "integer",
                "minimum": 1,
                "description": "The first line to show, 1-based. Default 1.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": f"How many lines to show. Default {READ_DEFAULT_LINES}.",
            },
        },
        ["path"],
    ),
)

WRITE_FILE = ToolSpec(
    name="write_file",
    description=(
        "Create a file, or replace an existing file's whole content, with `content` "
        "(written as UTF-8). Missing parent directories are created. To change part "
        f"of an existing file use edit_file instead. {_PATHS}"
    ),
    parameters=_schema(
        {
            "path": _path("The file to write."),
            "content": {"type": "string", "description": "The file's complete new content."},
        },
        ["path", "content"],
    ),
)

EDIT_FILE = ToolSpec(
    name="edit_file",
    description=(
        "Replace exact text in an existing file. `old_string` must match the file "
        "character for character, whitespace and indentation included, and must "
        "occur exactly once -- if it occurs more often, add surrounding lines until "
        "it is unique, or set `replace_all` to replace every occurrence. "
        "`new_string` must differ from `old_string`. Read the file first so "
        "`old_string` matches its current content. To create a file use write_file. "
        f"{_PATHS}"
    ),
    parameters=_schema(
        {
            "path": _path("The file to edit."),
            "old_string": {"type": "string", "description": "The exact text to replace."},
            "new_string": {"type": "string", "description": "The text to put in its place."},
            "replace_all": {
                "type": "boolean",
                "description": "Replace every occurrence, not exactly one. Default false.",
            },
        },
        ["path", "old_string", "new_string"],
    ),
)

DELETE_FILE = ToolSpec(
    name="delete_file",
    description=f"Delete a file (not a directory). {_PATHS}",
    parameters=_schema({"path": _path("The file to delete.")}, ["path"]),
)

LIST_FILES = ToolSpec(
    name="list_files",
    description=(
        "List the workspace's files, sorted, leaving out what .gitignore excludes and "
        "the .git directory. `pattern` is an optional glob over workspace-relative "
        "paths: `*` matches within one directory, `**` across directories, `?` one "
        "character, `{ts,tsx}` alternatives. A pattern without `/` matches file names "
        "at any depth (`*.py`); `src/*.ts` matches only directly in src; a directory "
        f"name (`src`) lists everything under it. At most {LIST_LIMIT} paths are "
        "returned."
    ),
    parameters=_schema(
        {
            "pattern": {
                "type": "string",
                "description": "A glob such as `**/*.py`, `src/*.ts` or `*.md`.",
            }
        },
        [],
    ),
)

GREP = ToolSpec(
    name="grep",
    description=(
        "Search the content of text files with a regular expression (RE2 syntax, "
        "which runs in linear time: `\\w`, `\\d`, `\\b` are ASCII; lookarounds and "
        "backreferences fall back to Python `re` under a time limit; case-sensitive "
        "unless it starts with `(?i)`; matched line by line). "
        "Searches the files under `path` (a directory or one file; default the whole "
        "workspace) that .gitignore does not exclude, optionally only those matching "
        "the glob `glob` (as in list_files, relative to `path`, e.g. `*.py`). Prints "
        f"`file:line:text` for each matching line, at most {GREP_MAX_MATCHES} lines."
    ),
    parameters=_schema(
        {
            "pattern": {"type": "string", "description": "The regular expression."},
            "path": _path("A directory or file to search. Default: the workspace root."),
            "glob": {
                "type": "string",
                "description": "Only search files matching this glob, e.g. `*.py`.",
            },
        },
        ["pattern"],
    ),
)

RUN_COMMAND = ToolSpec(
    name="run_command",
    description=(
        "Run a shell command with `/bin/sh -c` in the workspace root and return its "
        "combined stdout and stderr and its exit code. There is no terminal and no "
        "input, so do not start interactive programs. The command, and everything it "
        f"started, is killed after `timeout` seconds (default {COMMAND_DEFAULT_TIMEOUT}, "
        f"at most {COMMAND_MAX_TIMEOUT}); background processes still attached to the "
        f"output are stopped when the command ends. Output over {COMMAND_MAX_OUTPUT} "
        "characters keeps its beginning and end. Prefer read_file, edit_file and grep "
        "over cat, sed and grep in the shell."
    ),
    parameters=_schema(
        {
            "command": {"type": "string", "description": "The shell command line."},
            "timeout": {
                "type": "number",
                "minimum": 1,
                "maximum": COMMAND_MAX_TIMEOUT,
                "description": f"Seconds until killed. Default {COMMAND_DEFAULT_TIMEOUT}.",
            },
        },
        ["command"],
    ),
)
