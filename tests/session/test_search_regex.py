"""grep's regex engines: RE2 where it can, Python ``re`` in a killable child where not,
and both matching line by line exactly as Python ``re`` did."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_host.session.errors import ToolError
from agent_host.session.tools import ToolContext, run_tool
from agent_host.session.tools import regex as regex_module
from agent_host.session.tools.files import split_lines
from agent_host.session.tools.regex import PythonPattern, Re2Pattern, compile_pattern
from agent_host.session.workspace import DiskWorkspace


@pytest.fixture
def ctx(root: Path) -> ToolContext:
    async def change_file(path: str, data: bytes | None) -> None:
        raise AssertionError("grep writes nothing")

    return ToolContext(workspace=DiskWorkspace([root]), change_file=change_file)


async def grep(ctx: ToolContext, **arguments) -> tuple[bool, str]:
    outcome = await run_tool("grep", arguments, ctx)
    assert "Traceback" not in outcome.output
    return outcome.is_error, outcome.output


def test_re2_takes_ordinary_patterns_and_python_the_rest():
    for pattern in [r"(a+)+$", r"os\.\w+", r"(?i)todo", r"^def \w+\(", r"\bx\b", "é+"]:
        assert isinstance(compile_pattern(pattern), Re2Pattern), pattern
    # Python syntax RE2 refuses: lookarounds, backreferences, \Z, possessive, verbose.
    for pattern in [r"(?<=x)y", r"foo(?!bar)", r"(a)\1", r"a\Z", r"a*+", r"(?x) a b"]:
        assert isinstance(compile_pattern(pattern), PythonPattern), pattern


def test_a_pattern_neither_takes_is_a_clear_error():
    with pytest.raises(ToolError) as caught:
        compile_pattern("foo(")
    assert "invalid regular expression 'foo('" in str(caught.value)
    assert "position" in str(caught.value) and "Traceback" not in str(caught.value)


def test_re2_is_imported_lazily():
    # The server's start-up imports the tools; RE2 waits for the first grep.
    code = (
        "import sys, agent_host.server.app, agent_host.session.tools.search; "
        "print('re2' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


LINES = st.lists(st.text(alphabet="ab \t\r!é\\x", max_size=12), max_size=6)
PATTERNS = st.sampled_from(
    ["a", "^a", "a$", "^$", "b+", r"\s", "a.b", r"a\s*$", "(a|b)!", "x*", r"\bab\b", "[^a]", "é"]
)


@settings(max_examples=300, deadline=None)
@given(LINES, st.booleans(), PATTERNS)
def test_re2_matches_the_lines_python_re_matches(lines, final_newline, pattern):
    text = "\n".join(lines) + ("\n" if final_newline and lines else "")
    expected = [
        n for n, line in enumerate(split_lines(text), 1) if re.compile(pattern).search(line)
    ]
    compiled = compile_pattern(pattern)
    assert isinstance(compiled, Re2Pattern)
    assert [n for n, _ in compiled.hits(text.encode(), 1000)] == expected
    # A pattern anchored at the text's edges is matched line by line.
    anchored = compile_pattern(r"\A(?:" + pattern + ")")
    assert [n for n, _ in anchored.hits(text.encode(), 1000)] == [
        n for n, line in enumerate(split_lines(text), 1) if re.match(pattern, line)
    ]


async def test_grep_with_a_lookaround_runs_in_python(ctx, root):
    (root / "a.py").write_text("foobar\nfoobaz\r\nbarfoo\n")
    failed, out = await grep(ctx, pattern="foo(?!bar)")
    assert not failed and out == "a.py:2:foobaz\na.py:3:barfoo"
    failed, out = await grep(ctx, pattern=r"(?<=bar)foo\Z")
    assert not failed and out == "a.py:3:barfoo"


@pytest.mark.exclusive  # it times the search
async def test_grep_with_a_catastrophic_pattern_is_fast_in_re2(ctx, root):
    (root / "a.txt").write_text("a" * 30 + "!\n")
    started = time.monotonic()
    failed, out = await grep(ctx, pattern="(a+)+$")
    assert not failed and out.startswith("No matches")
    assert time.monotonic() - started < 1


@pytest.mark.exclusive  # it times the search
async def test_a_fallback_pattern_that_takes_too_long_is_stopped(ctx, root, monkeypatch):
    monkeypatch.setattr(regex_module, "FALLBACK_SECONDS", 1.0)
    (root / "a.txt").write_text("a" * 40 + "!\n")
    started = time.monotonic()
    # (?=a) makes RE2 refuse it; the rest backtracks exponentially in Python re.
    failed, out = await grep(ctx, pattern="(?=a)(a+)+$")
    elapsed = time.monotonic() - started
    assert failed and out.endswith(regex_module.TOO_SLOW)
    assert elapsed < 3, elapsed


async def test_the_fallback_child_ends_with_the_grep(ctx, root):
    (root / "a.txt").write_text("ab\n")
    async with PythonPattern("a(?=b)") as compiled:
        assert await compiled.hits(["ab", "ax", "ab"], 10) == [1, 3]
        child = compiled._child
        assert child is not None and child.returncode is None
    assert child.returncode is not None


@pytest.mark.parametrize(
    ("pattern", "line", "matches"),
    [
        (r"\bab\b", "abé", False),  # é is a word character to Python, not to RE2
        (r"\bab\b", "ab é", True),
        (r"^\w+$", "née", True),
        (r"\d", "٣", True),  # an Arabic-Indic digit
        (r"a\sb", "a\u00a0b", True),  # a no-break space
        (r"\W", "é", False),
    ],
)
def test_unicode_classes_mean_what_they_mean_in_python(pattern, line, matches):
    assert bool(re.search(pattern, line)) is matches  # the meaning grep keeps
    compiled = compile_pattern(pattern)
    assert isinstance(compiled, Re2Pattern)
    data = f"{line}\n".encode()
    assert [n for n, _ in compiled.hits(data, 10)] == ([1] if matches else [])
    # On ASCII text RE2 alone answers, as before.
    assert [n for n, _ in compiled.hits(b"ab\nab!\n", 10)] == [
        n for n in (1, 2) if re.search(pattern, ["ab", "ab!"][n - 1])
    ]


@pytest.mark.exclusive  # it times the search
async def test_a_unicode_class_pattern_that_takes_too_long_on_non_ascii_text_is_stopped(
    ctx, root, monkeypatch
):
    monkeypatch.setattr(regex_module, "FALLBACK_SECONDS", 1.0)
    (root / "a.txt").write_text("é" + "a" * 60 + "\n")
    started = time.monotonic()
    # The regex package cuts the usual catastrophic forms short; this one still
    # backtracks for seconds.
    failed, out = await grep(ctx, pattern=r"(\w*?a){25}\d")
    elapsed = time.monotonic() - started
    assert failed and out.endswith(regex_module.TOO_SLOW), out
    assert elapsed < 3, elapsed
