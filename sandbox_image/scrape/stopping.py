"""Stopping an extraction whose caller has gone: a worker thread cannot be cancelled, so one whose scrape
timed out (or was cancelled) ran on to its end — minutes of a core on a page that is slow to read.

The extraction checks, between its steps (each extractor, the block features), whether the call that
started it still waits; the flag travels with the thread's context (asyncio.to_thread copies it).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

_STOP: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("extraction_stop", default=None)


class Stopped(BaseException):
    """The caller gave up: the extraction ends here (a BaseException, so no extractor's `except Exception`
    takes it for one more failed vote)."""


def check() -> None:
    stop = _STOP.get()
    if stop is not None and stop.is_set():
        raise Stopped


async def in_thread(func: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`asyncio.to_thread`, stopped at its next check when the awaiting call is cancelled."""
    stop = threading.Event()
    token = _STOP.set(stop)
    try:
        return await asyncio.to_thread(func, *args, **kwargs)
    finally:
        stop.set()  # done already, or its caller went: either way nothing more is wanted of it
        _STOP.reset(token)
