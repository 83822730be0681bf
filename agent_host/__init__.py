"""agent-host: an AI coding agent that editors and CI talk to over stdio."""

__version__ = "0.1.0"
