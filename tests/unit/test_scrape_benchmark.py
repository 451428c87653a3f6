"""The scrape-quality benchmark's own logic: the metric, per-type averages, the selector's training
targets and cv's fold files. A wrong figure here would mislead every design decision the docs record,
so the pure parts are tested without scikit-learn or a corpus."""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import scrape_quality
import scrape_train
from scrape_quality import Page, Scores, fitted_folds, paired_differences, word_prf

from sandbox_image.scrape import candidates

PAIRS = [
    ("The cat sat on the mat", "the cat sat"),
    ("a a a b", "a b b"),
    ("Ünïcode wörds, 42 times", "ünïcode WÖRDS 42"),
    ("", "something"),
    ("something", ""),
    ("", ""),
    ("x y z", "p q r"),
]


def page(file_id: str, page_type: str) -> Page:
    return Page(file_id, page_type, f"https://example.test/{file_id}", Path("/nonexistent"), "")


def test_word_prf_is_wcxbs_multiset_overlap_of_lowercased_words() -> None:
    p, r, f1 = word_prf("The cat sat on the mat", "the cat sat")
    assert (p, r) == (3 / 6, 1.0)
    assert f1 == pytest.approx(2 * 0.5 / 1.5)
    # Multiset: "a" three times predicted, once in the reference, counts once.
    assert word_prf("a a a b", "a b b")[:2] == (2 / 4, 2 / 3)
    assert word_prf("", "") == (1.0, 1.0, 1.0)  # nothing to find, nothing found
    assert word_prf("", "text") == (0.0, 0.0, 0.0)
    assert word_prf("text", "") == (0.0, 0.0, 0.0)
    assert word_prf("x y z", "p q r") == (0.0, 0.0, 0.0)


@pytest.mark.parametrize(("predicted", "reference"), PAIRS)
def test_the_selectors_training_target_is_the_scored_metric(predicted: str, reference: str) -> None:
    """scrape_train.word_f1 (what the selector learns to raise) must be the F1 the benchmark reports."""
    assert scrape_train.word_f1(predicted, reference) == pytest.approx(word_prf(predicted, reference)[2])


def test_summary_averages_pages_per_type_and_scores_a_missing_page_zero() -> None:
    pages = [page("1", "article"), page("2", "article"), page("3", "forum")]
    scores = Scores(per_page={"1": (1.0, 1.0, 1.0), "2": (0.5, 0.5, 0.5)})  # "3" never answered
    summary = scores.summary(pages)
    assert summary["overall"] == {"n": 3, "p": 0.5, "r": 0.5, "f1": 0.5}
    assert summary["article"]["f1"] == 0.75
    assert summary["forum"] == {"n": 1, "p": 0.0, "r": 0.0, "f1": 0.0}


def test_paired_differences_are_mean_differences_with_an_interval_around_them() -> None:
    pages = [page(str(i), "article" if i % 2 else "forum") for i in range(40)]
    ours = {p.file_id: 0.8 + (0.1 if p.page_type == "forum" else 0.0) for p in pages}
    theirs = Scores(per_page={p.file_id: (0.0, 0.0, 0.7) for p in pages})
    diffs = paired_differences(ours, theirs, pages)
    mean, low, high = diffs["overall"]
    assert mean == pytest.approx(0.15)
    assert low <= mean <= high
    assert diffs["forum"] == pytest.approx((0.2, 0.2, 0.2))  # every page the same difference
    assert diffs["article"] == pytest.approx((0.1, 0.1, 0.1))
    assert "product" not in diffs  # no pages, no figure
    assert paired_differences(ours, theirs, pages) == diffs  # seeded: the same table every run


def test_selector_rows_target_each_candidates_gain_over_the_default() -> None:
    texts = ["alpha beta gamma delta", "epsilon zeta eta", "menu home about", "alpha beta gamma delta"]
    rows = scrape_train.PageRows(
        file_id="p",
        texts=texts,
        words=[4, 3, 3, 4],
        features=[{"page_log_words": 2.7, "in_main": 1.0}] * 4,
        labels=[True, True, False, False],
        site="example.test",
        gold="alpha beta gamma delta epsilon zeta eta",
    )
    probabilities = [0.9, 0.35, 0.25, 0.9]
    features, gains, sites = scrape_train.selector_rows([rows], [probabilities])
    assert len(features) == len(gains) == len(sites) == len(candidates.CANDIDATES)
    assert sites == ["example.test"] * len(candidates.CANDIDATES)
    assert gains[candidates.DEFAULT] == 0.0
    # At 0.5 only the first block is kept (its repeat, block 4, is dropped): F1 of 4 of 7 words.
    default_f1 = word_prf("alpha beta gamma delta", rows.gold)[2]
    at_03 = candidates.THRESHOLDS.index(0.3)
    assert gains[at_03] == pytest.approx(1.0 - default_f1)  # 0.3 adds the second block: every word
    at_02 = candidates.THRESHOLDS.index(0.2)
    assert gains[at_02] == pytest.approx(word_prf("\n".join(texts[:3]), rows.gold)[2] - default_f1)
    assert [f["threshold"] for f in features] == list(candidates.THRESHOLDS)


def cv_args(tmp_path: Path, **overrides: object) -> argparse.Namespace:
    values: dict[str, object] = {"from_folds": tmp_path, "save_folds": None, "selector_seeds": 3}
    values.update(overrides)
    return argparse.Namespace(**values)


def test_from_folds_refuses_a_missing_seed_file_with_the_command_that_makes_it(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as raised:
        fitted_folds(cv_args(tmp_path), [], [page("1", "article")], seed=4)
    message = str(raised.value)
    assert "seed-4.pkl" in message and "--save-folds" in message and "--seeds 4" in message


@pytest.mark.parametrize(
    ("saved_pages", "saved_seeds"),
    [(["1", "3"], 3), (["1", "2"], 5)],
    ids=["other pages", "other selector seeds"],
)
def test_from_folds_refuses_folds_fitted_on_other_pages_or_seeds(
    tmp_path: Path, saved_pages: list[str], saved_seeds: int
) -> None:
    folds = [scrape_quality.FittedFold(["1"], (), None, {})]
    (tmp_path / "seed-0.pkl").write_bytes(
        pickle.dumps({"pages": saved_pages, "selector_seeds": saved_seeds, "folds": folds})
    )
    with pytest.raises(SystemExit, match="other pages or selector seeds"):
        fitted_folds(cv_args(tmp_path), [], [page("1", "article"), page("2", "forum")], seed=0)


def test_from_folds_reads_back_what_save_folds_kept(tmp_path: Path) -> None:
    folds = [scrape_quality.FittedFold(["1"], (), None, {}), scrape_quality.FittedFold(["2"], (), None, {})]
    (tmp_path / "seed-0.pkl").write_bytes(pickle.dumps({"pages": ["1", "2"], "selector_seeds": 3, "folds": folds}))
    got = fitted_folds(cv_args(tmp_path), [], [page("1", "article"), page("2", "forum")], seed=0)
    assert [f.test for f in got] == [["1"], ["2"]]


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (
            "https://www.postgresql.org/docs/18/sql-select.html",
            "https://postgresql.org/docs/current/sql-select.html",
            True,
        ),
        ("https://docs.python.org/3.12/library/asyncio.html", "https://docs.python.org/3/library/asyncio.html/", True),
        ("https://x.test/api/v2/users", "https://x.test/api/stable/users", True),
        ("https://x.test/p/123/reviews", "https://x.test/p/456/reviews", False),
        ("https://x.test/item?id=1", "https://x.test/item?id=2", False),
        ("https://x.test/docs/18/select.html", "https://y.test/docs/18/select.html", False),
    ],
)
def test_document_key_sees_versions_of_one_page_as_one_document(a: str, b: str, same: bool) -> None:
    assert (scrape_quality.document_key(a) == scrape_quality.document_key(b)) is same


def write_corpus(root: Path, urls: dict[str, str]) -> Path:
    (root / "ground-truth").mkdir(parents=True)
    for file_id, url in urls.items():
        (root / "ground-truth" / f"{file_id}.json").write_text(
            f'{{"url": "{url}", "ground_truth": {{"main_content": "words"}}}}', encoding="utf-8"
        )
    return root


def test_training_leaves_out_pages_that_are_a_measured_pages_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    measured = write_corpus(tmp_path / "dev300", {"0670": "https://www.postgresql.org/docs/18/sql-select.html"})
    held = write_corpus(tmp_path / "test", {"5001": "https://docs.python.org/3/library/os.html"})
    train = write_corpus(
        tmp_path / "rest",
        {
            "2863": "https://www.postgresql.org/docs/current/sql-select.html",
            "2864": "https://www.postgresql.org/docs/current/indexes.html",
            "2900": "https://docs.python.org/3.12/library/os.html",
            "2901": "",
        },
    )
    monkeypatch.setattr(scrape_train, "prep_path", lambda cache, split, file_id: tmp_path)  # every page prepared
    monkeypatch.setattr(scrape_train, "page_rows", lambda page, *_: page.file_id)
    args = argparse.Namespace(
        corpus=measured, held_out=[f"test={held}"], train_on=[f"rest={train}"], cache=tmp_path, command="train"
    )
    rows, pages, split_of = scrape_quality.training_rows(args)
    assert rows == ["2864", "2901"] and [p.file_id for p in pages] == rows and split_of == dict.fromkeys(rows, "rest")


FAKE_WORKER = """
import json, os, sys, time
for line in sys.stdin:
    job = json.loads(line)
    if job["id"] == "hangs":
        time.sleep(60)
    if job["id"] == "dies":
        sys.exit(3)
    for name in sys.argv[1:]:
        print(json.dumps({"id": job["id"], "system": name, "text": str(os.getpid()), "ms": 1}), flush=True)
"""


def test_a_baseline_worker_that_hangs_or_dies_costs_one_page_and_is_replaced(tmp_path: Path) -> None:
    """Round 28's Defuddle run hung on a page and slowed to a page a minute; the driver now kills a
    worker at a page's deadline, starts another from the next page, and replaces workers as it goes."""
    worker = tmp_path / "worker.py"
    worker.write_text(FAKE_WORKER)
    ids = ["p1", "p2", "hangs", "p3", "dies", "p4", "p5", "p6", "p7"]
    pages = [page(i, "article") for i in ids]
    scrape_quality.run_worker(
        [sys.executable, str(worker)], ("a", "b"), pages, tmp_path, "split", page_deadline_s=2, pages_per_worker=3
    )
    for system in ("a", "b"):
        answers = scrape_quality.load_outputs(tmp_path, "split", system)
        assert sorted(answers) == sorted(ids)
        assert answers["hangs"]["error"] == "no answer in time: worker killed"
        assert answers["dies"]["error"] == "worker exited"
        assert all("error" not in answers[i] for i in ids if i not in ("hangs", "dies"))
    pids = {
        i: scrape_quality.load_outputs(tmp_path, "split", "a")[i]["text"] for i in ids if i not in ("hangs", "dies")
    }
    # [p1 p2 hangs] one worker; [p3 dies p4]: p3's, then p4's after the death; [p5 p6 p7] a fresh one.
    assert pids["p1"] == pids["p2"]
    assert len({pids["p1"], pids["p3"], pids["p4"], pids["p5"]}) == 4
    assert pids["p5"] == pids["p6"] == pids["p7"]
    # A second run finds every answer cached and starts no worker at all.
    scrape_quality.run_worker(["/nonexistent"], ("a", "b"), pages, tmp_path, "split")
