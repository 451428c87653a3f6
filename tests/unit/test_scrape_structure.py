"""scrape: round-4 structure features — template groups, role words, text and element cues."""

from __future__ import annotations

from sandbox_image.scrape.blocks import segment
from sandbox_image.scrape.document import choose_document
from sandbox_image.scrape.features import block_features
from sandbox_image.scrape.structure import structure_features, template_path

THREAD = """<html><body>
<nav class="menu"><a href="/">Home</a></nav>
<div class="thread">
  <div class="post"><div class="user-info"><a href="/u/ann">ann</a></div>
    <div class="post-body"><p>I have an old projector and wonder what to buy next year.</p></div>
    <div class="signature">Gear: JVC RS2, Denon</div></div>
  <div class="post"><div class="user-info"><a href="/u/bob">bob</a></div>
    <div class="post-body"><p>Try the Epson, it is bright enough for a basement.</p></div>
    <div class="signature">Gear: Epson 5050, Marantz</div></div>
  <div class="post"><div class="user-info"><a href="/u/cy">cy</a></div>
    <div class="post-body"><p>Jan 3, 2024</p><blockquote>Try the Epson</blockquote></div>
    <div class="signature">Gear: Sony</div></div>
</div>
<aside class="facets"><ul><li><label><input type="checkbox"> Red (12)</label></li></ul></aside>
<pre><code>print(1)</code></pre>
<table><tr><th>k</th></tr><tr><td>v</td></tr></table>
</body></html>"""


def _rows() -> tuple[list, list[dict[str, float]]]:
    blocks = segment(choose_document(THREAD).root)
    votes = [1.0 if "projector" in b.text or "Epson, it" in b.text else 0.0 for b in blocks]
    return blocks, structure_features(blocks, votes)


def _row(blocks: list, rows: list[dict[str, float]], text: str) -> dict[str, float]:
    return next(r for b, r in zip(blocks, rows, strict=True) if b.text.startswith(text))


def test_blocks_in_the_same_template_slot_share_a_path_and_group_evidence() -> None:
    blocks, rows = _rows()
    bodies = [b for b in blocks if b.text.startswith(("I have", "Try the Epson, it"))]
    signatures = [b for b in blocks if b.text.startswith("Gear:")]
    assert template_path(bodies[0]) == template_path(bodies[1])
    assert template_path(bodies[0]) != template_path(signatures[0])
    body, signature = _row(blocks, rows, "I have"), _row(blocks, rows, "Gear: JVC")
    # the three post bodies' paragraphs form one group; two of them were kept, the date line was not
    assert 0.8 < body["group_votes"] < 1.0 and 0.5 < body["group_others_votes"] < 1.0
    assert signature["group_votes"] == 0.0 and signature["group_log_blocks"] > 0

    nav = _row(blocks, rows, "Home")
    assert nav["group_others_votes"] == -1.0  # alone in its slot: no others to learn from


def test_role_words_text_and_element_cues() -> None:
    blocks, rows = _rows()
    body, author = _row(blocks, rows, "I have"), _row(blocks, rows, "ann")
    assert body["role_discussion"] > 0 and body["role_post_furniture"] == 0
    assert author["role_post_furniture"] > 0
    facet = _row(blocks, rows, "Red (12)")
    assert facet["role_nav_aid"] > 0 and facet["text_count"] == 1.0
    assert facet["has_checkbox"] == 1.0 or _row(blocks, rows, "Red")["has_checkbox"] == 1.0
    date = _row(blocks, rows, "Jan 3, 2024")
    assert date["text_date"] == 1.0 and date["text_digit_share"] > 0.5
    quote = _row(blocks, rows, "Try the Epson")  # the first block with that text is the post
    assert quote["in_quote"] == 0.0 and any(r["in_quote"] for r in rows)
    assert _row(blocks, rows, "print(1)")["in_code"] == 1.0
    assert _row(blocks, rows, "k")["in_header_table"] == 1.0 and body["in_header_table"] == 0.0
    assert body["text_date"] == 0.0 and body["text_count"] == 0.0 and body["in_code"] == 0.0


def test_block_features_carry_the_structure_features_unless_asked_not_to() -> None:
    blocks = segment(choose_document(THREAD).root)
    votes = {"a": [True] * len(blocks)}
    with_structure = block_features(blocks, votes)
    without = block_features(blocks, votes, with_structure=False)
    assert "group_votes" in with_structure[0] and "group_votes" not in without[0]
    assert set(without[0]) < set(with_structure[0])
    assert structure_features([], []) == []


def test_deeply_nested_inline_tags_do_not_break_the_walk() -> None:
    # lxml's parser stops nesting near 256 levels; the walk is iterative whatever the depth
    html = (
        "<html><body><p>" + "<font>" * 240 + "deep text here" + "</font>" * 240 + "</p><pre>x = 1</pre></body></html>"
    )
    blocks = segment(choose_document(html).root)
    rows = structure_features(blocks, [1.0] * len(blocks))
    assert len(rows) == len(blocks) and rows[-1]["in_code"] == 1.0
