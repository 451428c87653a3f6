"""A page cut into text blocks: the units main-content selection keeps or drops.

A block is a block-level element together with its own inline content (text, links, emphasis) but
not its nested blocks, so every piece of visible text belongs to exactly one block. Blocks keep a
reference to their element, so the kept ones can be turned back into HTML (and markdown) with the
page's own structure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lxml.html import HtmlElement

from sandbox_image.scrape.dom import HIDDEN_MARK

BLOCK_TAGS = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "caption",
        "dd",
        "details",
        "dialog",
        "dir",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hgroup",
        "hr",
        "li",
        "main",
        "menu",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
        "legend",
        "center",
        "option",
        "select",
        "textarea",
    }
)
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# Landmarks: where a block sits tells what it probably is.
CHROME_TAGS = frozenset({"header", "nav", "footer", "aside"})
CHROME_ROLES = frozenset({"banner", "navigation", "contentinfo", "complementary", "search", "dialog", "alertdialog"})
MAIN_ROLES = frozenset({"main", "article"})
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")


@dataclass
class Block:
    element: HtmlElement
    text: str
    words: int
    link_words: int
    tag: str
    index: int
    in_main: bool = False  # inside <main>/<article>/role=main
    in_chrome: bool = False  # inside header/nav/footer/aside (outside main) or a chrome role
    heading: bool = False
    hidden: str = ""  # the annotate.js reason of the nearest hidden ancestor, if any
    features: dict[str, float] = field(default_factory=dict)

    @property
    def link_density(self) -> float:
        return self.link_words / self.words if self.words else 0.0


def _is_block(element: HtmlElement) -> bool:
    return isinstance(element.tag, str) and element.tag in BLOCK_TAGS


def _inline_text(element: HtmlElement, pieces: list[str], links: list[str], in_link: bool) -> None:
    """Text of `element`'s inline content (not of its nested blocks), links counted apart."""
    if element.text:
        pieces.append(element.text)
        if in_link:
            links.append(element.text)
    for child in element:
        if isinstance(child.tag, str) and not _is_block(child):
            if child.tag == "br":
                pieces.append("\n")
            else:
                _inline_text(child, pieces, links, in_link or child.tag == "a")
        elif isinstance(child.tag, str):
            pieces.append(" ")  # a nested block separates the text around it
        if child.tail:
            pieces.append(child.tail)
            if in_link:
                links.append(child.tail)


def _own_text(element: HtmlElement, links: list[str]) -> str:
    pieces: list[str] = []
    _inline_text(element, pieces, links, element.tag == "a")
    return _SPACE.sub(" ", "".join(pieces)).strip()


def is_wordless_text(element: HtmlElement) -> bool:
    """A block-level element whose own text has no word: a code editor's `);` or `}` line, a `—`.
    segment leaves it out (there is nothing to weigh), so what happens to it is decided later."""
    if not _is_block(element):
        return False
    text = _own_text(element, [])
    return bool(text) and not _WORD.search(text)


def segment(root: HtmlElement) -> list[Block]:
    """The blocks of `root` in document order (blocks without words are left out)."""
    body = root.find("body")
    start = body if body is not None else root
    blocks: list[Block] = []

    def walk(element: HtmlElement, in_main: bool, in_chrome: bool, hidden: str) -> None:
        tag = element.tag
        role = (element.get("role") or "").lower()
        mark = element.get(HIDDEN_MARK) or ""
        own_hidden = hidden or ("visibility" if mark == "visibility-text" else mark)
        hidden = hidden or ("" if mark == "visibility-text" else mark)  # what descendants inherit
        if tag in ("main", "article") or role in MAIN_ROLES:
            in_main = True
        if (tag in CHROME_TAGS and not in_main) or role in CHROME_ROLES:
            in_chrome = True
        links: list[str] = []
        text = _own_text(element, links)
        if text:
            words = len(_WORD.findall(text))
            if words:
                link_words = len(_WORD.findall(" ".join(links)))
                blocks.append(
                    Block(
                        element=element,
                        text=text,
                        words=words,
                        link_words=min(link_words, words),
                        tag=tag,
                        index=len(blocks),
                        in_main=in_main,
                        in_chrome=in_chrome,
                        heading=tag in HEADINGS or role == "heading",
                        hidden=own_hidden,
                    )
                )
        for child in element:
            if isinstance(child.tag, str) and _is_block(child):
                walk(child, in_main, in_chrome, hidden)
            elif isinstance(child.tag, str):
                # blocks nested inside inline elements (a <div> in an <a>, common in cards)
                for nested in child.iter():
                    if nested is not child and _is_block(nested) and not _has_block_ancestor_below(nested, child):
                        walk(nested, in_main, in_chrome, hidden)

    walk(start, False, False, "")
    return blocks


def _has_block_ancestor_below(element: HtmlElement, top: HtmlElement) -> bool:
    """Whether a block element lies between `element` and `top` (exclusive)."""
    parent = element.getparent()
    while parent is not None and parent is not top:
        if _is_block(parent):
            return True
        parent = parent.getparent()
    return False
