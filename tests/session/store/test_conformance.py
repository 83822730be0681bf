"""The checkpointer contract (agent_host.session.store.conformance), run unchanged
against every backend of tests/session/store/conftest.py."""

from agent_host.session.store.conformance import *  # noqa: F403 - the checks
