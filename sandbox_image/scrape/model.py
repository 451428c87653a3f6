"""The block classifier: gradient-boosted trees that weigh the evidence in features.py.

Trained offline by benchmarks/scrape_quality.py (`train`, scikit-learn's
HistGradientBoostingClassifier, on WCXB development pages outside the scored set) and shipped as
model.json: the trees only, evaluated here in plain Python so the image needs no scikit-learn or
numpy. A block is main content when the model's probability reaches the stored threshold.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

MODEL_PATH = Path(__file__).with_name("model.json")
# Round 4: a second block model that also reads structure.py's features; the two are averaged.
STRUCTURE_MODEL_PATH = Path(__file__).with_name("model_structure.json")
SELECTOR_PATH = Path(__file__).with_name("selector.json")

# One tree as parallel tuples; a node is a leaf when its feature index is -1.
Tree = tuple[tuple[int, ...], tuple[float, ...], tuple[int, ...], tuple[int, ...], tuple[float, ...]]


@dataclass(frozen=True)
class Forest:
    features: tuple[str, ...]
    baseline: float
    trees: tuple[Tree, ...]
    threshold: float
    info: Mapping[str, object]

    def scores(self, rows: Sequence[Mapping[str, float]]) -> list[float]:
        """The trees' raw sum per feature row (a regressor's prediction); a missing feature counts as 0."""
        names = self.features
        out = []
        for row in rows:
            x = [float(row.get(name, 0.0)) for name in names]
            score = self.baseline
            for feature, threshold, left, right, value in self.trees:
                i = 0
                while feature[i] >= 0:
                    i = left[i] if x[feature[i]] <= threshold[i] else right[i]
                score += value[i]
            out.append(score)
        return out

    def probabilities(self, rows: Sequence[Mapping[str, float]]) -> list[float]:
        """P(main content) per feature row (a binary classifier's trees)."""
        return [1.0 / (1.0 + math.exp(-max(min(s, 50.0), -50.0))) for s in self.scores(rows)]

    def to_json(self) -> dict[str, object]:
        return {
            "features": list(self.features),
            "baseline": self.baseline,
            "threshold": self.threshold,
            "info": dict(self.info),
            "trees": [[list(part) for part in tree] for tree in self.trees],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Forest:
        trees = []
        for raw in data["trees"]:
            feature, threshold, left, right, value = raw
            trees.append(
                (
                    tuple(int(v) for v in feature),
                    tuple(float(v) for v in threshold),
                    tuple(int(v) for v in left),
                    tuple(int(v) for v in right),
                    tuple(float(v) for v in value),
                )
            )
        return cls(
            features=tuple(str(f) for f in data["features"]),
            baseline=float(data["baseline"]),
            trees=tuple(trees),
            threshold=float(data.get("threshold", 0.5)),
            info=dict(data.get("info") or {}),
        )


@cache
def load_model(path: Path = MODEL_PATH) -> Forest:
    return Forest.from_json(json.loads(path.read_text(encoding="utf-8")))


@cache
def load_models() -> tuple[Forest, ...]:
    """The shipped block models whose probabilities are averaged (model.json, then model_structure.json)."""
    models = [load_model()]
    if STRUCTURE_MODEL_PATH.exists():
        models.append(load_model(STRUCTURE_MODEL_PATH))
    return tuple(models)


def mean_probabilities(models: Sequence[Forest], rows: Sequence[Mapping[str, float]]) -> list[float]:
    """P(main content) per row, averaged over the models (one model: its own probabilities)."""
    each = [m.probabilities(rows) for m in models]
    return [sum(ps) / len(each) for ps in zip(*each, strict=True)] if each else []


@cache
def load_selector(path: Path = SELECTOR_PATH) -> Forest | None:
    """The per-page candidate selector (candidates.py), or None when none is shipped."""
    if not path.exists():
        return None
    return Forest.from_json(json.loads(path.read_text(encoding="utf-8")))


def from_sklearn(model: object, features: Sequence[str], threshold: float, info: Mapping[str, object]) -> Forest:
    """Convert a fitted binary HistGradientBoostingClassifier or a HistGradientBoostingRegressor (benchmark side)."""
    baseline = float(model._baseline_prediction.ravel()[0])  # type: ignore[attr-defined]
    trees = []
    for (predictor,) in model._predictors:  # type: ignore[attr-defined]
        nodes = predictor.nodes
        trees.append(
            (
                tuple(-1 if n["is_leaf"] else int(n["feature_idx"]) for n in nodes),
                tuple(float(n["num_threshold"]) for n in nodes),
                tuple(int(n["left"]) for n in nodes),
                tuple(int(n["right"]) for n in nodes),
                tuple(float(n["value"]) for n in nodes),
            )
        )
    return Forest(tuple(features), baseline, tuple(trees), threshold, dict(info))
