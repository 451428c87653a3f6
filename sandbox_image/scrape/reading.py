"""A rendered page's text formats — markdown, html or links — read the same way for `scrape` (a page it
has just loaded in a context of its own) and `browser_scrape` (the page a tab shows now).

Nothing here loads or waits: the caller has the page where it wants it. annotate.js marks a clone, so
the live page is left as it was (a tab's page goes on as if it had not been read).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from lxml.html import HtmlElement

from rpc.models.scrape import MAX_PAGE_BYTES, ReadOptions, ScrapeMetadata
from rpc.paging import TextPart, text_part
from sandbox_image.browser.tab import Tab
from sandbox_image.scrape import loading, output, tags
from sandbox_image.scrape.annotate import Selectors, annotate_page
from sandbox_image.scrape.dom import parse_html
from sandbox_image.scrape.extract import extract_page
from sandbox_image.scrape.frames import annotate_with_frames
from sandbox_image.scrape.links import extract_links
from sandbox_image.scrape.metadata import PageMetadata, extract_metadata

# Reading the page's frames (includeIframes): at most this long, and at most half of what is left.
FRAMES_MAX_S = 6.0
_DOCUMENT_SIZE = "() => document.documentElement ? document.documentElement.outerHTML.length : 0"
_TEXT = "() => document.body ? document.body.innerText : ''"
# A page that goes on to another document while it is read (a late redirect, a reload) is read again, this often.
NAVIGATION_REREADS = 2
# What Playwright says when the document it was reading went away under it.
_NAVIGATED = ("Execution context was destroyed", "page is navigating")
# A frameset page has nothing to read but its frames: they are read whether or not includeIframes asked.
_FRAMESET = "() => !!document.body && document.body.tagName === 'FRAMESET'"


@dataclass(frozen=True)
class Reading:
    """What a text format answers: PageText's fields, plus the title the page states (may be empty)."""

    title: str
    metadata: ScrapeMetadata
    fields: dict[str, Any] = field(default_factory=dict)


def navigated(exc: BaseException) -> bool:
    """The page went on to another document while it was being read (read that one instead)."""
    return any(text in str(exc) for text in _NAVIGATED)


def selectors_of(options: ReadOptions) -> Selectors | None:
    return (
        Selectors(options.includeTags, options.excludeTags)
        if options.includeTags is not None or options.excludeTags
        else None
    )


def metadata_of(meta: PageMetadata) -> ScrapeMetadata:
    stated = meta.as_dict()
    stated.pop("title", None)
    return ScrapeMetadata.model_validate(stated)


def read_document(html: str, url: str, fmt: str, options: ReadOptions) -> tuple[PageMetadata, list[str]]:
    """The page's metadata, and its links when they are the format asked for (within includeTags, without
    excludeTags: `html` is then annotate.js's, with the browser's matches marked)."""
    root: HtmlElement = parse_html(html)
    metadata = extract_metadata(root, url)
    if fmt != "links":
        return metadata, []
    if options.excludeTags:
        tags.drop_matching(root, options.excludeTags, marked=True)
    if options.includeTags is None:
        return metadata, extract_links(root, url)
    found = (extract_links(root, url, scope=part) for part in tags.matching(root, options.includeTags, marked=True))
    return metadata, list(dict.fromkeys(link for links in found for link in links))


async def check_size(tab: Tab) -> None:
    """PAGE_TOO_LARGE for a rendered document past MAX_PAGE_BYTES, before anything parses it."""
    size = int(await tab.guard(tab.check().evaluate(_DOCUMENT_SIZE)) or 0)
    if size > MAX_PAGE_BYTES:
        raise loading.too_large(tab.url, size, "rendered document")


async def frames_budget(tab: Tab, options: ReadOptions, remaining_s: float) -> float | None:
    """Seconds for reading the page's frames in place, or None when they are not read."""
    if options.includeIframes or await tab.guard(tab.check().evaluate(_FRAMESET)):
        return min(FRAMES_MAX_S, remaining_s / 2)
    return None


async def read_text(
    tab: Tab,
    fmt: str,
    options: ReadOptions,
    *,
    is_html: bool,
    frames_s: float | None,
    response_html: str | None = None,
    whole: bool = False,
) -> Reading:
    """markdown, html or links of the page `tab` shows; a text document (text/plain, JSON) as its text.

    `frames_s`: read the frames in place within that long (frames_budget; None for a text document).
    `response_html`: the server's HTML of a page just loaded, for extraction's fallback to it.
    `whole`: the whole markdown/html, not the part `offset`/`maxChars` ask for (the host keeps it and cuts).
    """
    page = tab.check()
    selectors = selectors_of(options)

    def part(text: str) -> TextPart:
        return text_part(text, options.offset, options.maxChars, whole=whole)

    if fmt in ("markdown", "html") and is_html:
        extracted = await extract_page(
            page,
            only_main_content=options.onlyMainContent,
            response_html=response_html,
            frames_s=frames_s,
            selectors=selectors,
        )
        fields = {
            **part(extracted.markdown if fmt == "markdown" else extracted.html).fields(fmt),
            "iframes": extracted.frames,
            "mainContent": extracted.main_content,
            "fallback": extracted.fallback,
        }
        return Reading(extracted.title, metadata_of(extracted.metadata), fields)
    fields = {}
    if fmt == "links" and frames_s is not None:
        annotated, fields["iframes"] = await tab.guard(annotate_with_frames(page, frames_s, selectors))
        html = annotated.html
    elif fmt == "links" and (is_html or selectors is not None):
        # annotate.js's clone, not page.content(): it has the open shadow roots inlined, so a web component's
        # links are there, in page order, as markdown shows them (page.content() leaves shadow trees out).
        html = (await tab.guard(annotate_page(page, selectors))).html
    else:
        html = await tab.guard(page.content())
    meta, links = await asyncio.to_thread(read_document, html, tab.url, fmt, options)
    if fmt == "links":
        fields["links"], fields["truncated"] = output.cap_links(links)
    else:  # a text document (text/plain, JSON) read as markdown or html
        text = str(await tab.guard(page.evaluate(_TEXT)) or "") if fmt == "markdown" else html
        fields.update(part(text).fields(fmt))
    return Reading(meta.title, metadata_of(meta), fields)
