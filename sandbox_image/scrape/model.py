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

# One tree as parallel tuples; a node is a leaf when its feature index is -1.
Tree = tuple[tuple[int, ...], tuple[float, ...], tuple[int, ...], tuple[int, ...], tuple[float, ...]]


@dataclass(frozen=True)
class Forest:
    features: tuple[str, ...]
    baseline: float
    trees: tuple[Tree, ...]
    threshold: float
    info: Mapping[str, object]
    kinds: KindForest | None = None  # page-kind classifier whose probabilities are block features

    def with_kinds(self, rows: Sequence[dict[str, float]], shape: Mapping[str, float]) -> None:
        """Add `kind_<kind>` (P(the page is of that kind), from its shape) to every row."""
        if self.kinds is None or not rows:
            return
        extra = {f"kind_{kind}": p for kind, p in self.kinds.probabilities(shape).items()}
        for row in rows:
            row.update(extra)

    def probabilities(self, rows: Sequence[Mapping[str, float]]) -> list[float]:
        """P(main content) per feature row; a feature the row lacks counts as 0."""
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
            out.append(1.0 / (1.0 + math.exp(-max(min(score, 50.0), -50.0))))
        return out

    def to_json(self) -> dict[str, object]:
        return {
            "features": list(self.features),
            "baseline": self.baseline,
            "threshold": self.threshold,
            "info": dict(self.info),
            "trees": [[list(part) for part in tree] for tree in self.trees],
            **({"kinds": self.kinds.to_json()} if self.kinds else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Forest:
        return cls(
            features=tuple(str(f) for f in data["features"]),
            baseline=float(data["baseline"]),
            trees=tuple(_tree(raw) for raw in data["trees"]),
            threshold=float(data.get("threshold", 0.5)),
            info=dict(data.get("info") or {}),
            kinds=KindForest.from_json(data["kinds"]) if data.get("kinds") else None,
        )


@dataclass(frozen=True)
class KindForest:
    """Multi-class trees (one tree per class per boosting round): P(page kind) from page signals."""

    classes: tuple[str, ...]
    features: tuple[str, ...]
    baselines: tuple[float, ...]
    rounds: tuple[tuple[Tree, ...], ...]

    def probabilities(self, row: Mapping[str, float]) -> dict[str, float]:
        x = [float(row.get(name, 0.0)) for name in self.features]
        scores = list(self.baselines)
        for trees in self.rounds:
            for k, (feature, threshold, left, right, value) in enumerate(trees):
                i = 0
                while feature[i] >= 0:
                    i = left[i] if x[feature[i]] <= threshold[i] else right[i]
                scores[k] += value[i]
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        total = sum(exps)
        return {kind: e / total for kind, e in zip(self.classes, exps, strict=True)}

    def to_json(self) -> dict[str, object]:
        return {
            "classes": list(self.classes),
            "features": list(self.features),
            "baselines": list(self.baselines),
            "rounds": [[[list(part) for part in tree] for tree in trees] for trees in self.rounds],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KindForest:
        return cls(
            classes=tuple(str(c) for c in data["classes"]),
            features=tuple(str(f) for f in data["features"]),
            baselines=tuple(float(b) for b in data["baselines"]),
            rounds=tuple(tuple(_tree(raw) for raw in trees) for trees in data["rounds"]),
        )


def _tree(raw: Sequence[Sequence[float]]) -> Tree:
    feature, threshold, left, right, value = raw
    return (
        tuple(int(v) for v in feature),
        tuple(float(v) for v in threshold),
        tuple(int(v) for v in left),
        tuple(int(v) for v in right),
        tuple(float(v) for v in value),
    )


@cache
def load_model(path: Path = MODEL_PATH) -> Forest:
    return Forest.from_json(json.loads(path.read_text(encoding="utf-8")))


def _sklearn_tree(predictor: Any) -> Tree:
    nodes = predictor.nodes
    return (
        tuple(-1 if n["is_leaf"] else int(n["feature_idx"]) for n in nodes),
        tuple(float(n["num_threshold"]) for n in nodes),
        tuple(int(n["left"]) for n in nodes),
        tuple(int(n["right"]) for n in nodes),
        tuple(float(n["value"]) for n in nodes),
    )


def from_sklearn(model: object, features: Sequence[str], threshold: float, info: Mapping[str, object]) -> Forest:
    """Convert a fitted binary HistGradientBoostingClassifier (benchmark side only)."""
    baseline = float(model._baseline_prediction.ravel()[0])  # type: ignore[attr-defined]
    trees = tuple(_sklearn_tree(predictor) for (predictor,) in model._predictors)  # type: ignore[attr-defined]
    return Forest(tuple(features), baseline, trees, threshold, dict(info))


def kinds_from_sklearn(model: object, features: Sequence[str]) -> KindForest:
    """Convert a fitted multi-class HistGradientBoostingClassifier (benchmark side only)."""
    return KindForest(
        classes=tuple(str(c) for c in model.classes_),  # type: ignore[attr-defined]
        features=tuple(features),
        baselines=tuple(float(b) for b in model._baseline_prediction.ravel()),  # type: ignore[attr-defined]
        rounds=tuple(tuple(_sklearn_tree(p) for p in predictors) for predictors in model._predictors),  # type: ignore[attr-defined]
    )
