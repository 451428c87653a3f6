"""Whole-page rules applied to the chosen threshold's blocks (since round 5).

The block model judges each block on its own, and the selector (candidates.py) picks the page's
threshold; two judgements only make sense for the page as a whole:
- **template majority**: blocks that share a template slot (structure.template_path: every post
  body of a thread, every card of a listing) are one kind of thing, so when most of a slot's words
  are kept, the slot's other blocks are kept too (a short reply, a card the model was unsure of);
- **repeats once, except on code pages**: a kept text repeated later is kept once (a quoted post,
  a responsive layout's second copy; candidates.drop_repeats), but not on a page where code holds
  CODE_PAGE_SHARE of the words or more: tutorials and references repeat the same steps, comments
  and sentences in each language's or platform's tab, and their reader wants every tab.
Both chosen by site-grouped cross-validation on the WCXB development pages outside the scored set
(docs/scrape-quality.md, round 5). Nothing here names a site or reads a reference text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sandbox_image.scrape.candidates import drop_repeats

GROUP_MIN_BLOCKS = 3  # a template slot needs this many blocks to count as a group
GROUP_MAJORITY = 0.5  # share of a group's words kept from which the whole group is kept
CODE_PAGE_SHARE = 0.05  # share of the page's words in code blocks from which repeats are all kept


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


def code_share(rows: Sequence[Mapping[str, float]], words: Sequence[int]) -> float:
    """Share of the page's words in code: a <pre> block or a block inside <pre>/<code> (features.py, structure.py)."""
    total = sum(words)
    if not total:
        return 0.0
    code = sum(w for row, w in zip(rows, words, strict=True) if row.get("in_code", 0.0) > 0 or row.get("pre", 0.0) > 0)
    return code / total


def finish(
    mask: Sequence[bool],
    texts: Sequence[str],
    paths: Sequence[tuple[str, ...]],
    words: Sequence[int],
    rows: Sequence[Mapping[str, float]],
) -> list[bool]:
    """The chosen threshold's kept flags after the whole-page rules (template majority, then repeats)."""
    flags = template_majority(mask, paths, words)
    if code_share(rows, words) < CODE_PAGE_SHARE:
        flags = drop_repeats(flags, texts)
    return flags
