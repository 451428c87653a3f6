"""Which HTML the extraction reads: the rendered page, or the server's HTML when rendering failed.

The rendered page (annotated by annotate.js) is what a reader sees, so it is preferred. But a page
whose scripts did not run to completion (an app shell that did not boot, content that only exists
in <noscript>, a script that replaced the page) shows far less text than the HTML it was built
from; then the server's HTML, read as a browser without scripts would show it, is the better
source. "Far less" is RENDERED_SHARE: below half of the server HTML's words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml.html import HtmlElement, tostring

from sandbox_image.scrape.dom import parse_html, remove_unrendered, static_document
from sandbox_image.scrape.mojibake import repair_document

RENDERED_SHARE = 0.5
_WORD = re.compile(r"\w+")


def word_count(root: HtmlElement) -> int:
    body = root.find("body")
    return len(_WORD.findall((body if body is not None else root).text_content()))


@dataclass
class Document:
    root: HtmlElement
    source: str  # "rendered" or "static"
    rendered_words: int
    static_words: int

    def html(self) -> str:
        return tostring(self.root, encoding="unicode")


def choose_document(annotated_html: str, response_html: str | None = None) -> Document:
    """The rendered document, unless the server's HTML has more than twice its words; its text
    repaired where it is mis-decoded UTF-8 (mojibake.py)."""
    rendered = parse_html(annotated_html)
    remove_unrendered(rendered)
    rendered_words = word_count(rendered)
    static = static_document(response_html) if response_html else None
    static_words = word_count(static) if static is not None else 0
    if static is not None and rendered_words < RENDERED_SHARE * static_words:
        document = Document(static, "static", rendered_words, static_words)
    else:
        document = Document(rendered, "rendered", rendered_words, static_words)
    repair_document(document.root)
    return document
