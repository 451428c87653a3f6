"""The spare: a blank context and its first page, opened before anyone asked (the warm pool's browser prewarm).

With browser_prelaunch (a pooled sandbox with BOXWRIGHT_POOL_BROWSER) Chromium launches when the agent
starts; opening a context and a page right after leaves the claimant's first browser call nothing but its
navigation (the context and page cost ~0.4 s on a quiet machine). The spare is made with the options every
session without a login profile uses (launch.context_options), so the first such session takes it as its
own context and first tab: an about:blank page in a context nobody has used — exactly what it would have
made itself. The first context made with any other options (a session from a login profile) closes the
spare instead: it is never kept beside real sessions, and it is counted nowhere (not in browser_sessions'
lists, not in the browser's open counts) while it waits.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from sandbox_image.browser.background import quietly, spawn

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page

log = logging.getLogger("boxwright.agent.browser")

Opened = tuple["BrowserContext", "Page"]


class Spare:
    def __init__(self) -> None:
        self._task: asyncio.Task[Opened] | None = None  # None once taken or discarded

    def open(self, make: Callable[[], Awaitable[Opened]]) -> None:
        """Start opening the spare in the background (no-op when one is already there or on its way)."""
        if self._task is not None:
            return

        async def run() -> Opened:
            context, page = await make()
            log.info("spare browser context and tab open for the first session")
            return context, page

        self._task = spawn(run())
        self._task.add_done_callback(self._opened)

    def _opened(self, task: asyncio.Task[Opened]) -> None:
        if task.cancelled():
            return
        if task.exception() is not None:  # retrieved here; the first browser call simply makes its own
            log.info("the spare browser context could not be opened: %s", type(task.exception()).__name__)

    async def wait_opened(self) -> bool:
        """Until the spare is open (or failed); whether there is one waiting (for tests and benchmarks)."""
        task = self._task
        if task is None:
            return False
        await asyncio.wait([task])
        return self._task is task and not task.cancelled() and task.exception() is None

    def is_spare(self, context: BrowserContext) -> bool:
        """Whether `context` is the spare, opened and still waiting (a taken one is its session's)."""
        task = self._task
        if task is None or not task.done() or task.cancelled() or task.exception() is not None:
            return False
        return task.result()[0] is context

    async def take(self) -> Opened | None:
        """The spare's context and page, once, waiting for them if they are still being opened; None when
        there is none (never made, taken already, failed, or its page is gone)."""
        task, self._task = self._task, None
        if task is None:
            return None
        try:
            context, page = await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.done():  # our caller gave up: whatever the task makes is nobody's
                task.add_done_callback(_close_opened)
            raise
        except Exception:
            return None
        if page.is_closed():
            await quietly(context.close())
            return None
        return context, page

    def discard(self) -> None:
        """Close the spare (another kind of context came first, or the browser went away)."""
        task, self._task = self._task, None
        if task is None:
            return
        if task.done():
            _close_opened(task)
        else:
            task.add_done_callback(_close_opened)


def _close_opened(task: asyncio.Future[Opened]) -> None:
    """Done-callback: close the context a spare task opened (its page goes with it), if it opened one."""
    if not task.cancelled() and task.exception() is None:
        spawn(quietly(task.result()[0].close()))
