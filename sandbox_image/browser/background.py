"""Fire-and-forget tasks (closing an abandoned page, a popup over the limit) that must not be lost."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Coroutine
from typing import Any

log = logging.getLogger("boxwright.agent.browser")

_tasks: set[asyncio.Task[Any]] = set()


def spawn(coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
    """Run `coro` in the background, holding a reference so it is not garbage-collected mid-way."""
    task = asyncio.get_running_loop().create_task(coro)
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return task


async def quietly(aw: Awaitable[Any]) -> None:
    """Await cleanup whose failure changes nothing (closing what may already be gone)."""
    try:
        await aw
    except Exception as exc:  # a dead browser, an already closed page: all fine here
        log.debug("cleanup step failed: %s", type(exc).__name__)


def close_when_done(task: asyncio.Future[Any]) -> None:
    """Done-callback for an abandoned page/context creation: close what it made, nobody will use it."""
    if not task.cancelled() and task.exception() is None:
        spawn(quietly(task.result().close()))


def consume(task: asyncio.Future[Any]) -> None:
    """Done-callback for an abandoned Playwright call: retrieve its outcome so asyncio stays quiet."""
    if not task.cancelled():
        task.exception()
