"""Train the main-content block classifier shipped as sandbox_image/scrape/model.json.

Used by benchmarks/scrape_quality.py (`prepare`, `train`); needs the `bench` extra (scikit-learn).
Pages must be rendered first (`render`), so the features are those of the rendered DOM that the
engine sees in the sandbox.

Labels come from the ground truth: a block is main content when at least LABEL_PURITY of its words
occur in the page's ground-truth text. With `--lexicon` (not the shipped recipe, round 40) the lexicon of
block words (sandbox_image/scrape/lexicon.py) is learnt from the same labels, so its figures enter training
nested: a model's training rows carry figures from lexicons learnt on other sites' pages (5 folds by site
within its training pages), and the pages it answers carry the lexicon of all its training pages — as a
shipped model would meet a shipped lexicon on a page it never saw. Each block weighs as many words as it
has, since the score is word-level. The classifier is scikit-learn's HistGradientBoostingClassifier with its default
settings apart from a fixed seed: nothing here is tuned on the pages we score.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sandbox_image.scrape import candidates, lexicon  # noqa: E402
from sandbox_image.scrape.align import kept_blocks  # noqa: E402
from sandbox_image.scrape.blocks import segment  # noqa: E402
from sandbox_image.scrape.document import choose_document  # noqa: E402
from sandbox_image.scrape.features import block_features  # noqa: E402
from sandbox_image.scrape.model import (  # noqa: E402
    MODEL_PATH,
    SELECTOR_PATH,
    STRUCTURE_MODEL_PATH,
    Forest,
    from_sklearn,
)
from sandbox_image.scrape.page_kind import page_kind_features  # noqa: E402
from sandbox_image.scrape.structure import FEATURES as STRUCTURE_FEATURES  # noqa: E402
from sandbox_image.scrape.voters import run_voters  # noqa: E402

LABEL_PURITY = 0.95
THRESHOLD = 0.5
SEED = 0
_WORD = re.compile(r"\w+")


def prep_path(cache: Path, split: str, file_id: str) -> Path:
    return cache / "prep" / split / f"{file_id}.json.gz"


def prepare(pages: Iterable[Any], cache: Path, split: str, load_rendered: Any) -> None:
    """Cache each page's chosen document source and voter texts (the slow part of the features)."""
    for page in pages:
        path = prep_path(cache, split, page.file_id)
        if path.exists():
            continue
        rendered = load_rendered(cache, split, page.file_id) or {}
        started = time.perf_counter()
        document = choose_document(rendered.get("annotated", ""), page.html())
        lang = rendered.get("lang", "") if document.source == "rendered" else ""
        texts = run_voters(document.html(), page.url, lang)
        record = {"id": page.file_id, "source": document.source, "voters": texts, "lang": lang}
        record["ms"] = round((time.perf_counter() - started) * 1000)
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt", encoding="utf-8") as f:
            json.dump(record, f)


@dataclass
class PageRows:
    file_id: str
    texts: list[str]
    words: list[int]
    features: list[dict[str, float]]
    labels: list[bool]
    site: str = ""  # host without www.: cross-validation folds never split a site
    gold: str = ""  # the page's ground-truth main content (training targets only)
    block_words: list[frozenset[str]] = field(default_factory=list)  # lexicon.words of each block


def page_rows(page: Any, cache: Path, split: str, load_rendered: Any) -> PageRows:
    rendered = load_rendered(cache, split, page.file_id) or {}
    with gzip.open(prep_path(cache, split, page.file_id), "rt", encoding="utf-8") as f:
        prep = json.load(f)
    document = choose_document(rendered.get("annotated", ""), page.html())
    blocks = segment(document.root)
    texts = [b.text for b in blocks]
    votes = {name: kept_blocks(texts, text) for name, text in prep["voters"].items()}
    gold = Counter(_WORD.findall(page.main_content.lower()))
    labels = [
        sum(1 for w in _WORD.findall(b.text.lower()) if gold[w]) >= LABEL_PURITY * max(b.words, 1) for b in blocks
    ]
    features = block_features(blocks, votes, page_kind_features(document.root, page.url))
    site = (urlsplit(page.url).hostname or "").removeprefix("www.")
    return PageRows(
        page.file_id,
        texts,
        [b.words for b in blocks],
        features,
        labels,
        site,
        page.main_content,
        [lexicon.words(t) for t in texts],
    )


def learn_lexicon(rows: list[PageRows]) -> dict[str, float]:
    return lexicon.learn(((r.site, r.block_words, r.labels) for r in rows if r.features), lexicon.MIN_SITES)


def with_lexicon(row: PageRows, words: lexicon.Lexicon) -> PageRows:
    """The row with the lexicon's figures among its block features (a copy: rows are shared by folds)."""
    figures = lexicon.lexicon_features(row.block_words, words)
    return replace(row, features=[{**f, **extra} for f, extra in zip(row.features, figures, strict=True)])


_VIEWS: dict[tuple[str, ...], tuple[dict[str, float], list[PageRows]]] = {}
# Whether the block models read the lexicon's figures (`--lexicon`). Off in the shipped recipe: round 40 of
# docs/scrape-quality.md measured it better on dev-rest and level on the held-out splits, so not retrained.
LEXICON = False


def lexicon_view(rows: list[PageRows]) -> tuple[dict[str, float], list[PageRows]]:
    """The lexicon learnt on `rows`, and the rows as a model learns from them: each with the figures of a
    lexicon learnt on the other folds' sites (5 folds by site), never on its own labels. Kept per set of
    pages: the selector's extra seeds refit the same folds. Without LEXICON: no lexicon, the rows as they are."""
    if not LEXICON:
        return {}, rows
    key = tuple(r.file_id for r in rows)
    if key not in _VIEWS:
        view = list(rows)
        for inner_train, inner_test in site_folds(rows):
            words = learn_lexicon([rows[i] for i in inner_train])
            for i in inner_test:
                view[i] = with_lexicon(rows[i], words)
        _VIEWS[key] = (learn_lexicon(rows), view)
    return _VIEWS[key]


def fit(rows: list[PageRows], features: list[str] | None = None, seed: int = SEED) -> tuple[Any, list[str]]:
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier

    names = features or sorted({k for r in rows for f in r.features for k in f})
    x = np.array([[f.get(n, 0.0) for n in names] for r in rows for f in r.features])
    y = np.array([label for r in rows for label in r.labels])
    w = np.array([float(words) for r in rows for words in r.words])
    model = HistGradientBoostingClassifier(random_state=seed)
    model.fit(x, y, sample_weight=w)
    return model, names


def base_features(rows: list[PageRows]) -> list[str]:
    """The v2 recipe's features: everything but structure.py's (which only the structure model reads)."""
    return sorted({k for r in rows for f in r.features for k in f} - set(STRUCTURE_FEATURES))


def train(rows: list[PageRows], info: dict[str, Any], path: Path = MODEL_PATH, structure: bool = False) -> Forest:
    """model.json (the v2 recipe) or, with `structure`, model_structure.json (all features); with LEXICON both
    read the lexicon's figures, and lexicon.json is written beside them (the same for either: learnt on all
    rows)."""
    words, rows = lexicon_view(rows)
    if LEXICON:
        write_lexicon(words, {"trained_on": info.get("trained_on"), "min_sites": lexicon.MIN_SITES})
    model, names = fit(rows, None if structure else base_features(rows))
    forest = from_sklearn(model, names, THRESHOLD, info)
    path.write_text(json.dumps(forest.to_json(), separators=(",", ":")) + "\n", encoding="utf-8")
    return forest


def write_lexicon(words: dict[str, float], info: dict[str, Any], path: Path = lexicon.LEXICON_PATH) -> None:
    path.write_text(json.dumps({"info": info, "words": words}, ensure_ascii=False, separators=(",", ":")) + "\n")


# The selector (candidates.py): folds by site, default settings, and the margin a candidate's predicted
# gain over the default must exceed. It learns from SELECTOR_SEEDS sets of out-of-fold probabilities
# (block models fitted with as many seeds), so that one seed's quirks are not what it learns (round 19).
SELECTOR_FOLDS = 5
SELECTOR_MARGIN = 0.02
SELECTOR_SEEDS = 3


def word_f1(predicted: str, reference: str) -> float:
    """WCXB's word-level F1 (as benchmarks/scrape_quality.py scores pages)."""
    pred, ref = Counter(_WORD.findall(predicted.lower())), Counter(_WORD.findall(reference.lower()))
    if not ref or not pred:
        return float(not ref and not pred)
    overlap = sum((pred & ref).values())
    return 2 * overlap / (sum(pred.values()) + sum(ref.values()))


def site_folds(rows: list[PageRows], folds: int = SELECTOR_FOLDS) -> list[tuple[list[int], list[int]]]:
    """(training, held-out) row indexes of each fold; a site's pages are always in the same fold."""
    from sklearn.model_selection import GroupKFold

    usable = [i for i, r in enumerate(rows) if r.features]
    return [
        ([usable[i] for i in train_idx], [usable[i] for i in test_idx])
        for train_idx, test_idx in GroupKFold(n_splits=folds).split(usable, groups=[rows[i].site for i in usable])
    ]


@dataclass
class FoldModels:
    """One fold's block models, fitted without its held-out sites (row indexes of both sides), and the
    lexicon learnt on its training pages, which the pages it answers are read with."""

    train: list[int]
    test: list[int]
    fitted: list[tuple[Any, list[str]]]
    lexicon: dict[str, float] = field(default_factory=dict)

    def forests(self) -> tuple[Forest, ...]:
        return tuple(from_sklearn(model, names, THRESHOLD, {}) for model, names in self.fitted)


def fold_models(
    rows: list[PageRows], folds: int = SELECTOR_FOLDS, ensemble: bool = True, seed: int = SEED
) -> list[FoldModels]:
    """Per fold, the v2 recipe's model and, when `ensemble`, the structure model (as the engine ships)."""
    base = sorted({*base_features(rows), *(lexicon.FEATURES if LEXICON else ())})
    out = []
    for train_idx, test_idx in site_folds(rows, folds):
        words, fold = lexicon_view([rows[i] for i in train_idx])
        fitted = [fit(fold, base, seed)] + ([fit(fold, None, seed)] if ensemble else [])
        out.append(FoldModels(train_idx, test_idx, fitted, words))
    return out


def out_of_fold_probabilities(
    rows: list[PageRows],
    folds: int = SELECTOR_FOLDS,
    ensemble: bool = True,
    seed: int = SEED,
    fitted: list[FoldModels] | None = None,
) -> list[list[float]]:
    """Block probabilities for each page from block models that never saw the page's site: the v2
    recipe, averaged with the structure model when `ensemble` (as the engine does when both ship)."""
    import numpy as np

    out: list[list[float]] = [[] for _ in rows]
    for fold in fitted or fold_models(rows, folds, ensemble, seed):
        for i in fold.test:
            row = with_lexicon(rows[i], fold.lexicon) if LEXICON else rows[i]
            each = [
                model.predict_proba(np.array([[f.get(n, 0.0) for n in names] for f in row.features]))[:, 1]
                for model, names in fold.fitted
            ]
            out[i] = [float(v) for v in np.mean(each, axis=0)]
    return out


def selector_probabilities(
    rows: list[PageRows],
    ensemble: bool = True,
    seed: int = SEED,
    fitted: list[FoldModels] | None = None,
    sets: int = SELECTOR_SEEDS,
) -> list[list[list[float]]]:
    """`sets` sets of out-of-fold probabilities: `seed`'s (from `fitted` when given), then seeds
    seed + 1000, seed + 2000, ... so that cv's seeds never share one."""
    first = out_of_fold_probabilities(rows, ensemble=ensemble, seed=seed, fitted=fitted)
    return [first] + [out_of_fold_probabilities(rows, ensemble=ensemble, seed=seed + 1000 * k) for k in range(1, sets)]


def selector_rows(
    rows: list[PageRows], probabilities: list[list[float]]
) -> tuple[list[dict[str, float]], list[float], list[str]]:
    """Per candidate of each page: its features, its F1 gain over the default, the page's site."""
    features: list[dict[str, float]] = []
    gains: list[float] = []
    sites: list[str] = []
    for r, probs in zip(rows, probabilities, strict=True):
        if not r.features:
            continue
        masks = candidates.candidate_masks(probs, r.texts)
        f1 = [word_f1("\n".join(t for t, k in zip(r.texts, m, strict=True) if k), r.gold) for m in masks]
        features += candidates.candidate_features(r.features, r.words, probs, masks)
        gains += [v - f1[candidates.DEFAULT] for v in f1]
        sites += [r.site] * len(masks)
    return features, gains, sites


def fit_selector(
    rows: list[PageRows], probabilities: list[list[list[float]]], info: dict[str, Any], seed: int = SEED
) -> Forest:
    """The per-page candidate selector, learnt from each page once per set of its out-of-fold block
    probabilities (`probabilities[k][i]` is set k's for rows[i])."""
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingRegressor

    features, gains, _sites = selector_rows(rows * len(probabilities), [p for ps in probabilities for p in ps])
    names = sorted({k for f in features for k in f})
    x = np.array([[f.get(n, 0.0) for n in names] for f in features])
    model = HistGradientBoostingRegressor(random_state=seed).fit(x, np.array(gains))
    return from_sklearn(model, names, SELECTOR_MARGIN, info)


def train_selector(
    rows: list[PageRows],
    info: dict[str, Any],
    path: Path = SELECTOR_PATH,
    probabilities: list[list[list[float]]] | None = None,
    sets: int = SELECTOR_SEEDS,
) -> Forest:
    """Learn the per-page candidate selector from `sets` seeds' out-of-fold block probabilities (by site)."""
    probabilities = probabilities or selector_probabilities(rows, ensemble=STRUCTURE_MODEL_PATH.exists(), sets=sets)
    forest = fit_selector(rows, probabilities, info)
    path.write_text(json.dumps(forest.to_json(), separators=(",", ":")) + "\n", encoding="utf-8")
    return forest
