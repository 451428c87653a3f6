"""Which blocks of the page an extractor kept, read back from the plain text it returned.

Extractors return text, not nodes. Their text is matched to the page's blocks in document order
(extractors keep the page's order): a block counts as kept when its words appear, as a run, at or
after the place the previous kept block was found. Short blocks ("Home", "Share") must be found
close to that place, so a common word elsewhere in the text does not count as keeping them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_NON_WORD = re.compile(r"[\W_]+")
# A short block must turn up within this many characters of the last match to count.
SHORT_WORDS = 4
SHORT_WINDOW = 300


def normalize(text: str) -> str:
    """Lower-cased words separated by single spaces, padded with one space each side."""
    return " " + _NON_WORD.sub(" ", text.lower()).strip() + " "


def kept_blocks(block_texts: Sequence[str], extracted: str) -> list[bool]:
    """For each block (in document order), whether `extracted` contains it."""
    out = normalize(extracted)
    kept = [False] * len(block_texts)
    if len(out) <= 2:
        return kept
    pos = 0
    for i, text in enumerate(block_texts):
        needle = normalize(text)
        if len(needle) <= 2:
            continue
        words = needle.count(" ") - 1
        found = out.find(needle, pos)
        if found >= 0 and (words >= SHORT_WORDS or found - pos <= SHORT_WINDOW):
            kept[i] = True
            pos = found + len(needle) - 1
        elif words >= SHORT_WORDS and out.find(needle) >= 0:
            kept[i] = True  # out of order (extractors move titles and captions): keep, don't move
    return kept
