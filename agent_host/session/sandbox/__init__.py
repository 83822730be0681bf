"""Commands and stdio MCP servers confined by a policy (bubblewrap on Linux).

- :mod:`.policy`: the policy as data (modes, writable, deny, network, limits)
- :mod:`.detect`: whether bubblewrap can confine anything here
- :mod:`.bwrap`: a policy as a bubblewrap command line and rlimits
- :mod:`.confine`: a host's sandbox, and how a command is launched under it
- :mod:`.denial`: whether a failed command was stopped by the sandbox
"""

from .confine import (
    Launch,
    Sandbox,
    current_roots,
    current_sandbox,
    default_sandbox,
    sandbox_in_force,
    unconfined,
    using_sandbox,
)
from .detect import Mechanism, mechanism
from .policy import (
    SANDBOX_MODES,
    SECRET_PLACES,
    Limits,
    SandboxMode,
    SandboxPolicy,
    as_sandbox_policy,
    check_mode,
)

__all__ = [
    "SANDBOX_MODES",
    "SECRET_PLACES",
    "Launch",
    "Limits",
    "Mechanism",
    "Sandbox",
    "SandboxMode",
    "SandboxPolicy",
    "as_sandbox_policy",
    "check_mode",
    "current_roots",
    "current_sandbox",
    "default_sandbox",
    "mechanism",
    "sandbox_in_force",
    "unconfined",
    "using_sandbox",
]
