"""browser.scrape: the page a tab shows now, read as scrape reads a page.

What `scrape` cannot reach: the page after the caller's own clicks, typing, "load more" or login, in
the session that holds them. No navigation and no wait — the tab is read as it is (browser_wait_for_stable
first for a page still loading); the live page is not changed (annotate.js marks a clone). It runs on the
tab's lock like every tab operation (BrowserService.perform), so no other call acts on the tab meanwhile.
"""

from __future__ import annotations

import contextlib

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.scrape import BrowserScrapeParams, BrowserScrapeResult
from sandbox_image.browser.errors import PlaywrightError, PlaywrightTimeoutError
from sandbox_image.browser.tab import Tab
from sandbox_image.browser.timeouts import Budget
from sandbox_image.browser.urls import ERROR_PAGE, redact
from sandbox_image.scrape import loading, reading

_CONTENT_TYPE = "() => document.contentType || ''"


async def scrape_tab(tab: Tab, params: BrowserScrapeParams, budget: Budget) -> BrowserScrapeResult:
    page = tab.check()
    try:
        async with budget.timeout():
            rereads = 0
            while True:
                try:
                    return await _read(tab, params, budget)
                except PlaywrightError as exc:
                    if not reading.navigated(exc) or rereads == reading.NAVIGATION_REREADS:
                        raise
                rereads += 1
                # The tab went on to another document (a redirect, a failed navigation's error page still
                # coming in): read that one once it is there.
                with contextlib.suppress(PlaywrightError, PlaywrightTimeoutError):
                    await tab.guard(page.wait_for_load_state("domcontentloaded", timeout=budget.ms()))
    except TimeoutError:
        raise BoxwrightError(
            ErrorCode.OPERATION_TIMEOUT,
            f"reading {redact(tab.url)} on {tab.id} took over {budget.total_ms} ms",
            hint="give a larger timeoutMs, or read less of it: includeTags, onlyMainContent=true, no includeIframes",
            details={"tabId": tab.id, "timeoutMs": budget.total_ms},
        ) from None


async def _read(tab: Tab, params: BrowserScrapeParams, budget: Budget) -> BrowserScrapeResult:
    page = tab.check()
    shown = loading.Loaded(None, loading.media_type(await tab.guard(page.evaluate(_CONTENT_TYPE))), None)
    if not (shown.is_html or shown.is_text):
        raise loading.unsupported(tab.url, shown.content_type, params.format)
    await reading.check_size(tab)
    frames_s = await reading.frames_budget(tab, params, budget.remaining()) if shown.is_html else None
    read = await reading.read_text(tab, params.format, params, is_html=shown.is_html, frames_s=frames_s)
    # Checked after the read: a failed navigation's error page may come in while the read starts.
    if tab.url.startswith(ERROR_PAGE):
        raise BoxwrightError(
            ErrorCode.NAVIGATION_FAILED,
            f"tab {tab.id} shows the browser's error page: its last navigation failed, there is no page to read",
            hint="open the page again with browser_goto (its error says why it failed), then call browser_scrape",
            details={"tabId": tab.id},
        )
    return BrowserScrapeResult(
        tabId=tab.id,
        url=tab.url,
        title=read.title or await tab.title(),
        format=params.format,
        contentType=shown.content_type,
        metadata=read.metadata,
        elapsedMs=budget.elapsed_ms(),
        **read.fields,
    )
