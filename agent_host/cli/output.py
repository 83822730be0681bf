"""Printing JSON for the commands; the texts they share with the front ends are in
:mod:`agent_host.service.text`."""

from __future__ import annotations

import json
from typing import Any

from ..session.redaction import mask_json


def print_json(value: Any) -> None:
    """One JSON value on one line of stdout, flushed, with every secret masked."""
    print(json.dumps(mask_json(value), ensure_ascii=False), flush=True)
