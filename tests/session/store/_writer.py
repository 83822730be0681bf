"""Writers for the multi-process store tests (test_concurrency, test_crash).

Run as a script in a separate OS process: ``python _writer.py '<json config>'``.
The config's ``mode`` picks the job:

* ``turns``: one of several concurrent writers appending ``n`` tagged batches to
  one session, either with an ``expected_head`` retry loop (``cas``) or blind;
  writes what it did (returned heads, conflicts) to ``out`` as JSON.
* ``crash``: appends tagged batches to one session until it is killed; after each
  acknowledged append it appends ``"<head> <round> <k> <n>"`` to ``ack`` and
  fsyncs it, so the ack file only ever names appends the store acknowledged.

The test modules import :func:`run_turns` and :func:`batch` to run the same
writer as asyncio tasks for the in-process memory store.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time

from agent_host.session import CheckpointConflictError, open_store
from agent_host.session.events import AssistantMessage, Event, ToolCall, ToolResult, UserPrompt

BIG = 64 * 1024
THINK = 0.001  # seconds a turn may pause before and after its append (random)


def batch(prefix: str, n: int, big_at: int | None = None) -> list[Event]:
    """``n`` events tagged ``"<prefix>-<i>/<n>"`` (i = 1..n): a prompt, then replies.

    The event at position ``big_at`` (1-based) carries ~64 KB of text after its tag.
    """
    events: list[Event] = []
    for i in range(1, n + 1):
        tag = f"{prefix}-{i}/{n}"
        if i == 1:
            events.append(UserPrompt(text=tag))
        elif i == big_at:
            events.append(AssistantMessage(text=tag + " " + "x" * BIG))
        elif i == 3:
            events.append(ToolCall(call_id=tag, name="read_file", arguments={"path": tag}))
        elif i == 4:
            events.append(ToolResult(call_id=tag, output="ok"))
        else:
            events.append(AssistantMessage(text=tag))
    return events


def tag_of(event: Event) -> str:
    """The tag :func:`batch` gave ``event`` (its text or call id, without padding)."""
    if isinstance(event, ToolCall | ToolResult):
        return event.call_id
    return event.text.split(" ", 1)[0]  # type: ignore[attr-defined]


async def run_turns(
    store, session_id: str, worker: int, n: int, cas: bool, seed: int, start=None
) -> dict:
    """Append ``n`` batches ``w<worker>-<turn>-<i>/<k>`` (k = 2..4) to ``session_id``.

    ``start`` is awaited first (a barrier). With ``cas`` each append passes the head
    just read and retries on conflict; otherwise it appends blind. Returns the
    returned head and size of each batch, and how many conflicts were retried.
    """
    rng = random.Random(seed)
    if start is not None:
        await start()
    appended: list[list[int]] = []
    conflicts = 0
    for turn in range(n):
        k = rng.randint(2, 4)
        events = batch(f"w{worker}-{turn}", k)
        while True:
            if cas:
                head = await store.head(session_id)
                # Think between read and write, as a real turn would: lets other
                # writers (processes or tasks) get in between.
                await asyncio.sleep(rng.random() * THINK)
                try:
                    new_head = await store.append(session_id, events, expected_head=head)
                except CheckpointConflictError:
                    conflicts += 1
                    continue
                if new_head != head + k:
                    raise AssertionError(f"append from head {head} of {k} returned {new_head}")
            else:
                await asyncio.sleep(rng.random() * THINK)
                new_head = await store.append(session_id, events)
            break
        appended.append([turn, k, new_head])
        await asyncio.sleep(rng.random() * THINK)
    return {"worker": worker, "appended": appended, "conflicts": conflicts}


async def _turns_main(cfg: dict) -> None:
    store = open_store(cfg["url"])

    async def start() -> None:
        # Tell the test we are ready, then wait for everyone's go.
        with open(cfg["ready"], "w"):
            pass
        deadline = time.monotonic() + 60
        while not os.path.exists(cfg["go"]):
            if time.monotonic() > deadline:
                raise TimeoutError("no go signal")
            time.sleep(0.0005)

    try:
        result = await run_turns(
            store, cfg["session"], cfg["worker"], cfg["n"], cfg["cas"], cfg["seed"], start
        )
    finally:
        await store.close()
    with open(cfg["out"], "w") as f:
        json.dump(result, f)


async def _crash_main(cfg: dict) -> None:
    store = open_store(cfg["url"])
    rng = random.Random(cfg["seed"])
    session_id = cfg["session"]
    ack = os.open(cfg["ack"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    head = await store.head(session_id)
    with open(cfg["ready"], "w"):
        pass
    k = 0
    while True:
        k += 1
        n = rng.randint(2, 4)
        # Every few batches one of them (never the first event) is ~64 KB, so a
        # write takes long enough for a kill to land in the middle of it.
        big_at = rng.randint(2, n) if k % 3 == 0 else None
        events = batch(f"b{cfg['round']}-{k}", n, big_at)
        head = await store.append(session_id, events, expected_head=head)
        os.write(ack, f"{head} {cfg['round']} {k} {n}\n".encode())
        os.fsync(ack)


if __name__ == "__main__":
    config = json.loads(sys.argv[1])
    main = {"turns": _turns_main, "crash": _crash_main}[config["mode"]]
    asyncio.run(main(config))
