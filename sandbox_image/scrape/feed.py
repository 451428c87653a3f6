"""An RSS or Atom feed scraped as markdown, html or links: the feed's title and description, then each
entry — its title linked to it, its date and author, its text — and the metadata the feed states.

A browser shows a feed as raw XML (or refuses it as a download), which no format reads well. The feed's
bytes (the server's, as loading.py fetched them) are parsed by feed_reader.py with feedparser in a child
process (child.py: limits, killed at the call's deadline), never in the agent; the entries' HTML comes out
of feedparser sanitized. One HTML document is built from what it read, and the three formats are read off
that document as a page's are (markdown.py, links.py). There is no "main content" in a feed: all of it is
returned (`mainContent` false), whatever onlyMainContent says.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
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

READER = Path(__file__).with_name("feed_reader.py")
# Served as these, a document is read as a feed; as plain XML only when it opens like one (opens_as_feed).
FEED_TYPES = frozenset({"application/rss+xml", "application/atom+xml", "application/rdf+xml", "application/feed+xml"})
_OPENS_AS_FEED = re.compile(rb"<(?:[\w-]+:)?(?:rss|feed|rdf)[\s>/]")


@dataclass(frozen=True)
class FeedEntry:
    title: str = ""
    link: str = ""
    published: str = ""
    updated: str = ""
    author: str = ""
    html: str = ""
    enclosures: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Feed:
    entries: list[FeedEntry]
    format: str = ""  # feedparser's name for it: rss20, atom10, rss090…
    title: str = ""
    subtitle: str = ""
    link: str = ""
    language: str = ""
    updated: str = ""
    author: str = ""
    image: str = ""
    entry_count: int = 0  # entries in the feed; more than feed_reader.MAX_ENTRIES are left out


def opens_as_feed(head: bytes) -> bool:
    return bool(_OPENS_AS_FEED.search(head[:4096].lower()))


def unreadable(url: str, content_type: str, why: str) -> BoxwrightError:
    return BoxwrightError(
        ErrorCode.UNSUPPORTED_CONTENT_TYPE,
        f"{redact(url)} is {content_type or 'XML'} that could not be read as a feed: {why}",
        hint="an RSS or Atom feed is read as text; for any other XML, fetch the file with code_run (curl, python)",
        details={"url": redact(url), "contentType": content_type},
    )


async def read_feed(data: bytes, url: str, content_type: str, timeout_s: float) -> Feed:
    """Parse `data` in a child process within `timeout_s`; killed when the time is up or the call ends."""
    try:
        parsed = await run_reader(READER, data, timeout_s, url, what="feed", url=url)
    except ReaderFailed as exc:
        raise unreadable(url, content_type, str(exc)) from None
    fields = ("title", "link", "published", "updated", "author", "html")
    entries = [
        FeedEntry(**{key: str(e[key]) for key in fields}, enclosures=[str(x) for x in e["enclosures"]])
        for e in parsed["entries"]
    ]
    stated = ("format", "title", "subtitle", "link", "language", "updated", "author", "image")
    return Feed(entries, **{key: str(parsed[key]) for key in stated}, entry_count=int(parsed["entryCount"]))


def _http(url: str, base: str) -> str:
    absolute = urljoin(base, url) if url else ""
    return absolute if urlsplit(absolute).scheme in ("http", "https") else ""


def title_of(feed: Feed, url: str) -> str:
    """The title the feed states, else its address."""
    return feed.title or redact(url)


def to_html(feed: Feed, url: str) -> str:
    """The feed as one HTML document: its title (linked to its site) and description, then an <article> per
    entry — title linked to the entry, date and author, the entry's sanitized HTML, its enclosures."""
    esc = html.escape
    site = _http(feed.link, url)
    heading = f'<a href="{esc(site)}">{esc(title_of(feed, url))}</a>' if site else esc(title_of(feed, url))
    parts = [f"<h1>{heading}</h1>"]
    if feed.subtitle:
        parts.append(f"<p>{esc(feed.subtitle)}</p>")
    for entry in feed.entries:
        link = _http(entry.link, url)
        title = esc(entry.title or entry.link or "Untitled")
        parts.append("<article>")
        parts.append(f'<h2><a href="{esc(link)}">{title}</a></h2>' if link else f"<h2>{title}</h2>")
        when = entry.published or entry.updated
        byline = " · ".join(
            part
            for part in (f'<time datetime="{esc(when)}">{esc(when)}</time>' if when else "", esc(entry.author))
            if part
        )
        if byline:
            parts.append(f"<p>{byline}</p>")
        if entry.html:
            parts.append(f"<div>{entry.html}</div>")
        enclosures = [_http(e, link or url) for e in entry.enclosures]
        if any(enclosures):
            parts.append("<p>" + " ".join(f'<a href="{esc(e)}">{esc(e)}</a>' for e in enclosures if e) + "</p>")
        parts.append("</article>")
    return "\n".join(parts)


def metadata_of(feed: Feed, url: str) -> ScrapeMetadata:
    """What the feed states about itself: its description, language, last update, author and image."""
    stated = {
        "description": feed.subtitle,
        "language": feed.language,
        "modifiedDate": feed.updated,
        "author": feed.author,
        "image": _http(feed.image, url),
    }
    return ScrapeMetadata.model_validate({key: value for key, value in stated.items() if value})


async def read_file(data: bytes, url: str, content_type: str, timeout_s: float) -> FileText:
    """The feed as scrape answers it; entries past what is read (feed_reader.MAX_ENTRIES) count as cut."""
    feed = await read_feed(data, url, content_type, timeout_s)
    document = to_html(feed, url)
    return FileText(
        url=url,
        title=title_of(feed, url),
        content_type=content_type,
        metadata=metadata_of(feed, url),
        markdown=lambda: to_markdown(parse_html(document), url),
        html=lambda: document,
        links=lambda: extract_links(parse_html(document), url),
        cut=feed.entry_count > len(feed.entries),
    )
