"""The annotated page as an lxml tree, with what the reader cannot see taken out.

annotate.js marks hidden elements (data-bw-hidden) in the rendered page; here they are removed, so
every extractor downstream works on the text a reader actually sees. Static HTML (no marks) passes
through unchanged apart from the tags that never render.
"""

from __future__ import annotations

import re

from lxml import etree
from lxml.html import HtmlElement, HTMLParser, document_fromstring

# The attribute annotate.js puts on what the reader cannot see; its value is the reason.
HIDDEN_MARK = "data-bw-hidden"
# Reasons annotate.js gives. "aria" is kept apart: aria-hidden is mostly on icons and duplicated
# carousel slides, but some sites put it on text a reader sees, so removing it is a choice.
HIDDEN_REASONS = frozenset({"display", "visibility", "collapsed", "offscreen"})
NEVER_RENDERED = ("script", "style", "noscript", "template", "link", "meta")
_PARSER = HTMLParser(remove_comments=True, remove_pis=True, collect_ids=False)
_BW_ATTR = re.compile(r"^data-bw-")


def parse_html(html: str) -> HtmlElement:
    """A whole document (an empty one for empty input), tolerant of broken markup."""
    if not html or not html.strip():
        html = "<html><body></body></html>"
    try:
        return document_fromstring(html, parser=_PARSER)
    except (etree.ParserError, ValueError):
        # e.g. an XML declaration with an encoding inside a str: parse the bytes instead
        return document_fromstring(html.encode("utf-8", "replace"), parser=_PARSER)


def drop(element: HtmlElement) -> None:
    """Remove an element but keep its tail text (which belongs to the parent)."""
    parent = element.getparent()
    if parent is None:
        return
    element.drop_tree()


def remove_hidden(root: HtmlElement, reasons: frozenset[str] = HIDDEN_REASONS) -> int:
    """Drop the elements annotate.js marked hidden for one of `reasons`; returns how many."""
    removed = 0
    for element in list(root.iter()):
        if not isinstance(element.tag, str):
            continue
        reason = element.get(HIDDEN_MARK)
        if reason == "visibility-text" and "visibility" in reasons:
            remove_own_text(element)
        elif reason and reason in reasons and element.getparent() is not None:
            drop(element)
            removed += 1
    return removed


def remove_own_text(element: HtmlElement) -> None:
    """Clear the text directly inside `element` (its children and their own text stay)."""
    element.text = None
    for child in element:
        child.tail = None


def remove_unrendered(root: HtmlElement) -> None:
    """Drop what never renders as text (scripts, styles, templates; head metadata stays)."""
    for element in list(root.iter(*NEVER_RENDERED)):
        if element.getparent() is not None and element.getparent().tag != "head":
            drop(element)
    for element in list(root.iter("script", "style", "noscript", "template")):
        if element.getparent() is not None:
            drop(element)


def unwrap_noscript(root: HtmlElement) -> None:
    """Read <noscript> fallbacks as content: for a page whose scripts did not render it."""
    for element in list(root.iter("noscript")):
        if element.getparent() is not None:
            element.drop_tag()


def static_document(html: str) -> HtmlElement:
    """The server's HTML as a browser without scripts would show it (noscript content included)."""
    root = parse_html(html)
    unwrap_noscript(root)
    remove_unrendered(root)
    return root


def strip_marks(root: HtmlElement) -> None:
    """Remove annotate.js's data-bw-* attributes (they are ours, not the page's)."""
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        for name in [n for n in element.attrib if _BW_ATTR.match(n)]:
            del element.attrib[name]


def visible_document(html: str, *, drop_aria_hidden: bool = False) -> HtmlElement:
    """The document as a reader sees it: hidden and never-rendered elements removed."""
    root = parse_html(html)
    reasons = HIDDEN_REASONS | {"aria"} if drop_aria_hidden else HIDDEN_REASONS
    remove_hidden(root, reasons)
    remove_unrendered(root)
    return root


def box(element: HtmlElement) -> tuple[int, int, int, int] | None:
    """The layout box annotate.js recorded (x, y, width, height in CSS px), if any."""
    raw = element.get("data-bw-box")
    if not raw:
        return None
    try:
        x, y, w, h = (int(v) for v in raw.split())
    except ValueError:
        return None
    return x, y, w, h
