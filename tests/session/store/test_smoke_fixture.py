from agent_host.session.events import UserPrompt


async def test_fixture_opens_each_backend(store, backend):
    assert await store.append("s", [UserPrompt(text="x")]) == 1
    assert [e.text for e in await backend.open().read("s")] == ["x"]
