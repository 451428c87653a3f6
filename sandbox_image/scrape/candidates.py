"""Per-page choice of the block model's threshold (stacking): which set of blocks to return.

The block model (model.py) judges each block; one threshold suits some pages and not others
(listings and collections want more recall, articles and docs more precision). So each page gets
a few candidate selections — the block model at several thresholds — and a second small tree
model (selector.json, trained out-of-fold by site on WCXB development pages outside the scored
set) predicts, from the page's shape and each candidate's shape, how much better or worse than
the default (threshold 0.5) each candidate would score. The candidate with the highest predicted
gain wins when that gain exceeds the selector's margin; otherwise the default stays.
(Each voter's own blocks as further candidates were tried and scored worse in cross-validation:
docs/scrape-quality.md.) Nothing here names a site or reads a reference text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from sandbox_image.scrape.model import Forest

THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
DEFAULT = THRESHOLDS.index(0.5)
CANDIDATES = tuple(f"threshold {t}" for t in THRESHOLDS)
# Block features (features.py) whose word-weighted share of a candidate describes what it keeps.
_SHARES = (
    "in_main",
    "in_chrome",
    "hidden",
    "boiler_hint",
    "content_hint",
    "li",
    "cell",
    "heading",
    "para",
    "pre",
    "sentence_end",
    "link_density",
)
_PAGE_PREFIXES = ("page_", "declares_", "path_")
REPEAT_WORDS = 3  # a repeated block this long or longer is kept once
_TOKEN = re.compile(r"\w+")


def candidate_masks(probabilities: Sequence[float], texts: Sequence[str] | None = None) -> list[list[bool]]:
    """The candidates in CANDIDATES order: kept flags per block (repeats dropped when `texts` are given)."""
    masks = [[p >= t for p in probabilities] for t in THRESHOLDS]
    if texts is None:
        return masks
    keys = repeat_keys(texts)  # once per page, not once per candidate
    return [_drop_repeated(m, keys) for m in masks]


def drop_repeats(mask: Sequence[bool], texts: Sequence[str]) -> list[bool]:
    """Unkeep a kept block whose text (REPEAT_WORDS words or more) repeats an earlier kept block's.

    Threads quote earlier posts and responsive layouts carry a second copy of the same text; the
    reader (and the word-level score) wants it once. Chosen by cross-validation on dev-rest
    (docs/scrape-quality.md, round 4).
    """
    return _drop_repeated(mask, repeat_keys(texts))


def repeat_keys(texts: Sequence[str]) -> list[str | None]:
    """Each block's text as its words, or None when too short to count as a repeat."""
    keys: list[str | None] = []
    for text in texts:
        tokens = _TOKEN.findall(text.lower())
        keys.append(" ".join(tokens) if len(tokens) >= REPEAT_WORDS else None)
    return keys


def _drop_repeated(mask: Sequence[bool], keys: Sequence[str | None]) -> list[bool]:
    seen: set[str] = set()
    out = list(mask)
    for i, keep in enumerate(mask):
        key = keys[i]
        if not keep or key is None:
            continue
        if key in seen:
            out[i] = False
        seen.add(key)
    return out


def _jaccard(a: Sequence[bool], b: Sequence[bool], words: Sequence[int]) -> float:
    union = inter = 0
    for x, y, w in zip(a, b, words, strict=True):
        if x or y:
            union += w
            if x and y:
                inter += w
    return inter / union if union else 1.0


def candidate_features(
    rows: Sequence[Mapping[str, float]],
    words: Sequence[int],
    probabilities: Sequence[float],
    masks: Sequence[Sequence[bool]],
) -> list[dict[str, float]]:
    """One feature dict per candidate: its shape, its agreement with the others, the page's shape."""
    total = sum(words) or 1
    n = len(words)
    page = {k: float(v) for k, v in (rows[0] if rows else {}).items() if k.startswith(_PAGE_PREFIXES)}
    default = masks[DEFAULT]
    agree = [[1.0] * len(masks) for _ in masks]
    for i in range(len(masks)):
        for j in range(i + 1, len(masks)):
            agree[i][j] = agree[j][i] = _jaccard(masks[i], masks[j], words)
    out = []
    for ci, mask in enumerate(masks):
        kept = sum(w for w, k in zip(words, mask, strict=True) if k)
        dropped = total - kept
        f: dict[str, float] = dict(page)
        f["candidate"] = float(ci)
        f["threshold"] = THRESHOLDS[ci]
        f["share"] = kept / total
        f["log_kept_words"] = math.log1p(kept)
        f["block_share"] = sum(mask) / n if n else 0.0
        kept_prob = sum(p * w for p, w, k in zip(probabilities, words, mask, strict=True) if k)
        f["kept_probability"] = kept_prob / kept if kept else 0.0
        dropped_prob = sum(p * w for p, w, k in zip(probabilities, words, mask, strict=True) if not k)
        f["dropped_probability"] = dropped_prob / dropped if dropped else 0.0
        added = [(w, p) for w, p, k, d in zip(words, probabilities, mask, default, strict=True) if k and not d]
        removed = [(w, p) for w, p, k, d in zip(words, probabilities, mask, default, strict=True) if d and not k]
        added_words, removed_words = sum(w for w, _ in added), sum(w for w, _ in removed)
        f["added_share"] = added_words / total
        f["removed_share"] = removed_words / total
        f["added_probability"] = sum(w * p for w, p in added) / added_words if added_words else 0.0
        f["removed_probability"] = sum(w * p for w, p in removed) / removed_words if removed_words else 0.0
        f["agree_default"] = agree[ci][DEFAULT]
        others = [agree[ci][j] for j in range(len(masks)) if j != ci]
        f["agree_mean"] = sum(others) / len(others) if others else 1.0
        f["runs"] = float(sum(1 for i in range(n) if mask[i] and (i == 0 or not mask[i - 1])))
        for name in _SHARES:
            value = sum(row.get(name, 0.0) * w for row, w, k in zip(rows, words, mask, strict=True) if k)
            f[f"kept_{name}"] = value / kept if kept else 0.0
        out.append(f)
    return out


def choose(
    rows: Sequence[Mapping[str, float]],
    words: Sequence[int],
    probabilities: Sequence[float],
    selector: Forest | None,
    texts: Sequence[str] | None = None,
) -> tuple[int, list[bool]]:
    """(index in CANDIDATES, kept flags) of the candidate to return for this page.

    The default unless the selector predicts a gain above its margin (its `threshold`) for a
    candidate that keeps something. With `texts`, every candidate keeps a repeated text once.
    """
    masks = candidate_masks(probabilities, texts)
    if selector is None or not rows:
        return DEFAULT, masks[DEFAULT]
    gains = selector.scores(candidate_features(rows, words, probabilities, masks))
    best = DEFAULT
    for ci, mask in enumerate(masks):
        if ci != DEFAULT and any(mask) and gains[ci] > gains[best]:
            best = ci
    if best != DEFAULT and gains[best] - gains[DEFAULT] > selector.threshold:
        return best, masks[best]
    return DEFAULT, masks[DEFAULT]
