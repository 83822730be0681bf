"""The VS Code extension's wire.generated.ts is what agent_host.rpc.typescript
makes from the method table now: a stale file fails here, naming the command that
refreshes it. (tests/editors/test_vscode.py compiles it with the extension.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from agent_host.rpc import methods
from agent_host.rpc.errors import ErrorCode
from agent_host.rpc.typescript import COMMAND, typescript

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "editors" / "vscode" / "src" / "protocol" / "wire.generated.ts"


def test_the_generated_typescript_is_current():
    assert GENERATED.read_text() == typescript(), (
        f"{GENERATED.relative_to(ROOT)} is stale: run `{COMMAND}` from the repository root"
    )


def test_it_declares_every_method_code_and_type():
    text = typescript()
    for method in methods.TABLE:
        assert f"= '{method}';" in text
        assert f"'{method}': {{ params: {method.params.__name__};" in text
        for cls in (method.params, method.result):
            if cls is not None:
                assert f"export interface {cls.__name__} {{" in text
    requests = re.search(r"export const REQUESTS = \[([^\]]*)\] as const;", text)
    assert requests is not None
    assert len(requests.group(1).split(", ")) == len(methods.REQUESTS)
    for code in ErrorCode:
        assert f"    {code.name}: {int(code)},\n" in text
    # optional exactly where the schema has a default; nullable where None is allowed
    send = text[text.index("export interface SendParams {") :]
    assert "    prompt: string;\n" in send
    assert "    sessionId?: string | null;\n" in send
    assert "export type Decision = 'allow_once' | 'allow_always'" in text


def test_the_cli_and_the_module_print_it():
    for argv in (
        [sys.executable, "-m", "agent_host.rpc.typescript"],
        [sys.executable, "-m", "agent_host", "schema", "--typescript"],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        assert done.stdout == typescript()
