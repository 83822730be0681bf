"""The pygls language server that maps ``session/*`` methods onto the engine.

Empty until the stdio server is built; it will import ``agent_host.session`` and
``agent_host.rpc``, never the other way round.
"""
