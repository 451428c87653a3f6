"""An XML sitemap scraped as markdown, html or links: the pages (or, for a sitemap index, the sitemaps) it
lists, each with its last modification — what a crawler asks a site for first.

A browser shows a sitemap as an XML tree. Its bytes (the server's, as loading.py fetched them) are parsed
by sitemap_reader.py in a child process (child.py), never in the agent. As for a feed, one HTML document is
built from what it read and the formats are read off it (markdown.py, links.py).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.scrape import ScrapeMetadata
from sandbox_image.browser.urls import redact
from sandbox_image.scrape.child import ReaderFailed, run_reader
from sandbox_image.scrape.dom import parse_html
from sandbox_image.scrape.links import extract_links
from sandbox_image.scrape.markdown import to_markdown
from sandbox_image.scrape.output import FileText

READER = Path(__file__).with_name("sitemap_reader.py")
_OPENS_AS_SITEMAP = re.compile(rb"<(?:[\w-]+:)?(?:urlset|sitemapindex)[\s>/]")


@dataclass(frozen=True)
class Sitemap:
    index: bool  # a sitemap index: its entries are sitemaps, not pages
    entries: list[tuple[str, str]]  # (loc, lastmod), in document order
    count: int  # entries in the file; more than sitemap_reader.MAX_ENTRIES are left out


def opens_as_sitemap(head: bytes) -> bool:
    return bool(_OPENS_AS_SITEMAP.search(head[:4096].lower()))


async def read_file(data: bytes, url: str, content_type: str, timeout_s: float) -> FileText:
    """Parse `data` in a child process within `timeout_s`; the sitemap as scrape answers it."""
    try:
        parsed = await run_reader(READER, data, timeout_s, what="sitemap", url=url)
    except ReaderFailed as exc:
        raise BoxwrightError(
            ErrorCode.UNSUPPORTED_CONTENT_TYPE,
            f"{redact(url)} is {content_type or 'XML'} that could not be read as a sitemap: {exc}",
            hint="a sitemap or an RSS/Atom feed is read as text; for any other XML, fetch it with code_run",
            details={"url": redact(url), "contentType": content_type},
        ) from None
    entries = [(str(e["loc"]), str(e["lastmod"])) for e in parsed["entries"]]
    sitemap = Sitemap(parsed["kind"] == "sitemapindex", entries, int(parsed["count"]))
    document = to_html(sitemap, url)
    return FileText(
        url=url,
        title=title_of(sitemap, url),
        content_type=content_type,
        metadata=ScrapeMetadata(),
        markdown=lambda: to_markdown(parse_html(document), url),
        html=lambda: document,
        links=lambda: extract_links(parse_html(document), url),
        cut=sitemap.count > len(sitemap.entries),
    )


def title_of(sitemap: Sitemap, url: str) -> str:
    return f"{'Sitemap index' if sitemap.index else 'Sitemap'} of {urlsplit(url).netloc or redact(url)}"


def to_html(sitemap: Sitemap, url: str) -> str:
    """A heading, then one list item per entry: its address as a link, and its last modification."""
    esc = html.escape
    items = []
    for loc, lastmod in sitemap.entries:
        target = urljoin(url, loc)
        if urlsplit(target).scheme not in ("http", "https"):
            continue
        when = f' <time datetime="{esc(lastmod)}">{esc(lastmod)}</time>' if lastmod else ""
        items.append(f'<li><a href="{esc(target)}">{esc(target)}</a>{when}</li>')
    return f"<h1>{esc(title_of(sitemap, url))}</h1>\n<ul>\n" + "\n".join(items) + "\n</ul>"
