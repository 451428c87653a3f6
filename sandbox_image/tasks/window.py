"""The sliding window of seed 001 §5.1: at most `size` units of work at once, started in input order."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


async def sliding_window(
    count: int,
    size: int,
    work: Callable[[int], Awaitable[None]],
    may_start: Callable[[], bool],
) -> None:
    """Run work(0) … work(count - 1), `size` at a time; as one ends the next starts, until may_start() says
    no (canceled, out of time). `work` reports its own failures: it is not expected to raise."""
    next_index = 0

    async def lane() -> None:
        nonlocal next_index
        while next_index < count and may_start():
            index = next_index
            next_index += 1
            await work(index)

    async with asyncio.TaskGroup() as group:
        for _ in range(max(1, min(size, count))):
            group.create_task(lane())
