"""What scrape sends back, kept within one MCP message: text and links capped, screenshots cut.

A result that does not fit is cut and flagged (`truncated`), never refused: the caller gets the
first part of a huge page, and knows it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rpc.models.scrape import (
    MAX_FULL_PAGE_HEIGHT,
    MAX_LINKS,
    MAX_LINKS_BYTES,
    MAX_SCREENSHOT_BYTES,
    ScrapeMetadata,
)
from rpc.paging import text_part
from rpc.sizes import json_size
from sandbox_image.browser.screenshot import png_size
from sandbox_image.browser.tab import Tab

if TYPE_CHECKING:
    from playwright.async_api import Page

_PAGE_SIZE = """() => {
  const root = document.documentElement;
  return [root.clientWidth, Math.max(root.scrollHeight, document.body ? document.body.scrollHeight : 0)];
}"""
# Scrolls the page through once, a viewport at a time down to `maxHeight` (what a full-page screenshot
# shows) or until `budgetMs` is spent, then back to the top. Images with loading=lazy and lazy loaders
# watching with an IntersectionObserver load only as they come near the viewport; a full-page capture
# does not scroll, so without this they are blank in it.
_SCROLL_THROUGH = """async ([maxHeight, budgetMs, pauseMs]) => {
  const started = performance.now();
  const root = document.scrollingElement || document.documentElement;
  const step = Math.max(200, window.innerHeight || 0);
  let y = 0;
  while (y + step < Math.min(maxHeight, root.scrollHeight) && performance.now() - started < budgetMs) {
    y += step;
    window.scrollTo({ top: y, behavior: "instant" }); // not smooth, whatever the CSS says
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
  window.scrollTo({ top: 0, behavior: "instant" });
  return y;
}"""
SCROLL_PAUSE_MS = 100  # per viewport: long enough for an IntersectionObserver to fire and a request to start
SCROLL_GRACE_S = 1.0
# A cut that still comes out too big is retried this much smaller than proportional (PNG size is not
# linear in height).
_SHRINK = 0.85


def cap_links(links: list[str], max_links: int = MAX_LINKS, max_bytes: int = MAX_LINKS_BYTES) -> tuple[list[str], bool]:
    kept: list[str] = []
    size = 2
    for link in links[:max_links]:
        size += json_size(link) + 1
        if size > max_bytes:
            return kept, True
        kept.append(link)
    return kept, len(links) > max_links


@dataclass(frozen=True)
class Shot:
    png: bytes
    width: int
    height: int
    truncated: bool


@dataclass(frozen=True)
class FileText:
    """A file that is not a web page (a PDF, a feed) as scrape answers it: nothing rendered, no main content
    chosen; each text format made when asked (from what the file's reader read)."""

    url: str
    title: str
    content_type: str
    metadata: ScrapeMetadata
    markdown: Callable[[], str]
    html: Callable[[], str]
    links: Callable[[], list[str]]
    cut: bool = False  # parts of the file past what its reader reads (a PDF's pages, a feed's entries)

    def fields(self, fmt: str, offset: int = 0, max_chars: int | None = None, *, whole: bool = False) -> dict[str, Any]:
        """The result's fields for markdown, html or links (run in a worker thread: the formats parse)."""
        fields: dict[str, Any]
        if fmt in ("markdown", "html"):
            text = self.markdown() if fmt == "markdown" else self.html()
            fields = text_part(text, offset, max_chars, whole=whole).fields(fmt)
        else:
            links, truncated = cap_links(self.links())
            fields = {"links": links, "truncated": truncated}
        fields["truncated"] = bool(fields.get("truncated")) or self.cut
        return fields


async def scroll_through(tab: Tab, *, budget_s: float) -> int:
    """Bring into view, once, everything a full-page screenshot shows (so what loads on sight has
    started loading); the pixels scrolled. The page is back at its top afterwards. Bounded from here
    too (SCROLL_GRACE_S past the page's own bound): a page whose timers never fire (it replaced
    setTimeout) is captured as it is, not waited on until the call's deadline."""
    if budget_s <= 0:
        return 0
    args = [MAX_FULL_PAGE_HEIGHT, int(budget_s * 1000), SCROLL_PAUSE_MS]
    try:
        scrolled = await tab.guard(
            asyncio.wait_for(tab.check().evaluate(_SCROLL_THROUGH, args), budget_s + SCROLL_GRACE_S)
        )
    except TimeoutError:
        return 0
    return int(scrolled or 0)


async def screenshot(tab: Tab, *, full_page: bool, timeout_ms: float) -> Shot:
    """The viewport, or the whole page cut at MAX_FULL_PAGE_HEIGHT px, as a PNG of at most
    MAX_SCREENSHOT_BYTES (a busier page is cut shorter; `truncated` says so)."""
    page: Page = tab.check()
    clip_height: float | None = None
    width = 0
    if full_page:
        width, full_height = await tab.guard(page.evaluate(_PAGE_SIZE))
        if full_height > MAX_FULL_PAGE_HEIGHT:
            clip_height = MAX_FULL_PAGE_HEIGHT
    while True:
        clip = {"x": 0, "y": 0, "width": width, "height": clip_height} if clip_height else None
        png = await tab.guard(
            page.screenshot(type="png", full_page=full_page, clip=clip, timeout=max(1.0, timeout_ms))  # type: ignore[arg-type]
        )
        w, h = png_size(png)
        if len(png) <= MAX_SCREENSHOT_BYTES or h <= 100:
            return Shot(png, w, h, truncated=clip_height is not None)
        # Too many bytes for one message: cut the page shorter, in proportion.
        clip_height = max(100, int(h * MAX_SCREENSHOT_BYTES / len(png) * _SHRINK))
        width = width or w
