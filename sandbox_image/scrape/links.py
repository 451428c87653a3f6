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


def srcset_candidates(srcset: str) -> list[tuple[str, str]]:
    """A srcset's (URL, descriptors) pairs, as HTML parses it: a URL runs to the next whitespace (commas
    in it stay: image CDNs write `c_crop,h_300`), a trailing comma ends a candidate without descriptors,
    and a candidate's descriptors (`400w`, `2x`) run to the next comma."""
    candidates: list[tuple[str, str]] = []
    position, n = 0, len(srcset)
    while position < n:
        while position < n and (srcset[position].isspace() or srcset[position] == ","):
            position += 1
        start = position
        while position < n and not srcset[position].isspace():
            position += 1
        url = srcset[start:position]
        if not url:
            break
        if url.endswith(","):
            candidates.append((url.rstrip(","), ""))
            continue
        start = position
        while position < n and srcset[position] != ",":  # the descriptors
            position += 1
        candidates.append((url, srcset[start:position].strip()))
    return candidates


def srcset_urls(srcset: str) -> list[str]:
    return [url for url, _ in srcset_candidates(srcset)]


def make_absolute(element: HtmlElement, base: str) -> None:
    """Every URL in `element` absolute against `base` (links, sources, srcsets, styles' url()), so HTML
    taken out of its page still points where the page did; one that cannot be resolved goes."""
    element.make_links_absolute(base, resolve_base_href=False, handle_failures="discard")
    for node in element.iter():  # lxml leaves srcset alone
        srcset = node.get("srcset") if isinstance(node.tag, str) else None
        if srcset:
            node.set("srcset", ", ".join(f"{urljoin(base, u)} {d}".strip() for u, d in srcset_candidates(srcset)))


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
