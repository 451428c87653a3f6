"""The lexicon of block words (sandbox_image/scrape/lexicon.py) and how training keeps it nested: a model
must never learn from lexicon figures that were learnt from its own pages' labels, or it would trust them
more than they deserve on a page it has never seen."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import scrape_train

from sandbox_image.scrape import lexicon
from sandbox_image.scrape.extract import extract_html


def test_words_are_lower_cased_and_digits_are_one_symbol() -> None:
    assert lexicon.words("Copyright © 2024 Example, ALL rights 12") == {"copyright", "#", "example", "all", "rights"}
    assert lexicon.words("") == frozenset()


def _pages(n_sites: int, furniture: str, prose: str) -> list[tuple[str, list[frozenset[str]], list[bool]]]:
    return [(f"site{i}.test", [lexicon.words(prose), lexicon.words(furniture)], [True, False]) for i in range(n_sites)]


def test_a_word_is_learnt_from_enough_sites_and_each_page_counts_once() -> None:
    pages = _pages(5, "Sitemap Wishlist", "The river floods every spring")
    # One site of many pages that says "rare" everywhere teaches nothing: too few sites.
    pages += [("big.test", [lexicon.words("rare words here")] * 50, [True] * 50)] * 20
    learnt = lexicon.learn(pages)
    assert learnt["sitemap"] < 0 < learnt["river"]
    assert "rare" not in learnt
    # Many furniture blocks on one page count as one page having the word around its content.
    sitemap, river = lexicon.words("Sitemap"), lexicon.words("river")
    many = lexicon.learn([(f"s{i}.test", [sitemap] * 30 + [river], [False] * 30 + [True]) for i in range(5)])
    one = lexicon.learn([(f"s{i}.test", [sitemap, river], [False, True]) for i in range(5)])
    assert many == one


def test_block_figures_are_mean_least_greatest_and_known_share() -> None:
    words = {"sitemap": -3.0, "river": 2.0, "the": 0.1}
    rows = lexicon.lexicon_features(
        [lexicon.words("the river Sitemap unknown"), lexicon.words("zzz"), frozenset()], words
    )
    assert rows[0] == pytest.approx({"lex_mean": -0.3, "lex_min": -3.0, "lex_max": 2.0, "lex_known": 0.75})
    assert rows[1] == rows[2] == dict.fromkeys(lexicon.FEATURES, 0.0)


def _row(site: str, label_word: str) -> scrape_train.PageRows:
    texts = [f"{label_word} alpha beta", "Sitemap Wishlist"]
    return scrape_train.PageRows(
        file_id=site,
        texts=texts,
        words=[3, 2],
        features=[{"votes": 1.0}, {"votes": 0.0}],
        labels=[True, False],
        site=site,
        block_words=[lexicon.words(t) for t in texts],
    )


def test_training_rows_carry_figures_learnt_without_their_own_site(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each site says a word of its own in its content; in the training view that word must be unknown
    to the lexicon its row was read with (learnt on the other folds), while the full lexicon knows it."""
    rows = [_row(f"s{i}.test", f"own{chr(97 + i)}") for i in range(10)]

    def by_site(rows: list[scrape_train.PageRows], folds: int = 5) -> list[tuple[list[int], list[int]]]:
        return [
            ([j for j in range(len(rows)) if j % folds != k], [j for j in range(len(rows)) if j % folds == k])
            for k in range(folds)
        ]

    monkeypatch.setattr(scrape_train, "site_folds", by_site)
    monkeypatch.setattr(lexicon, "MIN_SITES", 1)
    monkeypatch.setattr(scrape_train, "_VIEWS", {})
    monkeypatch.setattr(scrape_train, "LEXICON", True)
    full, view = scrape_train.lexicon_view(rows)
    assert all(f"own{chr(97 + i)}" in full for i in range(10)) and full["sitemap"] < 0
    for i, row in enumerate(view):
        own = lexicon.lexicon_features([frozenset({f"own{chr(97 + i)}"})], full)[0]
        assert own["lex_known"] == 1.0  # the full lexicon knows the site's word ...
        first = row.features[0]
        # ... the row's figures do not: its first block is read as "alpha beta" alone (2 of 3 words known).
        assert first["lex_known"] == pytest.approx(2 / 3)
        assert row.features[1]["lex_mean"] < 0 < first["lex_mean"]
    assert rows[0].features[0] == {"votes": 1.0}  # the shared rows are not changed


def test_the_engine_reads_the_lexicon_it_is_given() -> None:
    """A model that keeps only blocks whose words the lexicon calls content: the same page, two lexicons."""
    from sandbox_image.scrape.model import Forest

    keeps_content_words = Forest(
        features=("lex_mean",),
        baseline=0.0,
        trees=(((0, -1, -1), (0.0, 0.0, 0.0), (1, 0, 0), (2, 0, 0), (0.0, -9.0, 9.0)),),
        threshold=0.5,
        info={},
    )
    html = (
        "<html><body><p>The river floods every spring and the valley turns green again.</p>"
        "<p>Sitemap Wishlist Careers</p></body></html>"
    )
    voters = {"trafilatura": "The river floods every spring and the valley turns green again."}
    words = {"river": 2.0, "valley": 2.0, "sitemap": -3.0, "wishlist": -3.0}
    kept = extract_html(html, "https://example.test/", models=(keeps_content_words,), voter_texts=voters, lexicon=words)
    assert "river" in kept.markdown and "Sitemap" not in kept.markdown
    flipped = {w: -v for w, v in words.items()}
    other = extract_html(
        html, "https://example.test/", models=(keeps_content_words,), voter_texts=voters, lexicon=flipped
    )
    assert "Sitemap" in other.markdown and "river" not in other.markdown


def test_the_shipped_recipe_reads_no_lexicon() -> None:
    """Round 40 left the lexicon out of the shipped recipe: training adds no figures unless asked (`--lexicon`),
    and the engine computes none for models that do not read them."""
    from sandbox_image.scrape import main_content
    from sandbox_image.scrape.blocks import segment
    from sandbox_image.scrape.document import choose_document
    from sandbox_image.scrape.model import load_models

    rows = [_row(f"s{i}.test", "word") for i in range(3)]
    assert not scrape_train.LEXICON and scrape_train.lexicon_view(rows) == ({}, rows)
    assert all(set(lexicon.FEATURES).isdisjoint(m.features) for m in load_models())
    html = "<html><body><p>The river floods every spring.</p><p>Sitemap</p></body></html>"
    blocks = segment(choose_document(html, html).root)
    plain = main_content.block_rows(blocks, {}, {}, with_lexicon=False)
    assert all(set(lexicon.FEATURES).isdisjoint(r) for r in plain)
    read = main_content.block_rows(blocks, {}, {}, lexicon={"river": 2.0, "sitemap": -3.0})
    assert [r["lex_mean"] for r in read] == [2.0, -3.0]
