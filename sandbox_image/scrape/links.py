"""The links of a page: absolute http(s) URLs, each once, in the order the page has them.

Relative links resolve against the document's <base href> when it has one, else the page URL.
The fragment is dropped (it names a place in a page, not another page), so `/a#top` and `/a` are
one link. Links to javascript:, mailto:, tel: and the like are not web pages and are left out.
"""

from __future__ import annotations

from urllib.parse import urldefrag, urljoin, urlsplit

from lxml.html import HtmlElement

MAX_LINKS = 10_000


def document_base(root: HtmlElement, url: str) -> str:
    """The URL relative links resolve against: <base href> (itself resolved against the page)."""
    for base in root.iter("base"):
        href = (base.get("href") or "").strip()
        if href:
            return urljoin(url, href)
    return url


def absolute_url(href: str, base: str) -> str | None:
    """`href` made absolute, without fragment; None unless it is an http(s) URL."""
    href = href.strip()
    if not href or href.startswith("#"):
        return None
    try:
        absolute, _fragment = urldefrag(urljoin(base, href))
        parts = urlsplit(absolute)
    except ValueError:  # e.g. an invalid IPv6 literal
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return absolute


def extract_links(root: HtmlElement, url: str, *, scope: HtmlElement | None = None) -> list[str]:
    """Absolute links of `scope` (default: the whole document), deduplicated, in page order."""
    base = document_base(root, url)
    seen: dict[str, None] = {}
    for a in (scope if scope is not None else root).iter("a", "area"):
        link = absolute_url(a.get("href") or "", base)
        if link and link not in seen:
            seen[link] = None
            if len(seen) >= MAX_LINKS:
                break
    return list(seen)
