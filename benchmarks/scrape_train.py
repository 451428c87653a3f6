"""Train the main-content block classifier shipped as sandbox_image/scrape/model.json.

Used by benchmarks/scrape_quality.py (`prepare`, `train`); needs the `bench` extra (scikit-learn).
Pages must be rendered first (`render`), so the features are those of the rendered DOM that the
engine sees in the sandbox.

Labels come from the ground truth: a block is main content when at least LABEL_PURITY of its words
occur in the page's ground-truth text. Each block weighs as many words as it has, since the score
is word-level. The classifier is scikit-learn's HistGradientBoostingClassifier with its default
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sandbox_image.scrape.align import kept_blocks  # noqa: E402
from sandbox_image.scrape.blocks import segment  # noqa: E402
from sandbox_image.scrape.document import choose_document  # noqa: E402
from sandbox_image.scrape.features import block_features  # noqa: E402
from sandbox_image.scrape.model import MODEL_PATH, Forest, from_sklearn  # noqa: E402
from sandbox_image.scrape.page_kind import page_kind_features  # noqa: E402
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
    return PageRows(page.file_id, texts, [b.words for b in blocks], features, labels)


def fit(rows: list[PageRows], features: list[str] | None = None) -> tuple[Any, list[str]]:
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier

    names = features or sorted({k for r in rows for f in r.features for k in f})
    x = np.array([[f.get(n, 0.0) for n in names] for r in rows for f in r.features])
    y = np.array([label for r in rows for label in r.labels])
    w = np.array([float(words) for r in rows for words in r.words])
    model = HistGradientBoostingClassifier(random_state=SEED)
    model.fit(x, y, sample_weight=w)
    return model, names


def train(rows: list[PageRows], info: dict[str, Any], path: Path = MODEL_PATH) -> Forest:
    model, names = fit(rows)
    forest = from_sklearn(model, names, THRESHOLD, info)
    path.write_text(json.dumps(forest.to_json(), separators=(",", ":")) + "\n", encoding="utf-8")
    return forest
