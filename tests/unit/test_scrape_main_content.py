"""scrape: cutting kept blocks out of a page with their structure, the whole-table and images-in-flow
rules, the tree model's evaluation, and feature rows."""

from __future__ import annotations

import json
import math

import pytest

from sandbox_image.scrape.blocks import segment
from sandbox_image.scrape.document import choose_document
from sandbox_image.scrape.main_content import Selection, _keep_whole, block_rows, content_element
from sandbox_image.scrape.markdown import to_markdown
from sandbox_image.scrape.model import Forest, load_models, mean_probabilities
from sandbox_image.scrape.page_kind import page_kind_features
from sandbox_image.scrape.structure import FEATURES as STRUCTURE_FEATURES

PAGE = """<html><body>
<nav><a href="/">Home</a> <a href="/shop">Shop</a></nav>
<img src="/logo.png" alt="logo">
<main>
  <h1>Title</h1>
  <p>First paragraph with <a href="/x">a link</a> and <em>emphasis</em>.</p>
  <figure><img src="/chart.png" alt="chart"></figure>
  <ul><li>one<ul><li>nested</li></ul></li><li>two</li></ul>
  <table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>
  <p>Last paragraph.</p>
</main>
<aside><p>Related stories you might like</p></aside>
<footer>Copyright</footer>
</body></html>"""


def select(texts_kept: set[str], html: str = PAGE) -> tuple[Selection, object]:
    document = choose_document(html)
    blocks = segment(document.root)
    kept = {b.index for b in blocks if b.text in texts_kept}
    return Selection(blocks, [1.0 if b.index in kept else 0.0 for b in blocks], kept, fallback=False), document


def test_kept_blocks_are_cut_out_with_their_structure() -> None:
    kept = {"Title", "First paragraph with a link and emphasis.", "one", "nested", "two", "k", "v", "a", "1"}
    selection, document = select(kept | {"Last paragraph."})
    content = content_element(document, selection)
    markdown = to_markdown(content, "https://example.org/")
    assert markdown.startswith("# Title")
    assert "[a link](https://example.org/x)" in markdown and "*emphasis*" in markdown
    assert "- one\n  - nested\n- two" in markdown
    assert "| k | v |" in markdown.replace("  ", " ")
    assert "![chart](https://example.org/chart.png)" in markdown  # between two kept blocks
    for dropped in ("Home", "Shop", "logo", "Related stories", "Copyright"):
        assert dropped not in markdown
    assert "data-bw-" not in str(content.attrib) and all("data-bw-block" not in e.attrib for e in content.iter())


def test_the_live_document_is_not_changed_by_cutting() -> None:
    selection, document = select({"Title"})
    before = document.html()
    content_element(document, selection)
    assert document.html() == before


def test_image_outside_the_flow_is_dropped() -> None:
    selection, document = select({"Title", "Last paragraph."})
    markdown = to_markdown(content_element(document, selection), "https://example.org/")
    assert "chart" not in markdown  # the blocks around it were not kept
    assert "Title" in markdown and "Last paragraph." in markdown


def test_tables_are_kept_or_dropped_whole() -> None:
    document = choose_document(PAGE)
    blocks = segment(document.root)
    cells = {b.index for b in blocks if b.text in ("k", "v", "a", "1")}
    some = {next(iter(sorted(cells))), max(cells)}
    assert _keep_whole(blocks, some | {0}, set(), "table") == cells | {0}  # half the words: the whole table
    one = {min(cells)}
    assert _keep_whole(blocks, one, set(), "table") == set()  # a quarter: none of it


EDITOR = """<html><body>
<p>Components are functions:</p>
<pre><code><div class="cm-line">function Button() {</div><div class="cm-line">  return (</div>
<div class="cm-line">    <button>Click</button></div><div class="cm-line">  );</div>
<div class="cm-line">}</div></code></pre>
<div class="sep">·</div>
<p>Nest it inside another component.</p>
<footer><div>—</div><p>Copyright</p></footer>
</body></html>"""


def test_lines_without_words_follow_the_code_and_text_around_them() -> None:
    # A code editor's `);` and `}` lines have no word, so they are no block and no model decides them:
    # inside a code block that keeps a line they stay, and so does a `·` between two kept blocks.
    kept = {"Components are functions:", "function Button() {", "return (", "Click"}
    kept.add("Nest it inside another component.")
    selection, document = select(kept, EDITOR)
    markdown = to_markdown(content_element(document, selection), "https://example.org/")
    assert "function Button() {\n  return (\n    Click\n  );\n}\n```" in markdown
    assert "·" in markdown and "—" not in markdown and "Copyright" not in markdown  # after the last kept block
    selection, document = select({"Nest it inside another component."}, EDITOR)
    markdown = to_markdown(content_element(document, selection), "https://example.org/")
    assert "}" not in markdown and ");" not in markdown  # a code block kept nowhere leaves no braces


def test_a_kept_hidden_tabs_listing_keeps_its_braces_and_a_hidden_symbol_stays_out() -> None:
    html = """<html><body><p>Install it with your package manager of choice.</p>
<div data-bw-hidden="display"><pre><code><div>fn main() {</div><div>}</div></code></pre></div>
<p>Then run it.</p><span data-bw-hidden="display"><div>×</div></span><p>Done.</p>
<ul><li><div data-bw-hidden="display">-</div><a href="#step">Step one of the guide</a></li></ul></body></html>"""
    kept = {"Install it with your package manager of choice.", "fn main() {", "Then run it.", "Done."}
    kept.add("Step one of the guide")
    selection, document = select(kept, html)
    markdown = to_markdown(content_element(document, selection), "https://example.org/")
    assert "fn main() {\n}" in markdown and "×" not in markdown
    assert "- [Step one of the guide]" in markdown  # a hidden marker inside a kept item stays hidden


def test_code_blocks_are_kept_or_dropped_whole() -> None:
    document = choose_document(EDITOR)
    blocks = segment(document.root)
    lines = {b.index for b in blocks if b.text in ("function Button() {", "return (", "Click")}
    assert _keep_whole(blocks, {min(lines), max(lines)}, set(), "pre") == lines  # most of its words
    assert _keep_whole(blocks, {max(lines)}, set(), "pre") == set()  # one word of four: none of it


def test_forest_evaluates_trees_like_the_exported_json() -> None:
    # One stump: x <= 0.5 goes left (-2.0), else right (+3.0).
    forest = Forest(("x",), 0.0, (((0, -1, -1), (0.5, 0.0, 0.0), (1, 0, 0), (2, 0, 0), (0.0, -2.0, 3.0)),), 0.5, {})
    low, high, absent = forest.probabilities([{"x": 0.0}, {"x": 1.0}, {}])
    assert abs(low - 1 / (1 + 2.718281828**2)) < 1e-6 and high > 0.95 and absent == low
    again = Forest.from_json(json.loads(json.dumps(forest.to_json())))
    assert again.probabilities([{"x": 1.0}]) == [high]


@pytest.mark.parametrize("index", [0, 1])
def test_shipped_models_match_the_features_the_engine_computes(index: int) -> None:
    models = load_models()
    if index >= len(models):
        pytest.skip("no model_structure.json shipped")
    model = models[index]
    document = choose_document(PAGE)
    blocks = segment(document.root)
    votes = {name: [True] * len(blocks) for name in ("trafilatura", "readability")}
    rows = block_rows(blocks, votes, page_kind_features(document.root, "https://example.org/blog/post"))
    computed = set(rows[0])
    names = {n for n in model.features if not n.startswith(("vote_", "page_kept_"))}
    assert names, "the model uses block features"
    assert names <= computed, names - computed
    probabilities = model.probabilities(rows)
    assert len(probabilities) == len(blocks) and all(0.0 <= p <= 1.0 for p in probabilities)
    if index == 1:  # the structure model is the one that reads structure.py's features
        assert set(STRUCTURE_FEATURES) & set(model.features)
        assert not set(STRUCTURE_FEATURES) & set(models[0].features)


def test_mean_probabilities_average_the_models() -> None:
    low = Forest(("x",), math.log(0.2 / 0.8), (), 0.5, {})
    high = Forest(("x",), math.log(0.6 / 0.4), (), 0.5, {})
    assert [round(p, 6) for p in mean_probabilities([low, high], [{}, {"x": 1.0}])] == [0.4, 0.4]
    assert mean_probabilities([low], [{}]) == low.probabilities([{}])


def test_page_kind_signals_come_from_the_page_itself() -> None:
    from sandbox_image.scrape.dom import parse_html

    root = parse_html(
        '<html><head><script type="application/ld+json">{"@type": ["Product"]}</script>'
        '<meta property="og:type" content="article"></head><body><div itemtype="https://schema.org/QAPage"></div>'
        "</body></html>"
    )
    kinds = page_kind_features(root, "https://shop.example/products/mug")
    assert kinds["declares_product"] == kinds["declares_article"] == kinds["declares_forum"] == 1.0
    assert kinds["declares_docs"] == 0.0
    assert kinds["path_product"] == 1.0 and kinds["path_forum"] == 0.0 and kinds["path_depth"] == 2.0
    assert page_kind_features(parse_html(""), "about:blank")["path_depth"] == 1.0
    assert sum(page_kind_features(parse_html(""), "").values()) == 0.0


def test_wordless_inline_elements_of_kept_text_still_separate_words() -> None:
    # A highlighter's whitespace-only spans between tokens, and a <span><br></span> between lines:
    # dropping them (they hold no words) glued "from pydantic import" into "frompydanticimport".
    html = (
        "<html><body><main><p>Intro text that is kept.</p>"
        '<pre><code><span class="kn">from</span><span class="w"> </span><span class="nn">pydantic</span>'
        '<span class="w"> </span><span class="kn">import</span> BaseModel</code></pre>'
        "<p><span>Compact Bench</span><span><br></span><span>Price: $299</span></p>"
        "<p>Dropped paragraph <span> </span>here.</p></main></body></html>"
    )
    document = choose_document(html)
    blocks = segment(document.root)
    kept = {b.index for b in blocks if not b.text.startswith("Dropped")}
    selection = Selection(blocks, [1.0 if b.index in kept else 0.0 for b in blocks], kept, fallback=False)
    markdown = to_markdown(content_element(document, selection), "https://example.org/")
    assert "from pydantic import BaseModel" in markdown
    assert "Compact Bench  \nPrice: $299" in markdown or "Compact Bench\nPrice: $299" in markdown
    assert "Dropped" not in markdown and "here" not in markdown


def test_a_kept_tables_empty_and_symbol_cells_hold_their_columns() -> None:
    html = """<html><body><p>Plans compared, feature by feature, for small and large teams alike.</p>
<table><tr><th>Feature</th><th>Free</th><th>Pro</th></tr>
<tr><td>Exports</td><td></td><td>✓</td></tr><tr><td>Support</td><td>—</td><td>Email and phone</td></tr></table>
<p>Prices are per month.</p></body></html>"""
    document = choose_document(html)
    blocks = segment(document.root)
    kept = {b.index for b in blocks}
    selection = Selection(blocks, [1.0] * len(blocks), kept, fallback=False)
    markdown = to_markdown(content_element(document, selection), "https://example.org/")
    rows = [" ".join(line.split()) for line in markdown.splitlines() if line.startswith("|")]
    assert rows[0] == "| Feature | Free | Pro |"
    assert rows[2] == "| Exports | | ✓ |" and rows[3] == "| Support | — | Email and phone |"
