"""The model time limits' flags, one per row of ``providers.limits.SETTINGS``, and
the values they gave, as AgentHost's ``model_*`` arguments."""

from __future__ import annotations

import argparse
from typing import Any

from ..session.providers import limits
from ..session.providers.errors import ModelConfigError


def add_limit_flags(parser: argparse.ArgumentParser) -> None:
    for setting in limits.SETTINGS:
        default = "; ".join(
            [f"{setting.default:g}"]
            + [f"{scope} {v:g}" for scope, v in limits.row_defaults(setting).items()]
        )
        parser.add_argument(
            setting.flag,
            type=_checked(setting),
            dest=setting.option,
            metavar="N" if setting.integer else "SECONDS",
            help=f"{setting.what}: a number, or per provider such as '20,ollama=90' "
            f"(default ${setting.env}, else {default})",
        )


def _checked(setting: limits.Setting) -> Any:
    """Checks the text as the engine will (argparse makes the error a usage error
    naming the flag); the engine gets the text."""

    def check(text: str) -> str:
        try:
            limits.parse(setting, text, setting.flag)
        except ModelConfigError as exc:
            raise argparse.ArgumentTypeError(
                str(exc).removeprefix(setting.flag).lstrip(": ")
            ) from None
        return text

    return check


def limits_of(args: argparse.Namespace) -> dict[str, Any]:
    """The limits the flags gave (those not given left out)."""
    given = {s.option: getattr(args, s.option, None) for s in limits.SETTINGS}
    return {k: v for k, v in given.items() if v is not None}
