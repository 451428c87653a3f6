"""Main content: the blocks the classifier keeps, cut out of the page with its structure intact.

Pipeline: the page's blocks (blocks.py) → each voter's text (voters.py) mapped onto them
(align.py) → features (features.py) → the trained trees (model.py) → kept blocks → a copy of the
page with everything else pruned, so headings, lists, tables and code stay what they were.

Rules on top of the per-block decisions, each a whole-page judgement:
- code, table cells and headings between kept blocks follow them from a lower probability
  (whole_page.follow_neighbours); hidden tab panels beside a kept, visible one are kept with it
  (whole_page.hidden_tabs_follow: the reader opens them with a click);
- a template slot whose words are mostly kept is kept whole, and a text kept twice (a quoted post,
  a layout's second copy) is kept once except on pages heavy with code (whole_page.finish), and a
  code page's own table of contents is dropped (whole_page.drop_page_contents);
- the per-post furniture of forum and Q&A platforms (the author's statistics, title, signature),
  where it comes back post after post, is dropped (post_furniture.py), and so is a breadcrumb trail
  (breadcrumbs.py);
- a table or a code block is kept or dropped whole (by whether most of its words were kept,
  furniture not counted), since half a table reads as nonsense and half a listing does not run; a
  kept row's empty cells stay, so its other cells keep their columns;
- images, and text without a word (a code editor's `}` line, a `·` between paragraphs), are kept
  when they sit in the flow of the main content: inside a kept block, or between two kept blocks
  with nothing else in between (wordless text also anywhere in a code block that keeps a line).
And the fallback (seed TC-04): when the kept content is empty or implausibly short — fewer than
MIN_WORDS words and under MIN_SHARE of the page — the whole visible page is returned instead; so
it is when the block model finds nothing plausible at its default threshold and what the
selector's laxer one keeps is mostly link text (the page's navigation, not its content).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lxml.html import HtmlElement

from sandbox_image.scrape.align import kept_blocks
from sandbox_image.scrape.blocks import BLOCK_TAGS, Block, is_wordless_text, segment
from sandbox_image.scrape.breadcrumbs import breadcrumb_blocks
from sandbox_image.scrape.candidates import CANDIDATES, DEFAULT, THRESHOLDS, choose
from sandbox_image.scrape.document import Document
from sandbox_image.scrape.dom import HIDDEN_MARK, HIDDEN_REASONS
from sandbox_image.scrape.features import block_features
from sandbox_image.scrape.lexicon import FEATURES as LEXICON_FEATURES
from sandbox_image.scrape.lexicon import Lexicon, load_lexicon, text_features
from sandbox_image.scrape.model import Forest, load_models, load_selector, mean_probabilities
from sandbox_image.scrape.page_kind import page_kind_features
from sandbox_image.scrape.post_furniture import furniture_blocks
from sandbox_image.scrape.structure import FEATURES as STRUCTURE_FEATURES
from sandbox_image.scrape.structure import template_path
from sandbox_image.scrape.voters import run_voters
from sandbox_image.scrape.whole_page import drop_page_contents, finish, follow_neighbours, hidden_tabs_follow

MIN_WORDS = 20
MIN_SHARE = 0.05
MEDIA_TAGS = ("img", "picture", "video", "audio", "figure", "svg", "iframe")
_BLOCK_ATTR = "data-bw-block"


@dataclass
class Selection:
    blocks: list[Block]
    probabilities: list[float]
    kept: set[int]
    fallback: bool  # the page was returned whole (nothing plausible was found)
    candidate: str = CANDIDATES[DEFAULT]  # which candidate selection (candidates.py) was chosen

    @property
    def kept_words(self) -> int:
        return sum(self.blocks[i].words for i in self.kept)

    @property
    def page_words(self) -> int:
        return sum(b.words for b in self.blocks)

    def text(self) -> str:
        return "\n".join(b.text for b in self.blocks if b.index in self.kept)


def implausibly_short(kept_words: int, page_words: int) -> bool:
    """Seed TC-04: empty, or fewer than MIN_WORDS words that are also under MIN_SHARE of the page."""
    return kept_words == 0 or (kept_words < MIN_WORDS and kept_words < MIN_SHARE * page_words)


def block_rows(
    blocks: Sequence[Block],
    votes: Mapping[str, Sequence[bool]],
    page: Mapping[str, float],
    lexicon: Lexicon | None = None,
    with_structure: bool = True,
    with_lexicon: bool = True,
) -> list[dict[str, float]]:
    """What the block models read of each block: features.py's figures and, `with_lexicon`, the lexicon's (the
    shipped one unless given). Training adds the lexicon's its own way (nested, benchmarks/scrape_train.py)."""
    rows = block_features(blocks, votes, page, with_structure=with_structure)
    if not with_lexicon:
        return rows
    lexical = text_features([b.text for b in blocks], load_lexicon() if lexicon is None else lexicon)
    return [row | extra for row, extra in zip(rows, lexical, strict=True)]


def select_blocks(
    document: Document,
    url: str,
    lang: str = "",
    models: Sequence[Forest] | None = None,
    voter_texts: Mapping[str, str] | None = None,
    selector: Forest | None = None,
    use_selector: bool = True,
    lexicon: Lexicon | None = None,
) -> Selection:
    """Which blocks of the document are main content (with the fallback rule applied).

    `voter_texts` lets the benchmark reuse the voters' answers it cached for this very document;
    `use_selector=False` keeps the block model's default threshold on every page (no stacking).
    Without `models`, the shipped block models are averaged (model.load_models); the benchmark's
    cross-validation passes each fold's own models, selector and `lexicon` (default: the shipped one).
    """
    models = models or load_models()
    selector = (selector or load_selector()) if use_selector else None
    blocks = segment(document.root)
    if not blocks:
        return Selection(blocks, [], set(), fallback=True)
    texts = [b.text for b in blocks]
    answers = voter_texts if voter_texts is not None else run_voters(document.html(), url, lang)
    votes = {name: kept_blocks(texts, text) for name, text in answers.items()}
    page = page_kind_features(document.root, url)
    wanted = {name for m in models for name in m.features}
    rows = block_rows(
        blocks,
        votes,
        page,
        lexicon,
        with_structure=not wanted.isdisjoint(STRUCTURE_FEATURES),
        with_lexicon=not wanted.isdisjoint(LEXICON_FEATURES),
    )
    probabilities = mean_probabilities(models, rows)
    words = [b.words for b in blocks]
    default_words = sum(w for w, p in zip(words, probabilities, strict=True) if p >= THRESHOLDS[DEFAULT])
    nothing_at_default = implausibly_short(default_words, sum(words))
    if sum(words) < MIN_WORDS:
        # A page shorter than MIN_WORDS (an error page's heading and one line) leaves no choice
        # worth a guess: the default stands.
        selector = None
    # The selector compares the candidates as it was trained to (each with its repeats dropped);
    # the chosen threshold's blocks then get the whole-page rules (whole_page.py).
    chosen, _ = choose(rows, words, probabilities, selector, texts)
    steps: dict[object, str] = {}
    paths = [template_path(b, steps) for b in blocks]
    flags = follow_neighbours([p >= THRESHOLDS[chosen] for p in probabilities], probabilities, rows)
    flags = hidden_tabs_follow(flags, blocks)
    flags = finish(flags, texts, paths, words, rows)
    flags = drop_page_contents(flags, blocks, rows, words)
    furniture = furniture_blocks(document.root, blocks)
    kept = {b.index for b, k in zip(blocks, flags, strict=True) if k and b.index not in furniture}
    kept -= breadcrumb_blocks(blocks, kept)
    kept = _keep_whole(blocks, kept, furniture, "table")
    kept = _keep_whole(blocks, kept, furniture, "pre")
    selection = Selection(blocks, probabilities, kept, fallback=False, candidate=CANDIDATES[chosen])
    if implausibly_short(selection.kept_words, selection.page_words) or (
        nothing_at_default and _mostly_links(blocks, kept)
    ):
        # Where the block model finds nothing plausible at its default, a laxer threshold may still
        # find the text (a shop's description, a short post); when what it finds is mostly links it
        # is the page's navigation, and that is the fallback's case (seed TC-04).
        selection.kept = {b.index for b in blocks}
        selection.fallback = True
    return selection


def _mostly_links(blocks: list[Block], kept: set[int]) -> bool:
    words = sum(blocks[i].words for i in kept)
    return sum(blocks[i].link_words for i in kept) * 2 >= words


def _keep_whole(blocks: list[Block], kept: set[int], furniture: set[int], tag: str) -> set[int]:
    """Keep or drop each `tag` element (a table, a code block) whole, by whether most of its words
    were kept: half a table shifts its columns, half a listing does not compile (a code editor's
    lines are blocks of their own, and a line of only `);` or `}` carries no word the models weigh).

    Post furniture is out of the count and out of the result: a thread laid out as a table (one row
    per post) must not lose its posts because their signatures were taken away.
    """
    units: dict[HtmlElement, list[Block]] = {}  # keyed by the element (kept alive), never by id()
    for b in blocks:
        if b.index in furniture:
            continue
        unit = b.element if b.element.tag == tag else next(b.element.iterancestors(tag), None)
        if unit is not None:
            units.setdefault(unit, []).append(b)
    result = set(kept)
    for members in units.values():
        total = sum(b.words for b in members)
        inside = sum(b.words for b in members if b.index in kept)
        for b in members:
            (result.add if inside * 2 >= total and inside else result.discard)(b.index)
    return result


def _in_flow(root: HtmlElement, blocks: list[Block], kept: set[int]) -> tuple[list[HtmlElement], list[HtmlElement]]:
    """Media, and text without a word (`);`, `}`, `—`), that sit in the flow of the main content:
    inside a kept block or between two kept blocks (document order); wordless text also anywhere in
    a code block that keeps a line, where a closing brace is as much the code as the line above it
    (a hidden tab's listing too, when it is kept: round 17).

    Keyed by the elements themselves, not their id()s: lxml hands out short-lived proxy objects, so
    the id of a proxy that has been freed can come back as the id of another element's proxy (that
    made the output depend on what earlier code left in memory).
    """
    by_element = {b.element: b.index for b in blocks}
    order: list[tuple[str, HtmlElement, int]] = []  # ("block", el, index) | ("media"/"text", el, -1)
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        if element in by_element:
            order.append(("block", element, by_element[element]))
        elif element.tag in MEDIA_TAGS:
            order.append(("media", element, -1))
        elif is_wordless_text(element):
            order.append(("text", element, -1))
    keep: dict[HtmlElement, str] = {}  # an ordered set: document order, each element once
    code_kept: dict[HtmlElement, bool] = {}  # per <pre>: does it keep a line?
    last_block = -1
    pending: list[tuple[str, HtmlElement]] = []
    for kind, element, index in order:
        if kind == "block":
            if index in kept and last_block in kept:
                # Between two kept blocks only what a reader sees: not a hidden `×` or separator.
                keep.update((e, kind) for e, kind in pending if kind == "media" or not _hidden(e))
            pending, last_block = [], index
            continue
        owner = next((a for a in element.iterancestors() if a in by_element), None)
        pre = next(element.iterancestors("pre"), None) if kind == "text" else None
        if pre is not None and pre not in code_kept:
            code_kept[pre] = any(by_element.get(e, -1) in kept for e in pre.iter())
        seen = kind == "media" or not _hidden(element)
        if (seen and owner is not None and by_element[owner] in kept) or (pre is not None and code_kept[pre]):
            keep[element] = kind
        pending.append((element, kind))
    return [e for e, kind in keep.items() if kind == "media"], [e for e, kind in keep.items() if kind == "text"]


def _hidden(element: HtmlElement) -> bool:
    return any(e.get(HIDDEN_MARK) in HIDDEN_REASONS for e in (element, *element.iterancestors()))


def content_element(document: Document, selection: Selection) -> HtmlElement:
    """A copy of the document's body holding only the kept blocks (and media in their flow)."""
    root = document.root
    body = root.find("body")
    body = body if body is not None else root
    media, wordless = _in_flow(body, selection.blocks, selection.kept)
    marked = [(b.element, _BLOCK_ATTR, "1" if b.index in selection.kept else "0") for b in selection.blocks]
    marked += [(e, _BLOCK_ATTR, "1") for e in wordless] + [(e, "data-bw-media", "1") for e in media]
    for element, attribute, value in marked:
        element.set(attribute, value)
    try:
        out = copy.deepcopy(body)
    finally:
        for element, attribute, _ in marked:
            element.attrib.pop(attribute, None)
    _prune(out, False)
    for element in out.iter():
        element.attrib.pop(_BLOCK_ATTR, None)
        element.attrib.pop("data-bw-media", None)
    out.tag = "body"
    return out


def _prune(element: HtmlElement, inherited: bool) -> bool:
    """Drop what is not kept below `element`; True when something worth keeping remains.

    Text belongs to the nearest block: a marked element's own text is kept with its mark, an
    unmarked block-level wrapper has no words of its own, and inline elements (and tails) follow
    the block they sit in. Inline elements that wrap kept blocks (cards in an <a>) stay.
    """
    mark = element.get(_BLOCK_ATTR)
    if mark is not None:
        own = mark == "1"
    elif element.tag in BLOCK_TAGS:
        own = False
    else:
        own = inherited
    if not own:
        element.text = None
    keep = own and bool((element.text or "").strip())
    row_kept = element.tag == "tr" and _has_kept(element)
    for child in list(element):
        if not isinstance(child.tag, str):  # comments, processing instructions
            child.drop_tree()
            continue
        if not own:
            child.tail = None
        elif (child.tail or "").strip():
            keep = True
        if child.get("data-bw-media") == "1":
            keep = True
        elif child.tag in MEDIA_TAGS and not _has_kept(child):
            child.drop_tree()
        elif child.tag in _BREAKS:
            if not own:
                child.drop_tree()
        elif _prune(child, own):
            keep = True
        elif row_kept and child.tag in _CELLS:
            pass  # an empty cell of a kept row holds its column: without it the next cell moves left
        elif own and child.get(_BLOCK_ATTR) is None and child.tag not in BLOCK_TAGS:
            # An inline element of kept text without words of its own still separates words: a
            # highlighter's `<span> </span>` between tokens, a `<span><br></span>` between lines.
            child.drop_tag()
        else:
            child.drop_tree()
    return keep


_BREAKS = frozenset({"br", "wbr"})
_CELLS = frozenset({"td", "th"})


def _has_kept(element: HtmlElement) -> bool:
    return any(e.get(_BLOCK_ATTR) == "1" or e.get("data-bw-media") == "1" for e in element.iter())
