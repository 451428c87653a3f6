"""scrape: breadcrumb trails are taken out of the main content (breadcrumbs.py)."""

from __future__ import annotations

import math

from sandbox_image.scrape.blocks import segment
from sandbox_image.scrape.breadcrumbs import breadcrumb_blocks
from sandbox_image.scrape.document import choose_document
from sandbox_image.scrape.main_content import select_blocks
from sandbox_image.scrape.model import Forest

PAGE = """<html><body class="{body}"><main>
<nav aria-label="Breadcrumb"><ol><li><a href="/docs/Web">Web</a></li><li><a href="/docs/Web/API">Web APIs</a></li>
<li><a href="/docs/Web/API/Fetch_API">Fetch API</a></li></ol></nav>
<div class="breadcrumbs-wrapper"><span>You are here:</span> <a href="/">Home</a> › Guides</div>
<h1>Using the Fetch API</h1>
<p>The Fetch API provides a JavaScript interface for making HTTP requests and processing the responses.</p>
<p>Fetch is the modern replacement for XMLHttpRequest: unlike XMLHttpRequest, it uses promises.</p>
</main></body></html>"""


def _certain(probability: float) -> Forest:
    return Forest(("x",), math.log(probability / (1 - probability)), (), 0.5, {})


def test_a_kept_breadcrumb_trail_is_taken_out_and_the_page_stays() -> None:
    document = choose_document(PAGE.format(body=""))
    selection = select_blocks(document, "https://example.org/", models=(_certain(0.9),), voter_texts={"x": ""})
    kept = [b.text for b in selection.blocks if b.index in selection.kept]
    assert kept[0] == "Using the Fetch API" and len(kept) == 3 and not selection.fallback
    assert not any(word in " ".join(kept) for word in ("Web APIs", "You are here", "Guides"))


def test_a_page_wide_element_named_for_breadcrumbs_is_not_a_trail() -> None:
    # <body class="has-breadcrumbs"> says the page has a trail, not that the page is one
    long = PAGE.format(body="has-breadcrumbs").replace("</main>", "<p>" + "word " * 60 + "</p></main>")
    blocks = segment(choose_document(long).root)
    trail = {b.index for b in blocks if b.text in ("Web", "Web APIs", "Fetch API") or "You are here" in b.text}
    assert breadcrumb_blocks(blocks, {b.index for b in blocks}) == trail
    assert breadcrumb_blocks(blocks, set()) == set()  # only takes from what is kept
