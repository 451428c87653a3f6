"""scrape's includeTags / excludeTags: the caller's CSS selectors over the rendered page.

A way around the models when the caller knows the site: `excludeTags` takes elements out before the
main content is chosen; `includeTags` replaces the choice with what the selectors match. Matched on
the rendered DOM (annotate.js's copy keeps the page's ids and classes), in cssselect's dialect, which
the request model has already checked every selector against.
"""

from __future__ import annotations

from collections.abc import Sequence

from lxml.html import HtmlElement


def _body(root: HtmlElement) -> HtmlElement:
    body = root.find("body")
    return body if body is not None else root


def _matched(root: HtmlElement, selectors: Sequence[str]) -> set[HtmlElement]:
    found: set[HtmlElement] = set()
    for selector in selectors:
        found.update(_body(root).cssselect(selector))
    return found


def drop_matching(root: HtmlElement, selectors: Sequence[str]) -> int:
    """Remove what `selectors` match in the body (text after an element stays); how many were removed."""
    body = _body(root)
    dropped = [element for element in matching(root, selectors) if element is not body]
    for element in dropped:
        element.drop_tree()
    return len(dropped)


def matching(root: HtmlElement, selectors: Sequence[str]) -> list[HtmlElement]:
    """What `selectors` match in the body, in page order, each once: an element inside another match is
    part of that one."""
    found = _matched(root, selectors)
    outermost: list[HtmlElement] = []
    for element in _body(root).iter():
        if element in found and not any(ancestor in found for ancestor in element.iterancestors()):
            outermost.append(element)
    return outermost
