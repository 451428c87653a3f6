"""scrape against the real Chromium: the in-page annotation (what a reader cannot see is marked,
what they see is kept) and extract_page on small local pages."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, Page, async_playwright

from sandbox_image.browser.launch import LAUNCH_ARGS
from sandbox_image.scrape.annotate import annotate_page
from sandbox_image.scrape.dom import visible_document
from sandbox_image.scrape.extract import extract_page

pytestmark = pytest.mark.chromium  # launches the host's Chromium

CHROMIUM = os.environ.get("BOXWRIGHT_CHROMIUM", "/usr/bin/chromium")

HIDING = """<!doctype html><html lang="en"><head><title>Hiding</title>
<style>.gone { display: none } .sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden;
clip: rect(0 0 0 0) }</style></head><body>
<p>Visible paragraph</p>
<div style="display:none">Display none text</div>
<p hidden>Hidden attribute text</p>
<p class="gone">Hidden by stylesheet</p>
<div style="visibility:hidden">Invisible words <span style="visibility:visible">Shown again</span></div>
<div style="visibility:hidden"><p>Wholly invisible</p></div>
<span class="sr-only">Screen reader only</span>
<a href="#main" style="position:absolute; left:-9999px; top:0">Skip to content</a>
<div style="height:0; overflow:hidden"><p>Collapsed accordion</p></div>
<div aria-hidden="true">Aria hidden decoration</div>
<textarea>typed value</textarea>
<shadow-card></shadow-card>
<script>
  document.body.insertAdjacentHTML("beforeend", "<p>Added by script</p>");
  customElements.define("shadow-card", class extends HTMLElement {
    connectedCallback() { this.attachShadow({mode: "open"}).innerHTML = "<p>Inside the shadow root</p>"; }
  });
</script>
</body></html>"""


@pytest.fixture(scope="module")
async def chromium() -> AsyncIterator[Browser]:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=list(LAUNCH_ARGS), headless=True)
        yield browser
        await browser.close()


@pytest.fixture
async def page(chromium: Browser) -> AsyncIterator[Page]:
    context = await chromium.new_context()
    yield await context.new_page()
    await context.close()


async def test_hidden_text_is_marked_and_visible_text_kept(page: Page) -> None:
    await page.set_content(HIDING)
    annotated = await annotate_page(page)
    assert annotated.title == "Hiding" and annotated.lang == "en"
    text = " ".join(visible_document(annotated.html).text_content().split())
    for seen in ("Visible paragraph", "Shown again", "Added by script", "Inside the shadow root", "typed value"):
        assert seen in text
    assert "Aria hidden decoration" in text  # marked, but only dropped on request
    for hidden in (
        "Display none text",
        "Hidden attribute text",
        "Hidden by stylesheet",
        "Invisible words",
        "Wholly invisible",
        "Screen reader only",
        "Skip to content",
        "Collapsed accordion",
    ):
        assert hidden not in text, hidden
    assert "Aria hidden decoration" not in visible_document(annotated.html, drop_aria_hidden=True).text_content()
    assert annotated.stats["hidden"] >= 8


async def test_annotation_leaves_the_live_page_alone(page: Page) -> None:
    await page.set_content(HIDING)
    await annotate_page(page)
    assert "data-bw-" not in await page.content()


async def test_boxes_are_recorded_for_blocks(page: Page) -> None:
    await page.set_content(
        "<body style='margin:0'><div style='width:300px;height:50px;font-size:20px'>Box</div></body>"
    )
    annotated = await annotate_page(page)
    assert 'data-bw-box="0 0 300 50"' in annotated.html
    assert 'data-bw-fs="20"' in annotated.html


ARTICLE = """<!doctype html><html lang="en"><head><title>Growing tomatoes</title>
<meta name="description" content="How to grow tomatoes."><meta name="author" content="Ada Gardener">
<link rel="canonical" href="https://garden.example/tomatoes"></head><body>
<header><nav><a href="/">Home</a> <a href="/shop">Shop</a> <a href="/about">About us</a></nav></header>
<main><article><h1>Growing tomatoes</h1>
<p>Tomatoes need six to eight hours of direct sun every day, well drained soil and steady watering so that
the fruit does not split when a dry spell is followed by heavy rain.</p>
<h2>Planting</h2>
<p>Plant seedlings deeper than they sat in their pots: the buried stem grows roots, which makes the plant
sturdier and better able to find water during the hottest weeks of summer.</p>
<ul><li>Water at the base of the plant.</li><li>Mulch to keep the soil moist.</li></ul>
<p>Read the <a href="/guides/pruning">pruning guide</a> next.</p>
</article></main>
<footer><p>© 2024 Garden Example. All rights reserved.</p><a href="/privacy">Privacy</a></footer>
</body></html>"""


async def test_extract_page_gives_markdown_links_and_metadata(page: Page) -> None:
    await page.set_content(ARTICLE)
    extracted = await extract_page(page, only_main_content=True)
    assert "# Growing tomatoes" in extracted.markdown or "Growing tomatoes" in extracted.markdown
    assert "six to eight hours of direct sun" in extracted.markdown
    assert "- Water at the base of the plant." in extracted.markdown
    assert extracted.metadata.author == "Ada Gardener"
    assert extracted.metadata.canonicalUrl == "https://garden.example/tomatoes"
    assert extracted.title == "Growing tomatoes"
    full = await extract_page(page, only_main_content=False)
    assert "About us" in full.markdown and "All rights reserved" in full.markdown
    assert not full.main_content


async def test_empty_main_content_falls_back_to_the_whole_page(page: Page) -> None:
    # Nothing but navigation: main-content extraction finds nothing plausible (seed TC-04).
    await page.set_content("<html><body><nav><a href='/a'>Alpha</a> <a href='/b'>Beta</a></nav></body></html>")
    extracted = await extract_page(page, only_main_content=True)
    assert extracted.fallback and not extracted.main_content
    assert "Alpha" in extracted.markdown and "Beta" in extracted.markdown
