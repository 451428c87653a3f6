from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from rpc.deadline import LADDER, Deadline
from rpc.methods import ALL, RUNNER_METHODS, Method
from rpc.models.base import Params
from sandbox_image.browser.timeouts import Budget


def test_child_is_earlier_and_cap_never_extends() -> None:
    d = Deadline.after(10)
    assert d.child(1).at == pytest.approx(d.at - 1)
    assert d.cap(100).at == d.at
    assert d.cap(1).remaining() <= 1
    assert Deadline.after(-5).remaining() == 0


async def test_timeout_scope_fires_at_the_deadline() -> None:
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        async with Deadline.after(0.05).timeout():
            await asyncio.sleep(5)
    assert time.monotonic() - started < 1


def _extremes(method: Method) -> list[Params]:
    """The method's params with defaults, and with each time field (timeoutMs, waitMs) at its bounds."""
    out = [method.params.model_construct()]
    for name in ("timeoutMs", "waitMs"):
        field = method.params.model_fields.get(name)
        if field is not None:
            bounds = [getattr(m, attr) for m in field.metadata for attr in ("ge", "le") if hasattr(m, attr)]
            out += [method.params.model_construct(**{name: bound}) for bound in bounds]
    return out


def _rungs(method: Method, params: Params) -> list[tuple[str, float]]:
    """Each layer's deadline for one fresh call, asked of the ladder the way each layer asks it."""
    tool = Deadline.after(LADDER.tool_budget_s(method, params))
    rpc = LADDER.rpc(tool)
    agent = LADDER.agent(rpc)
    handler = LADDER.handler(agent, agent.remaining_ms())
    if method.name in RUNNER_METHODS:  # the agent forwards to the runner daemon: one handler more
        handler = LADDER.handler(handler, handler.remaining_ms())
    operation = LADDER.operation(handler, getattr(params, "timeoutMs", None) or getattr(params, "waitMs", None))
    return [
        ("operation", operation.at),
        ("handler", handler.at),
        ("agent", agent.at),
        ("rpc", rpc.at),
        ("tool", tool.at),
    ]


@pytest.mark.parametrize("method", ALL, ids=[m.name for m in ALL])
def test_every_method_fires_innermost_first(method: Method) -> None:
    """in-container operation < agent handler < agent deadline < RPC backstop < tool backstop."""
    for params in _extremes(method):
        rungs = _rungs(method, params)
        times = [at for _, at in rungs]
        # Strictly in order, each gap a real margin rather than a rounding accident.
        assert all(b - a >= 0.01 for a, b in itertools.pairwise(times)), (params, rungs)
        # ...and the operation gets all of its own timeout: its timeout fires, not a layer's cut.
        own = getattr(params, "timeoutMs", None)
        if own is not None:
            assert times[0] == pytest.approx(time.monotonic() + own / 1000, abs=0.05), (params, rungs)


def test_the_operation_keeps_its_own_timeout_when_the_ladder_has_room() -> None:
    handler = Deadline.after(60)
    assert LADDER.operation(handler, 1000).remaining() == pytest.approx(1.0, abs=0.05)
    assert LADDER.operation(Deadline.after(1), 60_000).remaining() == pytest.approx(1 - LADDER.operation_s, abs=0.05)


def test_the_browser_budget_is_the_operation_rung() -> None:
    handler = Deadline.after(5)
    budget = Budget.of(handler, 2000)
    assert isinstance(budget, Deadline)
    assert budget.at == pytest.approx(LADDER.operation(handler, 2000).at, abs=0.01)
    assert budget.total_ms == pytest.approx(2000, abs=20) and budget.ms() <= 2000
    late = Budget.of(Deadline.after(0), None)
    assert late.ms() == 1.0 and late.seconds() == 0.0  # never Playwright's "no timeout"
