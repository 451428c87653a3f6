"""Whole-page rules applied to the chosen threshold's blocks (since round 5).

The block model judges each block on its own, and the selector (candidates.py) picks the page's
threshold; two judgements only make sense for the page as a whole:
- **template majority**: blocks that share a template slot (structure.template_path: every post
  body of a thread, every card of a listing) are one kind of thing, so when most of a slot's words
  are kept, the slot's other blocks are kept too (a short reply, a card the model was unsure of);
- **repeats once, except on code pages**: a kept text repeated later is kept once (a quoted post,
  a responsive layout's second copy; candidates.drop_repeats; when one copy is a heading and the
  kept one a contents entry, the heading's copy is the one kept, round 30), but not on a page where code holds
  CODE_PAGE_SHARE of the words or more: tutorials and references repeat the same steps, comments
  and sentences in each language's or platform's tab, and their reader wants every tab (a block
  that is all links is kept once there too: a table of contents in the sidebar and again above
  the text, round 26); and **a code page's own table of contents goes** (`drop_page_contents`, round
  27): links that each go to a fragment and say one of the page's headings ("On this page", the
  sidebar's in-page list) repeat the headings the reader already has.
Both chosen by site-grouped cross-validation on the WCXB development pages outside the scored set
(docs/scrape-quality.md, round 5). Before them (round 6), **code, table cells and headings
between kept blocks** follow their neighbours from a lower probability (`follow_neighbours`): a
long listing or a parameter table the model puts just under the threshold, or a section heading
between kept paragraphs, is part of the run it sits in (a tab strip's labels in between do not
break the run, round 26); and (round 17) **hidden tab panels follow
the one shown** (`hidden_tabs_follow`): the reader opens a product's specifications or a
tutorial's other language with a click, so when the visible panel's content is kept, the hidden
panels beside it are kept too. Nothing here names a site or reads a reference text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from sandbox_image.scrape.blocks import Block
from sandbox_image.scrape.candidates import drop_repeats, repeat_keys
from sandbox_image.scrape.dom import HIDDEN_MARK
from sandbox_image.scrape.structure import tab_panel

GROUP_MIN_BLOCKS = 3  # a template slot needs this many blocks to count as a group
GROUP_MAJORITY = 0.5  # share of a group's words kept from which the whole group is kept
CODE_PAGE_SHARE = 0.05  # share of the page's words in code blocks from which repeats are all kept
REPEATED_LINKS_DENSITY = 0.99  # on code pages too, a repeat this much link text is kept once (a contents list twice)
CONTENTS_TITLE_WORDS = 4  # a heading this short right above a dropped table of contents is its title
FOLLOW_PROBABILITY = 0.2  # a code block, table cell or heading between kept blocks is kept from this probability
# A dropped tab label (a navigation aid of at most this many words) between a kept paragraph and the code
# of the shown tab does not stop the code following (round 26): "Bash PowerShell npm Cargo" above
# `sh <(curl …)` is the tab strip, not the content the code belongs to.
TAB_LABEL_WORDS = 3
TAB_LABEL_LOG_WORDS = math.log1p(TAB_LABEL_WORDS) + 1e-9  # features.py stores log1p(words)


def _is_code(row: Mapping[str, float]) -> bool:
    return row.get("pre", 0.0) > 0 or row.get("in_code", 0.0) > 0


def _is_tab_label(row: Mapping[str, float]) -> bool:
    """A short block among navigation aids (structure.py's role words): a tab strip's label."""
    return row.get("role_nav_aid", 0.0) > 0 and row.get("log_words", math.inf) <= TAB_LABEL_LOG_WORDS


def _is_cell(row: Mapping[str, float]) -> bool:
    return row.get("cell", 0.0) > 0


def _is_heading(row: Mapping[str, float]) -> bool:
    return row.get("heading", 0.0) > 0


def follow_neighbours(
    mask: Sequence[bool], probabilities: Sequence[float], rows: Sequence[Mapping[str, float]]
) -> list[bool]:
    """Keep a dropped code block or table cell (FOLLOW_PROBABILITY or more) when, on both sides, the
    nearest block that is not another dropped code block, cell or tab label is kept (so a code block right
    above a table follows with it, and the shown tab's code below its tab strip), and likewise a heading
    between two kept blocks (or first on the page, before a kept one). Only adds; judged on the flags as
    they were (no chains)."""
    out = list(mask)
    n = len(mask)

    def follower(j: int) -> bool:
        return not mask[j] and (_is_code(rows[j]) or _is_cell(rows[j]) or _is_tab_label(rows[j]))

    for i in range(n):
        if mask[i] or probabilities[i] < FOLLOW_PROBABILITY:
            continue
        row = rows[i]
        if _is_code(row) or _is_cell(row):
            before = i - 1
            while before >= 0 and follower(before):
                before -= 1
            after = i + 1
            while after < n and follower(after):
                after += 1
            if before >= 0 and after < n and mask[before] and mask[after]:
                out[i] = True
        if _is_heading(row) and i + 1 < n and mask[i + 1] and (i == 0 or mask[i - 1]):
            out[i] = True
    return out


def template_majority(mask: Sequence[bool], paths: Sequence[tuple[str, ...]], words: Sequence[int]) -> list[bool]:
    """Keep every block of a template group (GROUP_MIN_BLOCKS or more) whose kept words are a majority.

    Only adds blocks: a group mostly dropped stays as the model decided."""
    groups: dict[tuple[str, ...], list[int]] = {}  # path -> [blocks, words, kept words]
    for keep, path, w in zip(mask, paths, words, strict=True):
        g = groups.setdefault(path, [0, 0, 0])
        g[0] += 1
        g[1] += w
        g[2] += w if keep else 0
    out = list(mask)
    for i, path in enumerate(paths):
        count, total, kept = groups[path]
        if not out[i] and count >= GROUP_MIN_BLOCKS and total and kept >= GROUP_MAJORITY * total:
            out[i] = True
    return out


def hidden_tabs_follow(mask: Sequence[bool], blocks: Sequence[Block]) -> list[bool]:
    """Keep the blocks of a hidden tab panel whose parent also holds a kept block of a shown panel.

    Only adds. Panels beside each other share a parent (the tab container). The panel itself must
    be what is hidden (as a tab hides it): something hidden inside a shown panel (an SEO data list,
    a collapsed form) is not a tab, and a hidden panel whose shown sibling was dropped (a menu's
    tabs, a listing's filters) stays dropped."""
    seen: dict[object, bool] = {}
    panels = [tab_panel(b.element, seen) for b in blocks]
    shown = {
        panel.getparent()
        for panel, block, keep in zip(panels, blocks, mask, strict=True)
        if keep and panel is not None and not block.hidden
    }
    shown.discard(None)
    return [
        keep or (panel is not None and bool(panel.get(HIDDEN_MARK)) and panel.getparent() in shown)
        for panel, keep in zip(panels, mask, strict=True)
    ]


def code_share(rows: Sequence[Mapping[str, float]], words: Sequence[int]) -> float:
    """Share of the page's words in code: a <pre> block or a block inside <pre>/<code> (features.py, structure.py)."""
    total = sum(words)
    if not total:
        return 0.0
    code = sum(w for row, w in zip(rows, words, strict=True) if row.get("in_code", 0.0) > 0 or row.get("pre", 0.0) > 0)
    return code / total


_NOT_WORD = re.compile(r"[\W_]+")


def _plain(text: str) -> str:
    """A heading as a link to it says it: case, pilcrows, emoji and "#" marks aside."""
    return _NOT_WORD.sub(" ", text.lower()).strip()


def drop_page_contents(
    mask: Sequence[bool], blocks: Sequence[Block], rows: Sequence[Mapping[str, float]], words: Sequence[int]
) -> list[bool]:
    """On a code page, drop the kept blocks that are an in-page table of contents, and its short heading.

    A block is one when it is all links (REPEATED_LINKS_DENSITY) and every link goes to a fragment and
    says the text of a heading of the page; a heading of CONTENTS_TITLE_WORDS words or fewer right above
    such a run ("On this page", "In this article") goes with it. Elsewhere the page's contents stay: the
    references of articles keep their "Contents" boxes (round 15)."""
    if code_share(rows, words) < CODE_PAGE_SHARE:
        return list(mask)
    headings = {_plain(b.text) for b in blocks if b.heading} - {""}
    contents: set[int] = set()
    for i, (block, keep) in enumerate(zip(blocks, mask, strict=True)):
        if not keep or block.heading or not block.words or block.link_density < REPEATED_LINKS_DENSITY:
            continue
        links = [a for a in block.element.iter("a") if a.text_content().strip()]
        if links and all("#" in (a.get("href") or "") and _plain(a.text_content()) in headings for a in links):
            contents.add(i)
    for i in sorted(contents):
        above = i - 1
        if above not in contents and above >= 0 and mask[above]:
            title = blocks[above]
            if title.heading and title.words <= CONTENTS_TITLE_WORDS:
                contents.add(above)
    return [keep and i not in contents for i, keep in enumerate(mask)]


def finish(
    mask: Sequence[bool],
    texts: Sequence[str],
    paths: Sequence[tuple[str, ...]],
    words: Sequence[int],
    rows: Sequence[Mapping[str, float]],
) -> list[bool]:
    """The chosen threshold's kept flags after the whole-page rules (template majority, then repeats)."""
    flags = template_majority(mask, paths, words)
    once = drop_repeats(flags, texts)
    if code_share(rows, words) >= CODE_PAGE_SHARE:
        # A code page keeps its repeated steps, but a block that is all links said twice is a table of
        # contents or menu laid out twice (round 26): kept once there too.
        once = [
            kept_once or (kept and row.get("link_density", 0.0) < REPEATED_LINKS_DENSITY)
            for kept, kept_once, row in zip(flags, once, rows, strict=True)
        ]
    return headings_keep_their_copy(flags, once, texts, rows)


def headings_keep_their_copy(
    before: Sequence[bool], after: Sequence[bool], texts: Sequence[str], rows: Sequence[Mapping[str, float]]
) -> list[bool]:
    """Of a text kept once, keep the heading's copy (round 30).

    Repeats once keeps the first copy; when that is a contents entry or a teaser's title and a later
    copy is the section's heading, the markdown lost its outline (182 of dev-rest's 1,197 pages, out of
    fold). The earlier copy goes instead: the same words, so the same score."""
    keys = repeat_keys(texts)
    kept_copy: dict[str, int] = {}
    for i, (key, keep) in enumerate(zip(keys, after, strict=True)):
        if key is not None and keep:
            kept_copy.setdefault(key, i)
    out = list(after)
    for i, key in enumerate(keys):
        if key is None or not before[i] or out[i] or not _is_heading(rows[i]):
            continue
        j = kept_copy.get(key)
        if j is not None and j < i and not _is_heading(rows[j]):
            out[j], out[i] = False, True
            kept_copy[key] = i
    return out
