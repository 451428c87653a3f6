"""Breadcrumb trails ("Home › Docs › Web APIs"), which are never a page's main content.

A trail repeats the site's sections and the page's own title, which the reader already has in the
heading below it. WCXB's references agree: of the 435 development pages whose marked trail is 40
words or fewer, 420 references leave it out, and all 129 such held-out test pages do
(docs/scrape-quality.md, round 27). The block models see a `breadcrumb` class as one word among the
chrome words (features.py) and still keep a trail now and then, most often on documentation and
article pages where it sits right above the title; so here a kept block inside an element marked as
a trail is taken out. Marked means `breadcrumb` in its class, id or aria-label; an element of more
than TRAIL_MAX_WORDS words is not a trail whatever its name (`<body class="has-breadcrumbs">`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from lxml.html import HtmlElement

from sandbox_image.scrape.blocks import Block

TRAIL_MAX_WORDS = 50
_MARK = re.compile(r"breadcrumb", re.IGNORECASE)


def _is_trail(element: HtmlElement, seen: dict[HtmlElement, bool]) -> bool:
    """Memoised per element: a page-wide container is read once, not once per block inside it."""
    known = seen.get(element)
    if known is None:
        label = " ".join(element.get(name) or "" for name in ("class", "id", "aria-label"))
        known = bool(_MARK.search(label)) and len(element.text_content().split()) <= TRAIL_MAX_WORDS
        seen[element] = known
    return known


def breadcrumb_blocks(blocks: Sequence[Block], kept: set[int]) -> set[int]:
    """Indices of the kept blocks that sit inside a breadcrumb trail."""
    seen: dict[HtmlElement, bool] = {}  # keyed by the element (kept alive), never by id()
    return {
        b.index
        for b in blocks
        if b.index in kept and any(_is_trail(e, seen) for e in (b.element, *b.element.iterancestors()))
    }
