"""The ``agent-host`` process's exit codes."""

EXIT_OK = 0
EXIT_FAILED = 1  # an error from the server, a turn that did not end with end_turn
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # Ctrl-C
