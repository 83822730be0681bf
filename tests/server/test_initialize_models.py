"""initialize lists the provider table's example models, for an editor's model picker."""

from __future__ import annotations

from pathlib import Path

from agent_host.session.providers.registry import EXAMPLE_MODELS, PROVIDERS

from .wire import RawServer, write_script


def test_initialize_lists_the_provider_tables_models(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    server = RawServer()
    try:
        model = write_script(tmp_path / "script.json", [{"text": "ok"}])
        answer = server.initialize(workspace, tmp_path / "store", model)
        advertised = answer["result"]["capabilities"]["experimental"]["agentHost"]
        assert advertised["models"] == list(EXAMPLE_MODELS)
        assert "openai/gpt-4.1-mini" in advertised["models"]
        # every example is a name its own row opens
        for name in advertised["models"]:
            assert any(name.startswith(p.prefix) and name in p.examples for p in PROVIDERS), name
    finally:
        assert server.close() == 0
