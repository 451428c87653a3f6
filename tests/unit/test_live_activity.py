"""The live view's "the agent is acting" feed (host.live.activity): a viewer that reads slowly or not at
all gets the latest state when it reads, and nothing is queued for it meanwhile."""

from __future__ import annotations

import anyio
import pytest

from host.live.activity import Activity

KEY = ("sbx_1", "session_1")


@pytest.mark.anyio
async def test_a_viewer_that_stalls_gets_the_latest_state_and_nothing_is_queued() -> None:
    activity = Activity()
    with activity.subscribe(*KEY) as states:
        for i in range(20_000):  # tool calls while the viewer's socket is stalled
            with activity.marked(*KEY, f"tool_{i}"):
                pass
        watch = activity._subscribers[KEY][0]
        assert watch._event.is_set()  # one flag, however many changes: the old stream held 40 000 states
        with anyio.fail_after(5):
            assert await anext(states) == (False, None)  # the latest, not the first of 40 000
        with activity.marked(*KEY, "browser_click"), anyio.fail_after(5):
            assert await anext(states) == (True, "browser_click")
        with anyio.fail_after(5):
            assert await anext(states) == (False, None)  # the call ended
        with anyio.move_on_after(0.1) as quiet:
            await anext(states)  # no change since: nothing to read
        assert quiet.cancelled_caught
    assert KEY not in activity._subscribers


@pytest.mark.anyio
async def test_every_viewer_of_a_session_is_told() -> None:
    activity = Activity()
    with activity.subscribe(*KEY) as first, activity.subscribe(*KEY) as second:
        with activity.marked(*KEY, "browser_type"), anyio.fail_after(5):
            assert await anext(first) == await anext(second) == (True, "browser_type")
        assert activity.acting(*KEY) is False
        with (
            activity.subscribe("sbx_1", "session_2") as other,
            anyio.move_on_after(0.1) as quiet,
            activity.marked(*KEY, "browser_click"),
        ):
            await anext(other)
        assert quiet.cancelled_caught  # another session's viewer is not woken
