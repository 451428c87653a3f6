"""scrape: the per-page choice of the block model's threshold (candidates.py) and the shipped selector."""

from __future__ import annotations

import math

import pytest

from sandbox_image.scrape import candidates
from sandbox_image.scrape.blocks import segment
from sandbox_image.scrape.candidates import CANDIDATES, DEFAULT, THRESHOLDS, candidate_features, candidate_masks, choose
from sandbox_image.scrape.document import choose_document
from sandbox_image.scrape.main_content import select_blocks
from sandbox_image.scrape.model import Forest, load_models, load_selector

PROBABILITIES = [0.9, 0.55, 0.45, 0.25, 0.1]
WORDS = [40, 10, 10, 10, 30]
ROWS = [
    {"page_log_words": 4.6, "declares_product": 1.0, "link_density": 0.0, "in_main": 1.0, "li": 0.0},
    {"page_log_words": 4.6, "declares_product": 1.0, "link_density": 0.5, "in_main": 1.0, "li": 1.0},
    {"page_log_words": 4.6, "declares_product": 1.0, "link_density": 1.0, "in_main": 0.0, "li": 1.0},
    {"page_log_words": 4.6, "declares_product": 1.0, "link_density": 1.0, "in_main": 0.0, "li": 1.0},
    {"page_log_words": 4.6, "declares_product": 1.0, "link_density": 1.0, "in_main": 0.0, "li": 0.0},
]


def stump(feature: str, split: float, low: float, high: float, margin: float = 0.0) -> Forest:
    """A regressor of one split: `feature` <= split predicts `low`, else `high`."""
    tree = ((0, -1, -1), (split, 0.0, 0.0), (1, 0, 0), (2, 0, 0), (0.0, low, high))
    return Forest((feature,), 0.0, (tree,), margin, {})


def test_candidates_are_the_block_model_at_each_threshold() -> None:
    masks = candidate_masks(PROBABILITIES)
    assert len(masks) == len(CANDIDATES) == len(THRESHOLDS)
    assert masks[DEFAULT] == [True, True, False, False, False]  # threshold 0.5
    assert masks[THRESHOLDS.index(0.2)] == [True, True, True, True, False]
    assert masks[THRESHOLDS.index(0.8)] == [True, False, False, False, False]


def test_candidate_features_describe_each_selection_against_the_default() -> None:
    masks = candidate_masks(PROBABILITIES)
    features = candidate_features(ROWS, WORDS, PROBABILITIES, masks)
    default, low = features[DEFAULT], features[THRESHOLDS.index(0.2)]
    assert default["share"] == pytest.approx(0.5) and low["share"] == pytest.approx(0.7)
    assert default["added_share"] == 0.0 and default["removed_share"] == 0.0 and default["agree_default"] == 1.0
    assert low["added_share"] == pytest.approx(0.2) and low["added_probability"] == pytest.approx(0.35)
    assert low["agree_default"] == pytest.approx(50 / 70)
    assert default["kept_link_density"] == pytest.approx(5 / 50) and default["kept_li"] == pytest.approx(10 / 50)
    assert default["declares_product"] == 1.0 and "link_density" not in default  # page signals only
    assert {f["candidate"] for f in features} == set(map(float, range(len(THRESHOLDS))))


def test_without_a_selector_the_default_threshold_is_kept() -> None:
    chosen, flags = choose(ROWS, WORDS, PROBABILITIES, None)
    assert chosen == DEFAULT and flags == [True, True, False, False, False]
    assert choose([], [], [], stump("threshold", 0.5, 1.0, 0.0))[0] == DEFAULT


def test_the_selector_picks_the_highest_predicted_gain_above_its_margin() -> None:
    # Predicts a gain of 0.3 for thresholds <= 0.3, 0 for the rest: the lowest threshold wins the tie-break
    # by order, i.e. the first candidate with the highest gain.
    prefers_recall = stump("threshold", 0.3, 0.3, 0.0)
    chosen, flags = choose(ROWS, WORDS, PROBABILITIES, prefers_recall)
    assert CANDIDATES[chosen] == "threshold 0.2" and flags == [True, True, True, True, False]
    # The same prediction under a margin it does not clear: the default stays.
    timid = stump("threshold", 0.3, 0.3, 0.0, margin=0.5)
    assert choose(ROWS, WORDS, PROBABILITIES, timid)[0] == DEFAULT


def test_a_candidate_that_keeps_nothing_is_never_chosen() -> None:
    # Gains only for threshold 0.8+, which keeps nothing on this page.
    wants_precision = stump("threshold", 0.75, 0.0, 1.0)
    assert choose(ROWS, WORDS, [0.6, 0.55, 0.5, 0.5, 0.1], wants_precision)[0] == DEFAULT


def test_shipped_selector_reads_features_the_engine_computes() -> None:
    selector = load_selector()
    if selector is None:
        pytest.skip("no selector.json shipped")
    masks = candidate_masks(PROBABILITIES)
    computed = set(candidate_features(ROWS, WORDS, PROBABILITIES, masks)[0])
    page_level = {n for n in selector.features if n.startswith(("page_", "declares_", "path_"))}
    own = set(selector.features) - page_level
    assert own <= computed, own - computed
    model_features = {n for model in load_models() for n in model.features}
    model_page_level = {n for n in model_features if n.startswith(("page_", "declares_", "path_"))}
    assert page_level <= model_page_level, page_level - model_page_level


def test_select_blocks_reports_the_chosen_candidate() -> None:
    html = "<html><body><main><h1>Title</h1><p>" + "word " * 60 + "</p></main><footer>Copyright</footer></body></html>"
    document = choose_document(html)
    voter_texts = {"trafilatura": "Title " + "word " * 60}
    with_selector = select_blocks(document, "https://example.org/a", voter_texts=voter_texts)
    plain = select_blocks(document, "https://example.org/a", voter_texts=voter_texts, use_selector=False)
    assert plain.candidate == CANDIDATES[DEFAULT]
    assert with_selector.candidate in CANDIDATES
    assert len(with_selector.blocks) == len(segment(document.root)) and not with_selector.fallback
    assert THRESHOLDS.index(0.5) == candidates.DEFAULT


def test_where_the_block_model_finds_nothing_a_laxer_threshold_may_find_text_but_not_navigation() -> None:
    # Seed TC-04: nothing plausible at the default threshold and a laxer threshold that keeps only links
    # means the whole page, not the navigation. A block model that gives every block 0.35: nothing at 0.5,
    # everything at 0.3.
    lukewarm = Forest(("x",), math.log(0.35 / 0.65), (), 0.5, {})
    document = choose_document("<html><body><nav><a href='/a'>Alpha</a> <a href='/b'>Beta</a></nav></body></html>")
    voter_texts = {"trafilatura": "", "resiliparse": ""}
    prefers_recall = stump("threshold", 0.3, 1.0, 0.0)
    masks = candidate_masks([0.35])
    assert not any(masks[DEFAULT]) and all(masks[THRESHOLDS.index(0.3)]), "the selector would have a choice"
    eager = select_blocks(
        document, "https://example.org/", models=(lukewarm,), voter_texts=voter_texts, selector=prefers_recall
    )
    assert eager.fallback
    assert eager.kept == {b.index for b in eager.blocks}

    # The same model on a page of text with a menu: the laxer threshold finds the text, which stands.
    text = " ".join(["Hand-thrown stoneware mug, glazed in ash blue, holds 350 ml."] * 3)
    shop = choose_document(
        f"<html><body><nav><a href='/a'>Alpha</a> <a href='/b'>Beta</a></nav><p>{text}</p></body></html>"
    )
    found = select_blocks(
        shop, "https://example.org/", models=(lukewarm,), voter_texts=voter_texts, selector=prefers_recall
    )
    assert not found.fallback and found.candidate != CANDIDATES[DEFAULT]
    assert "stoneware" in found.text()


def test_a_repeated_text_is_kept_once_and_short_repeats_stay() -> None:
    texts = ["Quoted post with words", "Reply", "quoted  POST with words!", "Reply", "Two words", "two words"]
    kept = candidates.drop_repeats([True] * 6, texts)
    assert kept == [True, True, False, True, True, True]  # "Reply" and two-word repeats are under REPEAT_WORDS
    assert candidates.drop_repeats([False, True, True, True, True, True], texts)[2] is True  # first kept copy
    masks = candidate_masks([0.9] * 6, texts)
    assert all(m == kept for m in masks)
    _chosen, flags = choose([{}] * 6, [4, 1, 4, 1, 2, 2], [0.9] * 6, None, texts)
    assert flags == kept
