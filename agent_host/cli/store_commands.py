"""``sessions`` and ``gc``: straight to the store, in-process.

They need no model and no workspace, and gc has no protocol method, so no child
server is started.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import orjson

from ..rpc.converter import unstructure
from ..rpc.types import SessionSummary
from ..service.text import local_time
from ..session import SessionInfo, collect_garbage, open_store
from .exit_codes import EXIT_OK


async def sessions(args: argparse.Namespace) -> int:
    store = open_store(args.store)
    try:
        infos = [i for i in await store.list() if not i.empty]  # as session/list
    finally:
        await store.close()
    if args.workspace is not None:
        folder = os.path.realpath(args.workspace)
        infos = [i for i in infos if i.workspace == folder]
    for info in infos:
        if args.json:
            print(orjson.dumps(_info_json(info)).decode())
        else:
            print(f"{info.id}  {local_time(info.updated_at)}  {info.turns:>3} turns  {info.title}")
    if not infos and not args.json:
        print("no sessions", file=sys.stderr)
    return EXIT_OK


async def gc(args: argparse.Namespace) -> int:
    store = open_store(args.store)
    try:
        result = await collect_garbage(store, grace_seconds=args.grace)
    finally:
        await store.close()
    print(f"removed {result.removed} snapshots ({result.freed_bytes} bytes), kept {result.kept}")
    return EXIT_OK


def _info_json(info: SessionInfo) -> dict[str, Any]:
    # The wire's SessionSummary (session/list), so a script reads the same keys here.
    summary = SessionSummary(
        info.id,
        info.title,
        local_time(info.created_at),
        local_time(info.updated_at),
        info.turns,
        info.head,
        info.workspace,
    )
    return unstructure(summary)
