"""browser.snapshot: the page's visible text plus its interactive elements, one ref per line."""

from __future__ import annotations

import contextlib
import re
from typing import TYPE_CHECKING

from rpc.models.browser import SnapshotParams, SnapshotResult
from sandbox_image.browser.background import quietly, spawn
from sandbox_image.browser.elements import capture
from sandbox_image.browser.errors import PlaywrightError
from sandbox_image.browser.tab import Tab
from sandbox_image.browser.timeouts import Budget

if TYPE_CHECKING:
    from playwright.async_api import Frame

_BLANK_RUNS = re.compile(r"\n{3,}")
MAX_FRAMES = 20  # iframes whose text is included
FRAME_TEXT_TIMEOUT_MS = 2000


def tidy_text(text: str) -> str:
    """Trailing spaces off, at most one blank line in a row."""
    lines = (line.rstrip() for line in text.replace("\r\n", "\n").split("\n"))
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()


async def _frame_text(tab: Tab, frame: Frame, timeout_ms: float) -> str:
    """innerText of a frame's body (read in Playwright's isolated world)."""
    body = frame.locator("css=body")
    if await tab.guard(body.count()) == 0:  # framesets, XML or SVG documents
        body = frame.locator("css=:root")
        if await tab.guard(body.count()) == 0:
            return ""
    return await tab.guard(body.first.inner_text(timeout=timeout_ms))


async def visible_text(tab: Tab, budget: Budget) -> str:
    """The main frame's text, then that of its iframes (each after a blank line)."""
    page = tab.check()
    parts = [await _frame_text(tab, page.main_frame, budget.ms())]
    for frame in page.frames[1 : MAX_FRAMES + 1]:
        with contextlib.suppress(PlaywrightError):  # detached meanwhile, or too slow: leave it out
            element = await tab.guard(frame.frame_element())
            visible = await tab.guard(element.is_visible())
            spawn(quietly(element.dispose()))
            if visible:  # a hidden (tracking) frame's innerText would be its raw textContent
                parts.append(await _frame_text(tab, frame, min(budget.ms(), FRAME_TEXT_TIMEOUT_MS)))
    return tidy_text("\n\n".join(part for part in parts if part.strip()))


async def snapshot(tab: Tab, params: SnapshotParams, budget: Budget) -> SnapshotResult:
    model = await capture(tab, budget)
    text = await visible_text(tab, budget)
    lines = [element.line() for element in model.elements[: params.maxElements]]
    return SnapshotResult(
        tabId=tab.id,
        url=tab.url,
        title=await tab.title(),
        text=text[: params.maxTextLen],
        elements="\n".join(lines),
        elementCount=len(model.elements),
        truncated=len(text) > params.maxTextLen or len(model.elements) > params.maxElements,
    )
