"""What a block's own words say: how often each word stands in main content rather than around it.

Every other feature (features.py, structure.py) reads where a block is and what the extractors think
of it; none reads the block's words. Yet the words of page furniture are the same from site to site —
a language menu's `Deutsch · Français · 日本語`, `Sitemap`, `Wishlist`, `Subtotal`, `Copyright`,
`All rights reserved`, `Prev` — and so are those of prose. The lexicon (lexicon.json) holds, for each
word seen on at least MIN_SITES sites of the training pages, the log-odds of a page having it in a
main-content block against having it in a block around the content (each page counts once per word
and side, so a long page or a site with many pages does not outweigh the rest; digits are one
symbol, so years and counts are one word). A block is described by the mean, least and greatest
log-odds of its known words and the share of its words the lexicon knows (round 40 of
docs/scrape-quality.md). Learnt from labels by benchmarks/scrape_train.py (`--lexicon`), nested so that
no model is trained on lexicon figures learnt from its own pages' labels. Not in the shipped recipe
(better on the training split, level on both held-out ones): no lexicon.json ships, and the engine
computes these figures only for a model that reads them.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path

LEXICON_PATH = Path(__file__).with_name("lexicon.json")
MIN_SITES = 5  # a word is learnt only when this many sites show it: no site's own vocabulary
FEATURES = ("lex_mean", "lex_min", "lex_max", "lex_known")
_WORD = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")

Lexicon = Mapping[str, float]


def words(text: str) -> frozenset[str]:
    """The distinct words of a text, lower-cased, digits as `#`."""
    return frozenset(_DIGITS.sub("#", w) for w in _WORD.findall(text.lower()))


def learn(
    pages: Iterable[tuple[str, Sequence[frozenset[str]], Sequence[bool]]], min_sites: int = MIN_SITES
) -> dict[str, float]:
    """The lexicon of (site, each block's words, each block's label) pages: word -> log-odds."""
    inside: Counter[str] = Counter()
    around: Counter[str] = Counter()
    sites: dict[str, set[str]] = defaultdict(set)
    count = 0
    for site, blocks, labels in pages:
        content: set[str] = set()
        other: set[str] = set()
        for block_words, label in zip(blocks, labels, strict=True):
            (content if label else other).update(block_words)
        inside.update(content)
        around.update(other)
        for word in content | other:
            sites[word].add(site)
        count += 1
    smoothed = count + 2
    return {
        word: round(math.log((inside[word] + 1) / smoothed) - math.log((around[word] + 1) / smoothed), 3)
        for word, seen in sorted(sites.items())
        if len(seen) >= min_sites
    }


def lexicon_features(blocks: Sequence[frozenset[str]], lexicon: Lexicon) -> list[dict[str, float]]:
    """FEATURES per block (all 0 for a block of words the lexicon does not know)."""
    out = []
    for block_words in blocks:
        known = [lexicon[w] for w in block_words if w in lexicon]
        out.append(
            {
                "lex_mean": sum(known) / len(known) if known else 0.0,
                "lex_min": min(known) if known else 0.0,
                "lex_max": max(known) if known else 0.0,
                "lex_known": len(known) / len(block_words) if block_words else 0.0,
            }
        )
    return out


def text_features(texts: Sequence[str], lexicon: Lexicon) -> list[dict[str, float]]:
    """FEATURES per block of these texts."""
    return lexicon_features([words(t) for t in texts], lexicon)


@cache
def load_lexicon(path: Path = LEXICON_PATH) -> Lexicon:
    """The shipped lexicon; empty (every block's figures 0) when none is shipped."""
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))["words"]
