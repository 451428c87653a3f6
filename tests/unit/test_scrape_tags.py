"""scrape's includeTags / excludeTags (tags.py, extract_html) on HTML without annotate.js's marks (lxml
matches the selectors), and the request model's bounds; the browser's matching and its verdict on a
selector: test_scrape_service."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rpc.models.scrape import MAX_SELECTORS, BrowserScrapeParams, ScrapeRequest
from sandbox_image.scrape.dom import parse_html
from sandbox_image.scrape.extract import extract_html
from sandbox_image.scrape.tags import drop_matching, matching

URL = "https://shop.example/desk"
PAGE = """<!doctype html><html><head><title>Desk</title></head><body>
<nav><a href="/">Home</a> <a href="/desks">Desks</a></nav>
<main><h1>Walnut desk</h1><p class="price">Price 400 euros</p>
<div id="specs"><h2>Specifications</h2><p>Width 140 centimetres, depth 70 centimetres.</p>
<p class="note">Oiled by hand <a href="care">care guide</a>.</p></div>
<section class="comments"><p>First comment: lovely desk.</p></section>
<div data-bw-hidden="display"><p class="price">Hidden price 999</p></div></main>
<footer>Copyright</footer></body></html>"""


def test_include_keeps_what_the_selectors_match_in_page_order_and_once() -> None:
    out = extract_html(PAGE, URL, include=["#specs", ".price", "#specs .note"])
    assert out.markdown.strip().split("\n\n") == [
        "Price 400 euros",
        "## Specifications",
        "Width 140 centimetres, depth 70 centimetres.",
        "Oiled by hand [care guide](https://shop.example/care).",
    ]  # the hidden price stays out, the note comes once (inside #specs)
    assert not out.main_content and not out.fallback
    assert extract_html(PAGE, URL, include=[".nothing-here"]).markdown == ""


def test_exclude_takes_out_what_the_selectors_match_first() -> None:
    whole = extract_html(PAGE, URL, only_main_content=False, exclude=[".comments", "nav"]).markdown
    assert "Walnut desk" in whole and "First comment" not in whole and "Desks" not in whole
    both = extract_html(PAGE, URL, include=["main"], exclude=[".comments", "h2"]).markdown
    assert "Width 140" in both and "Specifications" not in both and "First comment" not in both


def test_matching_is_outermost_first_and_drop_keeps_the_text_after() -> None:
    root = parse_html("<body><div class='a'>A <b class='b'>B</b></div><p>x<i class='b'>I</i> tail</p></body>")
    assert [e.tag for e in matching(root, [".b", ".a"], marked=False)] == ["div", "i"]
    assert drop_matching(root, [".b"], marked=False) == 2
    assert root.find("body").text_content() == "A x tail"


def test_the_marks_of_the_browser_are_read_when_there_are_any() -> None:
    root = parse_html(
        "<body><div data-bw-include=''>A <b data-bw-include=''>B</b></div><p data-bw-exclude=''>x</p><p>y</p></body>"
    )
    assert [e.tag for e in matching(root, ["ignored"], marked=True)] == ["div"]
    assert drop_matching(root, ["ignored"], marked=True) == 1 and root.find("body").text_content() == "A By"
    lxml_cannot = parse_html("<body><h2 x='A'>t</h2></body>")  # the browser's CSS, not cssselect's: no match here
    assert matching(lxml_cannot, ["[x='a' i]"], marked=False) == []


@pytest.mark.parametrize(
    ("tags", "field"),
    [(["  "], "includeTags.0"), (["p" * 501], "includeTags.0"), (["p"] * (MAX_SELECTORS + 1), "includeTags")],
)
def test_the_request_model_bounds_the_selectors(tags: list[str], field: str) -> None:
    with pytest.raises(ValidationError) as raised:
        ScrapeRequest(url=URL, includeTags=tags)
    assert [".".join(map(str, e["loc"])) for e in raised.value.errors()] == [field]
    ok = ScrapeRequest(url=URL, includeTags=[" :is(h1, h2) "], excludeTags=["a::before"])
    assert ok.includeTags == [":is(h1, h2)"] and ok.excludeTags == ["a::before"]  # the browser judges these


def test_empty_selector_lists_are_not_given() -> None:
    """includeTags: [] used to select nothing (empty content) while the summary spoke of the whole page."""
    for model in (ScrapeRequest(url=URL, includeTags=[], excludeTags=[]), BrowserScrapeParams(includeTags=[])):
        assert model.includeTags is None and model.excludeTags is None
    assert ScrapeRequest(url=URL, includeTags=[]).model_dump() == ScrapeRequest(url=URL).model_dump()
