"""The scripted provider: deterministic playback for CI, demos and tests."""

from __future__ import annotations

import json
import time

import pytest

from agent_host.session.errors import ModelError
from agent_host.session.model import (
    Finish,
    ModelRequest,
    TextDelta,
    ToolCallRequest,
    UsageReport,
)
from agent_host.session.providers import ModelConfigError, ScriptExhausted, open_provider
from agent_host.session.providers.scripted import text_chunks

STEPS = [
    {
        "text": "I will write the file now.",
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "a.py", "content": "print(1)"}},
            {"name": "read_file", "arguments": {"path": "a.py"}},
        ],
        "usage": {"input_tokens": 10, "output_tokens": 5},
    },
    {"text": "Done: a.py prints one.", "stop_reason": "max_tokens"},
]


def script(tmp_path, steps=STEPS, name="script.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"steps": steps}))
    return str(path)


def turn(step: int, **kwargs) -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": "write a.py"}], step=step, **kwargs)


async def play(provider, request: ModelRequest) -> list:
    return [event async for event in provider.stream(request)]


async def test_plays_the_step_the_session_is_at(tmp_path):
    provider = open_provider(f"scripted:{script(tmp_path)}")
    assert provider.model == f"scripted:{tmp_path / 'script.json'}"
    first = await play(provider, turn(0))
    assert first == [
        TextDelta("I will write "),
        TextDelta("the file now."),
        ToolCallRequest("call_0_0", "write_file", {"path": "a.py", "content": "print(1)"}),
        ToolCallRequest("call_0_1", "read_file", {"path": "a.py"}),
        UsageReport(10, 5),
        Finish("tool_use"),
    ]
    # the same step again (a replay after a restore) plays the same events
    assert await play(provider, turn(0)) == first
    second = await play(provider, turn(1))
    assert "".join(e.text for e in second if isinstance(e, TextDelta)) == "Done: a.py prints one."
    # without a usage entry the output is estimated from the text
    assert second[-2:] == [
        UsageReport(second[-2].input_tokens, len(STEPS[1]["text"]) // 4),
        Finish("max_tokens"),
    ]
    await provider.close()


def test_text_chunks_keep_every_character():
    text = "  one two three\nfour  five six seven "
    chunks = text_chunks(text)
    assert "".join(chunks) == text
    assert chunks == ["  one two three\n", "four  five six ", "seven "]
    assert text_chunks("") == []
    assert text_chunks(" \n") == [" \n"]


async def test_delay_ms_spaces_the_deltas_and_calls(tmp_path):
    steps = [{"text": "a b c d e f g", "tool_calls": [{"name": "list_files"}], "delay_ms": 60}]
    provider = open_provider(f"scripted:{script(tmp_path, steps)}")
    started = time.monotonic()
    stamps = [(started, None)]
    async for event in provider.stream(turn(0)):
        stamps.append((time.monotonic(), event))
    kinds = [type(e).__name__ for _, e in stamps[1:]]
    assert kinds == ["TextDelta"] * 3 + ["ToolCallRequest", "UsageReport", "Finish"]
    # before the first chunk, between chunks, and before the call
    gaps = [b[0] - a[0] for a, b in zip(stamps[:4], stamps[1:5], strict=True)]
    assert all(gap >= 0.05 for gap in gaps), gaps


async def test_an_exhausted_script_is_a_model_error(tmp_path):
    path = script(tmp_path)
    provider = open_provider(f"scripted:{path}")
    with pytest.raises(ScriptExhausted) as caught:
        await play(provider, turn(2))
    assert isinstance(caught.value, ModelError)
    assert str(caught.value) == (
        f"scripted model {path} has 2 steps; the session asked for step 2 (the script is exhausted)"
    )


async def test_compaction_summarises_without_consuming_a_step(tmp_path):
    provider = open_provider(f"scripted:{script(tmp_path)}")
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "write a.py"},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "tool_call_id": "c", "content": "ok"},
        {"role": "assistant", "content": "wrote it"},
        {"role": "user", "content": "y" * 500},
        {"role": "user", "content": "Summarise the conversation. " + "x" * 3000},
    ]
    # step 5 is past the script's end: compaction must not care
    request = ModelRequest(messages=messages, step=5, purpose="compaction")
    events = await play(provider, request)
    assert isinstance(events[-1], Finish) and isinstance(events[-2], UsageReport)
    summary = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert summary.startswith("Summary of 6 messages: user asked: write a.py")
    assert "last answer: wrote it" in summary
    assert "y" * 100 in summary  # the last prompt of the conversation is in it...
    assert "Summarise" not in summary and "xxx" not in summary  # ...the instruction is not
    assert len(summary) <= 1000
    assert await play(provider, turn(0)) == await play(provider, turn(0))


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        (None, "does not exist"),
        ("{nope", "is not valid JSON"),
        ('{"step": []}', 'must be an object with a "steps" list'),
        ('{"steps": [{"txt": "typo"}]}', "steps[0] has unknown keys ['txt']"),
        ('{"steps": [{"tool_calls": [{"arguments": {}}]}]}', "steps[0].tool_calls[0] must be"),
        ('{"steps": [{"delay_ms": -1}]}', "steps[0].delay_ms must be a number >= 0"),
        ('{"steps": [{"stop_reason": "done"}]}', "steps[0].stop_reason must be one of"),
        ('{"steps": [{"usage": {"input_tokens": 1}}]}', "steps[0].usage must be"),
    ],
)
def test_a_bad_script_file_names_the_file_and_the_problem(tmp_path, content, complaint):
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ModelConfigError) as caught:
        open_provider(f"scripted:{path}")
    assert str(path) in str(caught.value) and complaint in str(caught.value)


def test_a_scripted_summary_carries_an_earlier_one_forward_without_its_heading():
    from agent_host.session.conversation import summary_text
    from agent_host.session.providers.scripted import compaction_summary

    summary = compaction_summary(
        [
            {"role": "user", "content": summary_text("Summary of 2 messages: user asked: one")},
            {"role": "user", "content": "two"},
            {"role": "assistant", "content": "a2"},
        ]
    )
    assert summary == (
        "Summary of 3 messages: earlier: Summary of 2 messages: user asked: one "
        "user asked: two last answer: a2"
    )
