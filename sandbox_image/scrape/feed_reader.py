"""Read an RSS or Atom feed: `python feed_reader.py URL < feed.xml` prints one JSON object.

Run by sandbox_image.scrape.feed as a child process of its own (child.py), by path, so it imports nothing
of the agent but feedparser, under memory and CPU limits set (reader_main.serve) before the feed is
touched: the feed comes from an untrusted site. feedparser is given the bytes (it fetches nothing),
resolves relative URLs against URL and sanitizes the entries' HTML (no scripts, styles or event handlers).
Stdlib and feedparser only.
"""

from __future__ import annotations

import sys
import time
from typing import Any

MAX_ENTRIES = 1000  # more entries than this are left out (the text is capped further by the caller)
MEMORY_BYTES = 512 * 1024 * 1024
CPU_SECONDS = 60  # the caller kills it at the call's deadline anyway; this bounds a child left behind


def _text(value: Any) -> str:
    return " ".join(str(value).split()) if value else ""


def _when(entry: Any, key: str) -> str:
    """An ISO 8601 UTC timestamp from feedparser's parsed date, else the date as the feed wrote it."""
    parsed = entry.get(f"{key}_parsed")
    if parsed:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", parsed)
    return _text(entry.get(key))


def _html(entry: Any) -> str:
    """The entry's fullest HTML: its content when it has any, else its summary (sanitized by feedparser)."""
    contents = [c.get("value", "") for c in entry.get("content") or [] if c.get("value")]
    return contents[0] if contents else str(entry.get("summary") or "")


def _author(item: Any) -> str:
    detail = item.get("author_detail") or {}
    return _text(detail.get("name") or item.get("author"))


def _image(feed: Any) -> str:
    image = feed.get("image") or {}
    return _text(image.get("href") or image.get("url"))


def read(data: bytes, url: str) -> dict[str, Any]:
    import feedparser

    parsed = feedparser.parse(data, response_headers={"content-location": url}, sanitize_html=True)
    feed, entries = parsed.get("feed") or {}, parsed.get("entries") or []
    if not entries and (not parsed.get("version") or parsed.get("bozo")):  # an empty feed is read only if well-formed
        reason = f" ({parsed.get('bozo_exception')})" if parsed.get("bozo") else ""
        return {"error": f"it is not a well-formed RSS or Atom feed{reason}"}
    return {
        "format": parsed.get("version") or "",
        "title": _text(feed.get("title")),
        "subtitle": _text(feed.get("subtitle")),
        "link": _text(feed.get("link")),
        "language": _text(feed.get("language")),
        "updated": _when(feed, "updated"),
        "author": _author(feed),
        "image": _image(feed),
        "entryCount": len(entries),
        "entries": [
            {
                "title": _text(entry.get("title")),
                "link": _text(entry.get("link")),
                "published": _when(entry, "published"),
                "updated": _when(entry, "updated"),
                "author": _author(entry),
                "html": _html(entry),
                "enclosures": [_text(e.get("href")) for e in entry.get("enclosures") or [] if e.get("href")],
            }
            for entry in entries[:MAX_ENTRIES]
        ],
    }


def main() -> int:
    # Beside this script, which is run by path (its directory first on sys.path); not a package import.
    from reader_main import serve  # type: ignore[import-not-found]

    return serve(
        lambda data: read(data, sys.argv[1] if len(sys.argv) > 1 else ""),
        memory_bytes=MEMORY_BYTES,
        cpu_seconds=CPU_SECONDS,
    )


if __name__ == "__main__":
    sys.exit(main())
