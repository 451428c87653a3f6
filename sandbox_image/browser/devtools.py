"""A tab's own DevTools session, opened with its page: the way out of a page stuck in its own script.

A page whose script never returns (`while (true) {}` in a timer, a runaway loop) blocks its renderer's
main thread, and with it everything Playwright does on the page — snapshots, clicks, screenshots, even a
navigation to another page of the same site waits for it. Chromium still takes
Runtime.terminateExecution, but only from a session attached before the page got stuck (one attached
afterwards waits for the page too). So each page gets its session when the tab takes it; the session
survives the page's navigations, including to other sites.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from sandbox_image.browser.background import spawn
from sandbox_image.browser.errors import PlaywrightError

if TYPE_CHECKING:
    from playwright.async_api import CDPSession, Page

# A page that does not evaluate `1` in this long is taken to be stuck in a script (a live one answers
# in milliseconds; a busy machine in tens).
PROBE_S = 0.5
# Chromium answers terminateExecution and stopLoading at once; past this, the page is past helping.
SEND_S = 2.0


class PageDevtools:
    """The DevTools session of one page (None once it could not be opened: the page closed first)."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self._opening = spawn(self._open())

    async def _open(self) -> CDPSession | None:
        try:
            return await self.page.context.new_cdp_session(self.page)
        except PlaywrightError:
            return None

    async def send(self, method: str, timeout_s: float = SEND_S, **params: Any) -> dict[str, Any] | None:
        """The answer, or None when it did not come in time (or the page is gone)."""
        with contextlib.suppress(PlaywrightError, TimeoutError):
            async with asyncio.timeout(max(0.0, timeout_s)):
                session = await asyncio.shield(self._opening)
                if session is not None:
                    return await session.send(method, params or None)
        return None

    async def answers(self, timeout_s: float = PROBE_S) -> bool:
        """Whether the page's main thread runs a trivial script in time."""
        return await self.send("Runtime.evaluate", timeout_s, expression="1") is not None

    async def stop_script(self, timeout_s: float = SEND_S) -> bool:
        """End the script the page is running (its event loop goes on); whether Chromium confirmed it."""
        return await self.send("Runtime.terminateExecution", timeout_s) is not None

    async def unstick(self, timeout_s: float) -> bool:
        """If the page is stuck in a script, stop that script; whether one was stopped."""
        probe = min(PROBE_S, timeout_s / 2)
        if probe <= 0 or await self.answers(probe):
            return False
        return await self.stop_script(timeout_s - probe)

    async def stop_loading(self, timeout_s: float = SEND_S) -> None:
        """Stop a navigation of the main frame, as the browser's Stop button does."""
        await self.send("Page.stopLoading", timeout_s)
