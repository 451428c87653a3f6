"""browser.scrape: the page a tab shows now, read as scrape reads a page.

What `scrape` cannot reach: the page after the caller's own clicks, typing, "load more" or login, in
the session that holds them. No navigation and no wait — the tab is read as it is (browser_wait_for_stable
first for a page still loading); the live page is not changed (annotate.js marks a clone). It runs on the
tab's lock like every tab operation (BrowserService.perform), so no other call acts on the tab meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.scrape import MAX_PAGE_BYTES, BrowserScrapeParams, BrowserScrapeResult, ScrapeMetadata
from sandbox_image.browser.errors import PlaywrightError, PlaywrightTimeoutError
from sandbox_image.browser.tab import Tab
from sandbox_image.browser.timeouts import Budget
from sandbox_image.browser.urls import ERROR_PAGE, redact
from sandbox_image.scrape import feed, loading, reading, sitemap
from sandbox_image.scrape.readers import READERS

_CONTENT_TYPE = "() => document.contentType || ''"
# The start of what a text document shows: Chromium shows a feed served as application/rss+xml as text.
_TEXT_HEAD = "() => (document.body ? document.body.innerText : '').slice(0, 4096)"


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
    if not shown.is_html and await _shows_xml(tab, shown.content_type):
        read_as_file = await _read_file(tab, params, budget, shown.content_type)
        if read_as_file is not None:
            return read_as_file
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
    return await _answer(tab, params, budget, read.title, shown.content_type, read.metadata, read.fields)


async def _shows_xml(tab: Tab, content_type: str) -> bool:
    """Whether the tab shows an XML document (in Chromium's XML viewer, or as text) that may be a feed or a
    sitemap."""
    if content_type in loading.XML_TYPES | feed.FEED_TYPES:
        return True
    if content_type != "text/plain":
        return False
    head = str(await tab.guard(tab.check().evaluate(_TEXT_HEAD)) or "").encode()
    return feed.opens_as_feed(head) or sitemap.opens_as_sitemap(head)


async def _read_file(tab: Tab, params: BrowserScrapeParams, budget: Budget, shown: str) -> BrowserScrapeResult | None:
    """A feed or a sitemap the tab shows, read as scrape reads one: its entries or the pages it lists. The DOM
    holds Chromium's rendering of it, not the file (nor its declared encoding), so the file is fetched again
    with the session's cookies; None when it turns out to be neither (then it is read as the tab shows it)."""
    response = await loading.fetch_again(
        tab, tab.url, params.format, budget.remaining() * 1000, MAX_PAGE_BYTES, "XML document"
    )
    body = response.body
    declared = loading.media_type(response.headers.get("content-type"))
    reader = loading.xml_reader(declared, shown, body)
    if reader is None:
        return None
    file = await READERS[reader](body, response.url, declared or shown, budget.remaining())
    fields = await asyncio.to_thread(file.fields, params.format, params.offset, params.maxChars)
    return await _answer(tab, params, budget, file.title, file.content_type, file.metadata, fields)


async def _answer(
    tab: Tab,
    params: BrowserScrapeParams,
    budget: Budget,
    title: str,
    content_type: str,
    metadata: ScrapeMetadata,
    fields: dict[str, Any],
) -> BrowserScrapeResult:
    return BrowserScrapeResult(
        tabId=tab.id,
        url=tab.url,
        title=title or await tab.title(),
        format=params.format,
        contentType=content_type,
        metadata=metadata,
        elapsedMs=budget.elapsed_ms(),
        **fields,
    )
