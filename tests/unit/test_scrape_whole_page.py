"""scrape: the whole-page rules on the chosen blocks (whole_page.py) and their place in select_blocks."""

from __future__ import annotations

import math

from sandbox_image.scrape import whole_page
from sandbox_image.scrape.blocks import segment
from sandbox_image.scrape.document import choose_document
from sandbox_image.scrape.main_content import select_blocks
from sandbox_image.scrape.model import Forest

POST = ("div", "div.post", "p.body")
CARD = ("div", "div.card", "p.name")


def test_a_template_group_mostly_kept_is_kept_whole() -> None:
    paths = [POST, POST, POST, POST, ("nav", "a.link")]
    words = [50, 40, 30, 5, 3]
    assert whole_page.template_majority([True, True, False, False, False], paths, words) == [
        True,
        True,
        True,  # 90 of 125 words kept: the slot is content, so its short reply is too
        True,
        False,  # another slot is left as it was
    ]


def test_template_majority_only_adds_and_needs_a_real_group() -> None:
    # Mostly dropped: unchanged (the rule never removes what the model kept).
    assert whole_page.template_majority([True, False, False], [POST] * 3, [5, 40, 40]) == [True, False, False]
    # Two look-alikes are not a group (GROUP_MIN_BLOCKS), however much of them is kept.
    assert whole_page.template_majority([True, False], [CARD] * 2, [50, 5]) == [True, False]
    # Exactly half of the words is a majority; wordless groups change nothing.
    assert whole_page.template_majority([True, False, False], [CARD] * 3, [10, 5, 5]) == [True, True, True]
    assert whole_page.template_majority([False] * 3, [CARD] * 3, [0, 0, 0]) == [False] * 3


def test_code_share_counts_pre_blocks_and_blocks_inside_code() -> None:
    rows = [{"pre": 1.0}, {"in_code": 1.0}, {"para": 1.0}, {}]
    assert whole_page.code_share(rows, [10, 10, 20, 60]) == 0.2
    assert whole_page.code_share([{}, {}], [0, 0]) == 0.0


def test_repeats_are_kept_once_except_on_a_page_heavy_with_code() -> None:
    texts = ["Set the environment variables first", "x = 1", "Set the environment variables first", "y = 2"]
    paths = [("p",), ("pre",), ("p",), ("pre",)]
    prose = [{"para": 1.0}, {"para": 1.0}, {"para": 1.0}, {"para": 1.0}]
    code = [{"para": 1.0}, {"pre": 1.0}, {"para": 1.0}, {"pre": 1.0}]
    words = [5, 2, 5, 2]
    assert whole_page.finish([True] * 4, texts, paths, words, prose) == [True, True, False, True]
    assert whole_page.finish([True] * 4, texts, paths, words, code) == [True] * 4  # every tab's copy stays


def test_a_table_of_contents_said_twice_is_kept_once_even_on_a_code_page() -> None:
    # docs.sqlalchemy.org (dev-300 0664): the page's contents in the sidebar and again above the text;
    # the steps repeated in each tab stay, the links said twice do not
    toc, step = "Declare Models Create an Engine", "Set the environment variables first"
    texts = [toc, step, "x = 1", toc, step, "y = 2"]
    paths = [("ul", "li"), ("p",), ("pre",), ("ul", "li"), ("p",), ("pre",)]
    links, para, pre = {"link_density": 1.0, "li": 1.0}, {"para": 1.0}, {"pre": 1.0}
    rows = [links, para, pre, links, para, pre]
    words = [5, 5, 3, 5, 5, 3]
    assert whole_page.finish([True] * 6, texts, paths, words, rows) == [True, True, True, False, True, True]


def test_of_a_text_kept_once_the_heading_is_the_copy_kept() -> None:
    # An article's contents box says each section heading first; repeats once kept the entries and
    # dropped the headings, so the markdown lost its outline (182 dev-rest pages). Same words either way.
    first, second = "Why organic pest control matters", "Proper identification of pests"
    texts = [first, second, first, "Pests are not all alike.", second, "Look closely.", second]
    paths = [("ul", "li"), ("ul", "li"), ("h2",), ("p",), ("h2",), ("p",), ("h3",)]
    entry, heading, para = {"link_density": 1.0, "li": 1.0}, {"heading": 1.0}, {"para": 1.0}
    rows = [entry, entry, heading, para, heading, para, heading]
    words = [5, 4, 5, 5, 4, 2, 4]
    kept = whole_page.finish([True] * 7, texts, paths, words, rows)
    assert kept == [False, False, True, True, True, True, False]  # a heading said twice stays once
    # only among what was kept: a heading the model dropped does not come back, the entry stays
    assert whole_page.finish([True, True, False, True, True, True, True], texts, paths, words, rows)[:3] == [
        True,
        False,
        False,
    ]
    # two plain copies: the first stays, as before
    plain = [para] * 7
    assert whole_page.finish([True] * 7, texts, paths, words, plain)[:3] == [True, True, False]


ARTICLE_WITH_CONTENTS = """<html><body><main><h1>Organic pest control</h1>
<ul class="contents"><li><a href="#why">Why organic pest control matters</a></li>
<li><a href="#id">Proper identification of pests</a></li></ul>
<h2 id="why">Why organic pest control matters</h2><p>Sprays kill the insects that eat the pests, too.</p>
<h2 id="id">Proper identification of pests</h2><p>Most insects in a garden do no harm at all.</p>
</main></body></html>"""


def test_an_articles_markdown_keeps_its_section_headings_after_its_contents() -> None:
    from sandbox_image.scrape.extract import extract_html

    voters = {"trafilatura": "", "resiliparse": ""}
    markdown = extract_html(
        ARTICLE_WITH_CONTENTS, "https://example.org/pests", models=(_certain(0.9),), voter_texts=voters
    ).markdown
    assert "## Why organic pest control matters" in markdown
    assert "## Proper identification of pests" in markdown
    assert markdown.count("Proper identification of pests") == 1


def _certain(probability: float) -> Forest:
    """A block model without trees: every block gets `probability`."""
    return Forest(("x",), math.log(probability / (1 - probability)), (), 0.5, {})


TABS = """<html><body><main><h1>Send a message</h1>
<div class="tab"><p>Replace the value for from with the phone number you were given.</p>
<pre>client.send(to, body)</pre></div>
<div class="tab"><p>Replace the value for from with the phone number you were given.</p>
<pre>{}</pre></div></main></body></html>"""


def test_select_blocks_keeps_each_tabs_copy_on_a_code_page_and_one_copy_elsewhere() -> None:
    voters = {"trafilatura": "", "resiliparse": ""}
    code_page = choose_document(TABS.format("Client.Send(to, body);"))
    selection = select_blocks(code_page, "https://example.org/", models=(_certain(0.9),), voter_texts=voters)
    assert sum("Replace the value" in b.text for b in selection.blocks if b.index in selection.kept) == 2
    prose_page = choose_document(TABS.replace("<pre>client.send(to, body)</pre>", "").format(""))
    selection = select_blocks(prose_page, "https://example.org/", models=(_certain(0.9),), voter_texts=voters)
    assert sum("Replace the value" in b.text for b in selection.blocks if b.index in selection.kept) == 1


THREAD = """<html><body><nav><a href="/">Home</a> <a href="/new">New</a> <a href="/top">Top</a></nav>
<main>{}</main></body></html>""".format(
    "".join(
        f'<div class="post"><p class="body">{text}</p></div>'
        for text in (
            "I replaced the battery and the board still does not start at all.",
            "Check the fuse first, it sits under the deck next to the controller.",
            "Thanks!",
            "The fuse was blown; with a new one the board starts again.",
        )
    )
)


def test_select_blocks_keeps_a_short_reply_whose_template_slot_is_kept() -> None:
    # A block model that only trusts blocks of more than four words: the one-word reply falls under
    # the threshold, but its slot (every post body) is mostly kept, so the reply comes with it.
    long_only = Forest(
        ("log_words",), 0.0, (((0, -1, -1), (1.7, 0.0, 0.0), (1, 0, 0), (2, 0, 0), (0.0, -3.0, 3.0)),), 0.5, {}
    )
    document = choose_document(THREAD)
    selection = select_blocks(
        document, "https://example.org/t/1", models=(long_only,), voter_texts={"trafilatura": ""}, use_selector=False
    )
    kept = {b.text for b in selection.blocks if b.index in selection.kept}
    assert "Thanks!" in kept and not selection.fallback
    assert "Home New Top" not in kept  # the navigation, another slot, stays dropped
    assert selection.probabilities[[b.text for b in selection.blocks].index("Thanks!")] < 0.5


def test_code_cells_and_headings_between_kept_blocks_follow_them() -> None:
    prose, code, cell, heading = {"para": 1.0}, {"pre": 1.0}, {"cell": 1.0}, {"heading": 1.0}
    rows = [prose, code, code, prose, cell, cell, prose, heading, prose, code, prose]
    mask = [True, False, False, True, True, False, True, False, True, False, False]
    probabilities = [0.9, 0.3, 0.25, 0.8, 0.6, 0.2, 0.7, 0.45, 0.9, 0.4, 0.1]
    assert whole_page.follow_neighbours(mask, probabilities, rows) == [
        True,
        True,  # a listing in two blocks between kept prose: both follow
        True,
        True,
        True,
        True,  # the rest of a kept table's row
        True,
        True,  # a heading between kept paragraphs
        True,
        False,  # code whose next block is dropped stays dropped
        False,
    ]


def test_the_shown_tabs_code_follows_past_its_tab_strip() -> None:
    # v2.tauri.app/start (dev-300 0677): a kept paragraph, the tab strip (first label kept, the rest
    # dropped), the shown tab's command at 0.34, then kept prose: the labels are no content of their own
    prose, code = {"para": 1.0}, {"pre": 1.0}
    label = {"li": 1.0, "role_nav_aid": 0.8, "log_words": math.log1p(1)}
    rows = [prose, label, label, label, code, prose]
    mask = [True, True, False, False, False, True]
    probabilities = [0.9, 0.59, 0.44, 0.31, 0.34, 0.94]
    assert whole_page.follow_neighbours(mask, probabilities, rows) == [True, True, False, False, True, True]
    # a navigation aid that is more than a label (a filter's sentence) still breaks the run
    wordy = {"role_nav_aid": 0.8, "log_words": math.log1p(whole_page.TAB_LABEL_WORDS + 1)}
    rows = [prose, wordy, code, prose]
    assert whole_page.follow_neighbours([True, False, False, True], [0.9, 0.3, 0.34, 0.9], rows) == [
        True,
        False,
        False,
        True,
    ]


def test_follow_neighbours_needs_some_probability_and_only_adds() -> None:
    rows = [{"para": 1.0}, {"pre": 1.0}, {"para": 1.0}, {"heading": 1.0}]
    assert whole_page.follow_neighbours([True, False, True, False], [0.9, 0.19, 0.9, 0.9], rows) == [
        True,
        False,  # under FOLLOW_PROBABILITY: the model is sure it is not content
        True,
        False,  # a last heading has nothing kept after it
    ]
    unchanged = [True, True, False, True]
    assert whole_page.follow_neighbours(unchanged, [0.9, 0.1, 0.1, 0.9], rows) == unchanged


def test_code_and_a_table_beside_it_follow_together() -> None:
    # prose, a dropped code block right above a dropped table (two cells), prose: neither waits on the
    # other; a kept code block counts as a kept neighbour
    rows = [{"para": 1.0}, {"pre": 1.0}, {"cell": 1.0}, {"cell": 1.0}, {"para": 1.0}]
    mask = [True, False, False, False, True]
    assert whole_page.follow_neighbours(mask, [0.9, 0.5, 0.6, 0.6, 0.9], rows) == [True] * 5
    assert whole_page.follow_neighbours([False, False, False, False, True], [0.1, 0.5, 0.6, 0.6, 0.9], rows) == [
        False,
        False,  # nothing kept above the code: nothing follows
        False,
        False,
        True,
    ]
    kept_code = [False, True, False, False, True]
    assert whole_page.follow_neighbours(kept_code, [0.1, 0.9, 0.6, 0.6, 0.9], rows) == [False, True, True, True, True]


PRODUCT_TABS = """<html><body>
<div class="menu-tabs"><div role="tabpanel"><a href="/desks">Desks and tables</a></div>
  <div role="tabpanel" data-bw-hidden="display"><a href="/chairs">Office chairs</a></div></div>
<main><h1>Walnut desk</h1><ul role="tablist"><li role="tab">Description</li><li role="tab">Specifications</li></ul>
<div class="tab-content">
  <div class="tab-pane active"><p>A walnut desk with two drawers and a cable tray.</p></div>
  <div class="tab-pane" data-bw-hidden="display"><p>Width 140 cm, depth 70 cm, height 75 cm.</p></div>
</div></main></body></html>"""


def test_hidden_tab_panels_follow_the_kept_panel_beside_them() -> None:
    blocks = segment(choose_document(PRODUCT_TABS).root)
    texts = [b.text for b in blocks]
    mask = [t.startswith(("Walnut", "A walnut")) for t in texts]
    flags = whole_page.hidden_tabs_follow(mask, blocks)
    kept = {t for t, k in zip(texts, flags, strict=True) if k}
    assert "Width 140 cm, depth 70 cm, height 75 cm." in kept  # the specifications, one click away
    assert "Office chairs" not in kept  # the menu's visible panel was dropped: its hidden one stays so
    assert "Specifications" not in kept  # the tab list is not a panel
    assert whole_page.hidden_tabs_follow([False] * len(blocks), blocks) == [False] * len(blocks)


def test_select_blocks_brings_the_hidden_panel_of_a_kept_tab_set() -> None:
    # A block model that trusts what the reader sees and nothing hidden: the shown panel is kept,
    # and the panel a click away comes with it.
    visible_only = Forest(
        ("hidden",), 0.0, (((0, -1, -1), (0.5, 0.0, 0.0), (1, 0, 0), (2, 0, 0), (0.0, 3.0, -3.0)),), 0.5, {}
    )
    selection = select_blocks(
        choose_document(PRODUCT_TABS),
        "https://example.org/desk",
        models=(visible_only,),
        voter_texts={"trafilatura": ""},
        use_selector=False,
    )
    kept = {b.text for b in selection.blocks if b.index in selection.kept}
    assert {"A walnut desk with two drawers and a cable tray.", "Width 140 cm, depth 70 cm, height 75 cm."} <= kept
    assert (
        selection.probabilities[[b.text for b in selection.blocks].index("Width 140 cm, depth 70 cm, height 75 cm.")]
        < 0.5
    )


CONTENTS = """<html><body><main><h1>ORM Quick Start</h1>
<h2>On this page</h2><ul><li><a href="#declare-models">Declare Models</a></li>
<li><a href="#create-an-engine">Create an Engine ⚙️</a></li></ul>
<ul><li><a href="/orm/next.html#top">Next: Querying</a></li></ul>
<h2>Declare Models<a href="#declare-models">¶</a></h2><p>Declare the models the tables are mapped to.</p>
{}<h2>Create an Engine</h2><p>The engine is the source of database connections.</p>
</main></body></html>"""


def test_a_code_pages_own_table_of_contents_goes_with_its_title() -> None:
    # docs.sqlalchemy.org (dev-300 0664), MDN's "In this article", Docusaurus's right column: links to the
    # page's fragments that say its headings, on a page with code; the headings themselves stay
    voters = {"trafilatura": "", "resiliparse": ""}
    code_page = choose_document(CONTENTS.format("<pre>engine = create_engine(url)\nBase.metadata.create_all()</pre>"))
    selection = select_blocks(code_page, "https://example.org/", models=(_certain(0.9),), voter_texts=voters)
    kept = [b.text for b in selection.blocks if b.index in selection.kept]
    assert not any(text in kept for text in ("On this page", "Declare Models", "Create an Engine ⚙️"))
    assert "Next: Querying" in kept  # a link to another page is not the page's contents
    assert {"ORM Quick Start", "Create an Engine"} <= set(kept) and any(t.startswith("Declare Models") for t in kept)
    # Without code (an article's "Contents" box, which WCXB's references keep) the contents stay; of an
    # entry that says a heading word for word (three words or more: a repeat) the heading's copy is kept.
    prose_page = choose_document(CONTENTS.format(""))
    selection = select_blocks(prose_page, "https://example.org/", models=(_certain(0.9),), voter_texts=voters)
    kept = [b.text for b in selection.blocks if b.index in selection.kept]
    assert {"On this page", "Declare Models", "Create an Engine"} <= set(kept)
    assert "Create an Engine ⚙️" not in kept


def test_drop_page_contents_only_takes_from_what_is_kept() -> None:
    code_page = choose_document(CONTENTS.format("<pre>engine = create_engine(url)</pre>"))
    blocks = segment(code_page.root)
    rows = [{"pre": 1.0} if b.tag == "pre" else {} for b in blocks]
    words = [b.words for b in blocks]
    assert whole_page.drop_page_contents([False] * len(blocks), blocks, rows, words) == [False] * len(blocks)
    flags = whole_page.drop_page_contents([True] * len(blocks), blocks, rows, words)
    assert [b.text for b, keep in zip(blocks, flags, strict=True) if not keep] == [
        "On this page",
        "Declare Models",
        "Create an Engine ⚙️",
    ]
