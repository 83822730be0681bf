"""A secret, the forms an echo of it takes, and a command that prints them all: what
the redaction tests plant in the agent's environment and then look for in every
output the project makes (the store's files, the model's request bodies, stdout
frames, stderr, ``--json`` lines, errors on the wire)."""

from __future__ import annotations

import base64
from urllib.parse import quote

KEY = "sk-test-Q7vR2mXc9LpK4sT8wZ1nB6yH3jD5fG0aUeVo"
"""The model's API key (OPENAI_API_KEY of the agent's environment)."""
PASSWORD = "hunter2-Wq8Zr"
DATABASE_URL = f"postgres://bob:{PASSWORD}@db.example/app"
"""A variable the policy passes on (its name looks like no secret): its password
is still known, and masked."""


def environment() -> dict[str, str]:
    """What the agent process gets on top of the test's environment."""
    return {"OPENAI_API_KEY": KEY, "DATABASE_URL": DATABASE_URL}


LABELS = (
    "whole",
    "upper",
    "reversed",
    "spaced",
    "head",
    "tail",
    "url",
    "hex",
    "hex-upper",
    "b64",
    "basic",
    "dburl",
)

# The key is not in the command's environment (the policy drops it) or in the
# command's text (the tool call is logged): the command digs it out of the agent's
# own environment in /proc, as an injected prompt would, and prints it every way.
LEAK = r"""K=$(tr '\0' '\n' < /proc/$PPID/environ | sed -n 's/^OPENAI_API_KEY=//p')
[ -n "$K" ] || echo 'no key found in /proc'
echo "whole:$K"
echo "upper:$(printf %s "$K" | tr a-z A-Z)"
echo "reversed:$(printf %s "$K" | rev)"
echo "spaced:$(printf %s "$K" | sed 's/./& /g')"
echo "head:$(printf %s "$K" | cut -c1-12)..."
echo "tail:...$(printf %s "$K" | cut -c9-)"
echo "url:$(printf %s "$K" | od -An -tx1 | tr -d ' \n' | sed 's/../%&/g')"
hex() { xxd -p 2>/dev/null || od -An -tx1 -v | tr -d ' \n' | fold -w 60; }
echo "hex:$(printf %s "$K" | hex)"
echo "hex-upper:$(printf %s "$K" | hex | tr a-f A-F)"
echo "b64:$(printf %s "$K" | base64 -w0)"
echo "basic:$(printf %s "$DATABASE_URL" | sed 's|.*//||; s|@.*||' | tr -d '\n' | base64 -w0)"
echo "dburl:$DATABASE_URL"
echo "env-key:${OPENAI_API_KEY:-absent}"
"""


def forms() -> dict[str, str]:
    """Each form of a secret LEAK prints, as it would read unmasked."""
    b64 = base64.b64encode(KEY.encode()).decode()
    basic = base64.b64encode(f"bob:{PASSWORD}".encode()).decode()
    return {
        "whole": KEY,
        "upper": KEY.upper(),
        "reversed": KEY[::-1],
        "spaced": " ".join(KEY),
        "head": KEY[:12],
        "tail": KEY[8:],
        "url": "".join(f"%{b:02x}" for b in KEY.encode()),
        "url-upper": quote(KEY, safe="").upper(),
        # xxd -p: 60 hex digits a line, so the key's 88 come as a line of 60 and one of 28
        "hex-head": KEY.encode().hex()[:60],
        "hex-tail": KEY.encode().hex()[60:],
        "hex-upper": KEY.encode().hex()[:60].upper(),
        # the last character may hold bits of what follows: the rest is what must not show
        "b64": b64.rstrip("=")[:-1],
        "basic": basic.rstrip("=")[:-1],
        "password": PASSWORD,
    }


def leaks(text: str | bytes) -> list[str]:
    """The names of the forms found in ``text`` (empty: nothing leaked)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return [name for name, form in forms().items() if form in text]


def check_masked_output(output: str) -> None:
    """LEAK's output: it found the key, and every line of it is masked."""
    assert "no key found" not in output, output
    assert "env-key:absent" in output, "the command saw the key in its environment"
    lines = {line.split(":", 1)[0]: line for line in output.splitlines() if ":" in line}
    for label in LABELS:
        assert "[redacted]" in lines.get(label, ""), f"{label}: {lines.get(label)!r}"
    assert not leaks(output), leaks(output)
