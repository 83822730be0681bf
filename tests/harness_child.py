"""One side of the two-process harness test: ``start`` runs a turn and prints the
parked session's State; ``resume`` reads a State on stdin, runs a second turn and
prints the session as JSON. Both are given credentials the State must not keep."""

from __future__ import annotations

import json
import os
import sys

from agent_host import State, agent_resume, agent_session

SECRETS = {
    "api_key": os.environ["OPENAI_API_KEY"],
    "base_url": "http://bob:hunter2@127.0.0.1:9/v1",
}


def main(mode: str, model: str, store: str, workdir: str) -> None:
    prices = {model: (1.0, 2.0)}
    if mode == "start":
        with agent_session(
            model=model, store=store, workdir=workdir, prices=prices, **SECRETS
        ) as s:
            s.run("first prompt")
            sys.stdout.buffer.write(s.detach().dumps())
        return
    state = State.loads(sys.stdin.buffer.read())
    with agent_resume(state, prices=prices, **SECRETS) as s:
        result = s.run("second prompt")
        print(
            json.dumps(
                {
                    "session_id": s.session_id,
                    "text": result.text,
                    "cost": s.cost,
                    "history": s.history(),
                }
            )
        )


if __name__ == "__main__":
    main(*sys.argv[1:])
