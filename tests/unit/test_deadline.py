from __future__ import annotations

import asyncio
import time

import pytest

from rpc.deadline import Deadline
from rpc.methods import CODE_RUN, FILE_READ, PROCESS_OUTPUT
from rpc.models.code import CodeRunParams, ProcessOutputParams
from rpc.models.files import FileReadParams


def test_child_is_earlier_and_cap_never_extends() -> None:
    d = Deadline.after(10)
    assert d.child(1).at == pytest.approx(d.at - 1)
    assert d.cap(100).at == d.at
    assert d.cap(1).remaining() <= 1
    assert Deadline.after(-5).remaining() == 0 and Deadline.after(-5).expired


async def test_timeout_scope_fires_at_the_deadline() -> None:
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        async with Deadline.after(0.05).timeout():
            await asyncio.sleep(5)
    assert time.monotonic() - started < 1


def test_budget_is_the_operation_timeout_plus_slack() -> None:
    run = CodeRunParams(language="bash", code="true", timeoutMs=1000)
    assert CODE_RUN.budget_ms(run) > 1000
    assert FILE_READ.budget_ms(FileReadParams(path="a")) > FILE_READ.default_timeout_ms
    wait = ProcessOutputParams(processId="p", waitMs=5000)
    assert PROCESS_OUTPUT.budget_ms(wait) >= PROCESS_OUTPUT.default_timeout_ms + 5000
