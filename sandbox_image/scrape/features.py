"""What is known about each block when deciding whether it is main content.

Three kinds of evidence, all from the page itself:
- votes: which of several proven extractors kept the block (read back from their text by align.py);
- the block: its size, link density, tag, landmark (header/nav/footer/aside vs main/article),
  whether the rendered page hid it, class/id words of its ancestors, where it sits on the page;
- the page: how much of it the extractors kept, how link-heavy it is, whether it has a <main>.
Neighbouring blocks' votes are included, because main content comes in runs.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from sandbox_image.scrape import stopping
from sandbox_image.scrape.blocks import Block
from sandbox_image.scrape.structure import structure_features

# Class/id words that name page furniture or content, as sites commonly write them.
_BOILER_WORDS = re.compile(
    r"(?:^|[\W_])(?:nav|navbar|navigation|menu|menubar|header|footer|foot|sidebar|side-bar|aside|widget|breadcrumbs?"
    r"|cookie|consent|gdpr|banner|newsletter|subscribe|signup|social|share|sharing|related|recommend\w*|promo"
    r"|advert\w*|ads?|sponsor\w*|popup|modal|overlay|masthead|toolbar|pagination|pager|skip|copyright|legal"
    r"|login|search|cart|tags?|author-bio|comments?-form|disclaimer)(?:$|[\W_])",
    re.IGNORECASE,
)
_CONTENT_WORDS = re.compile(
    r"(?:^|[\W_])(?:content|main|article|post|entry|story|body|text|prose|markdown|blog|description|product"
    r"|detail|details|thread|question|answer|message|review|docs?|documentation)(?:$|[\W_])",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?:;\u3002\uff01\uff1f\"'\u201d)]$")
ANCESTOR_DEPTH = 6  # how far up class/id words are looked for
NEIGHBOURS = 2  # blocks on each side whose votes are averaged
# No figures of the block's ancestors as regions (vote share, size, link density of its 1st/2nd/4th ancestor):
# until round 7 they were keyed by id() of lxml's short-lived proxies, so mostly missing and otherwise another
# element's, differently from run to run; computed exactly they cross-validated worse than without them
# (docs/scrape-quality.md, "Round 7").


def _attr_words(element: object) -> str:
    get = getattr(element, "get", None)
    if get is None:
        return ""
    return f"{get('class') or ''} {get('id') or ''} {get('role') or ''}"


def _ancestor_hints(block: Block) -> tuple[float, float, float]:
    """(boilerplate word nearby, content word nearby, depth of the nearest boilerplate word)."""
    boiler = content = 0.0
    boiler_depth = float(ANCESTOR_DEPTH + 1)
    element = block.element
    for depth in range(ANCESTOR_DEPTH + 1):
        if element is None or not isinstance(getattr(element, "tag", None), str):
            break
        words = _attr_words(element)
        if words.strip():
            if not boiler and _BOILER_WORDS.search(words):
                boiler, boiler_depth = 1.0, float(depth)
            if not content and _CONTENT_WORDS.search(words):
                content = 1.0
        element = element.getparent()
    return boiler, content, boiler_depth


_Kinds = dict[Any, Counter[tuple[str, str]]]


def _siblings_alike(block: Block, kinds: _Kinds) -> int:
    """How many siblings of the block's element (or of its parent) share its tag and class: cards,
    list items and posts come in runs of look-alikes. `kinds` keeps each parent's count of its children's
    (tag, class), made once per parent: counted again for every block, 8000 paragraphs of one article
    took minutes. (The dict holds each parent, so lxml hands back that same proxy for it.)"""
    best = 0
    element = block.element
    for _ in range(2):
        parent = element.getparent()
        if parent is None:
            break
        counts = kinds.get(parent)
        if counts is None:
            counts = kinds[parent] = Counter((s.tag, s.get("class") or "") for s in parent if isinstance(s.tag, str))
        best = max(best, counts[(element.tag, element.get("class") or "")] - 1)
        element = parent
    return best


def block_features(
    blocks: Sequence[Block],
    votes: Mapping[str, Sequence[bool]],
    page: Mapping[str, float] | None = None,
    with_structure: bool = True,
) -> list[dict[str, float]]:
    """One feature dict per block; `votes` maps each extractor to its kept flags per block and
    `page` holds page-wide signals (page_kind.py) copied onto every row."""
    n = len(blocks)
    if not n:
        return []
    kinds: _Kinds = {}
    stopping.check()
    total_words = sum(b.words for b in blocks) or 1
    page_link_density = sum(b.link_words for b in blocks) / total_words
    main_words = sum(b.words for b in blocks if b.in_main)
    kept_share = {
        name: sum(b.words for b, k in zip(blocks, flags, strict=True) if k) / total_words
        for name, flags in votes.items()
    }
    vote_sum = [sum(flags[i] for flags in votes.values()) / max(len(votes), 1) for i in range(n)]
    tags = Counter(b.tag for b in blocks)
    structure = structure_features(blocks, vote_sum) if with_structure else [{} for _ in blocks]
    out = []
    for i, b in enumerate(blocks):
        lo, hi = max(0, i - NEIGHBOURS), min(n, i + NEIGHBOURS + 1)
        around = [vote_sum[j] for j in range(lo, hi) if j != i]
        boiler, content, boiler_depth = _ancestor_hints(b)
        f: dict[str, float] = {f"vote_{name}": float(flags[i]) for name, flags in votes.items()}
        if page:
            f.update(page)
        f.update({f"page_kept_{name}": share for name, share in kept_share.items()})
        f.update(
            votes=vote_sum[i],
            votes_around=sum(around) / len(around) if around else 0.0,
            log_words=math.log1p(b.words),
            link_density=b.link_density,
            heading=float(b.heading),
            h1=float(b.tag == "h1"),
            li=float(b.tag in ("li", "dd", "dt")),
            cell=float(b.tag in ("td", "th")),
            para=float(b.tag == "p"),
            pre=float(b.tag == "pre"),
            sentence_end=float(bool(_SENTENCE_END.search(b.text))),
            in_main=float(b.in_main),
            in_chrome=float(b.in_chrome),
            hidden=float(bool(b.hidden) and b.hidden != "aria"),
            aria_hidden=float(b.hidden == "aria"),
            boiler_hint=boiler,
            boiler_near=boiler * (1.0 - boiler_depth / (ANCESTOR_DEPTH + 1)),
            content_hint=content,
            alike=math.log1p(_siblings_alike(b, kinds)),
            position=i / n,
            page_log_words=math.log1p(total_words),
            page_link_density=page_link_density,
            page_main_share=main_words / total_words,
            tag_share=tags[b.tag] / n,
        )
        f.update(structure[i])
        out.append(f)
    return out
