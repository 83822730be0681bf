"""Summary.extend folds a batch of events exactly as adding them one by one does."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from agent_host.session.events import AssistantMessage, SessionStarted, UserPrompt
from agent_host.session.store.summary import Summary

texts = st.text(max_size=120)
events = st.one_of(
    st.builds(UserPrompt, text=texts),
    st.builds(AssistantMessage, text=texts),
    st.builds(
        SessionStarted,
        title=st.one_of(st.none(), texts),
        workspace=st.one_of(st.none(), st.sampled_from(["/a", "/b", ""])),
    ),
)


def stamped(batch: list) -> list:
    for n, event in enumerate(batch, 1):
        event.seq, event.ts = n, 1000.0 + n
    return batch


@given(st.lists(st.lists(events, max_size=12), max_size=4))
@example([[UserPrompt(text=""), UserPrompt(text="0")]])  # a blank prompt is no title
@settings(max_examples=300)
def test_extend_equals_adding_one_by_one(batches):
    flat = stamped([e for batch in batches for e in batch])
    one_by_one, in_batches = Summary(), Summary()
    for event in flat:
        one_by_one.add(event)
    start = 0
    for batch in batches:
        in_batches.extend(flat[start : start + len(batch)])
        start += len(batch)
    assert in_batches == one_by_one
