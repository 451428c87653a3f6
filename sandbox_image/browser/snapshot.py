"""browser.snapshot: the page's visible text plus its interactive elements, one ref per line."""

from __future__ import annotations

import re

from rpc.models.browser import SnapshotParams, SnapshotResult
from sandbox_image.browser.elements import capture
from sandbox_image.browser.tab import Tab
from sandbox_image.browser.timeouts import Budget

_BLANK_RUNS = re.compile(r"\n{3,}")


def tidy_text(text: str) -> str:
    """Trailing spaces off, at most one blank line in a row."""
    lines = (line.rstrip() for line in text.replace("\r\n", "\n").split("\n"))
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()


async def visible_text(tab: Tab, budget: Budget) -> str:
    """innerText of the main frame's body (read in Playwright's isolated world)."""
    page = tab.check()
    body = page.locator("css=body")
    if await tab.guard(body.count()) == 0:  # framesets, XML or SVG documents
        body = page.locator("css=:root")
        if await tab.guard(body.count()) == 0:
            return ""
    return tidy_text(await tab.guard(body.first.inner_text(timeout=budget.ms())))


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
