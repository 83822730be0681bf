"""The checkpointer contract: checks any backend runs unchanged.

A backend joins with a factory, ``(tmp_path) -> Backend``; a test module imports
the checks and gives them two fixtures, ``backend`` (a :class:`Backend`) and
``store`` (``backend.open()``, closed after)::

    from agent_host.session.store.conformance import *  # noqa: F403 - the checks

    @pytest.fixture(params=["file", "sqlite", "memory"])
    def backend(request, tmp_path):
        return FACTORIES[request.param](tmp_path)

A backend that needs a server (postgres) calls :func:`server_unavailable` when it
cannot reach one: a skip on a developer's machine, a failure on CI (``CI`` or
``AGENT_HOST_REQUIRE_EDITORS=1`` set), where a skipped backend would pass unseen.

The checks are kept by topic in the conformance_* modules; this one gathers them
all, so a suite that imports it runs every check.

This module imports pytest: it is for test suites, never imported by agent-host.
"""

from agent_host.session.store.conformance_appends import *  # noqa: F403
from agent_host.session.store.conformance_backends import *  # noqa: F403
from agent_host.session.store.conformance_blobs import *  # noqa: F403
from agent_host.session.store.conformance_deltas import *  # noqa: F403
from agent_host.session.store.conformance_ids import *  # noqa: F403
from agent_host.session.store.conformance_leases import *  # noqa: F403
from agent_host.session.store.conformance_listing import *  # noqa: F403
from agent_host.session.store.conformance_snapshots import *  # noqa: F403
from agent_host.session.store.conformance_truncation import *  # noqa: F403
