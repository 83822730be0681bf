"""JSON-RPC 2.0 as both dialects speak it (the LSP dialect's frames, ACP's lines):
what makes a message, and the bounds on what a client may send. Neither front end's
contract: ``rpc`` is the LSP dialect's, ``acp`` has its own."""
