"""The proven extractors whose opinions main-content selection combines.

Each takes the page's HTML (already reduced to what renders) and returns the plain text it judges
to be main content; align.py maps that text back onto the page's blocks. They were chosen because
they disagree in useful ways (measured in docs/scrape-quality.md): trafilatura in three modes
(its default balance, favouring precision, favouring recall), readability (densest subtree),
jusText (paragraph classifier by stopwords and link density), Resiliparse (DOM rules) and
BoilerPy3 (boilerpipe's shallow text features). All are permissively licensed and run on Python 3.11.
An extractor that fails on a page simply has no vote there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cache
from typing import Any

from sandbox_image.scrape import stopping

log = logging.getLogger("boxwright.agent.scrape")

# ISO 639-1 -> jusText stoplist name (jusText ships stoplists by language name).
_JUSTEXT_LANGUAGES = {
    "en": "English",
    "de": "German",
    "fr": "French",
    "es": "Spanish",
    "it": "Italian",
    "pt": "Portuguese",
    "nl": "Dutch",
    "sv": "Swedish",
    "da": "Danish",
    "no": "Norwegian_Bokmal",
    "nb": "Norwegian_Bokmal",
    "fi": "Finnish",
    "pl": "Polish",
    "cs": "Czech",
    "ru": "Russian",
    "uk": "Ukrainian",
    "tr": "Turkish",
    "hu": "Hungarian",
    "ro": "Romanian",
    "el": "Greek",
    "id": "Indonesian",
}


def _trafilatura(html: str, url: str, lang: str, **options: Any) -> str:
    import trafilatura

    return trafilatura.extract(html, url=url or None, include_comments=True, **options) or ""


def trafilatura_default(html: str, url: str, lang: str) -> str:
    return _trafilatura(html, url, lang)


def trafilatura_precision(html: str, url: str, lang: str) -> str:
    return _trafilatura(html, url, lang, favor_precision=True)


def trafilatura_recall(html: str, url: str, lang: str) -> str:
    return _trafilatura(html, url, lang, favor_recall=True)


def readability(html: str, url: str, lang: str) -> str:
    from readability import Document

    from sandbox_image.scrape.dom import parse_html

    summary = Document(html, url=url or None).summary(html_partial=True)
    return parse_html(f"<html><body>{summary}</body></html>").text_content() if summary else ""


@cache
def _stoplist(lang: str) -> frozenset[str]:
    import justext

    name = _JUSTEXT_LANGUAGES.get(lang.lower().split("-")[0], "English")
    return frozenset(justext.get_stoplist(name))


def _nearest_good_or_bad(classes: list[str], *, skip_neargood: bool, backwards: bool) -> list[str]:
    """For each paragraph, the class of the nearest one before it (or after it) that is good or bad (or
    neargood, unless skipped); "bad" at the page's edge — jusText's neighbour rule in one pass."""
    wanted = ("good", "bad") if skip_neargood else ("good", "bad", "neargood")
    found, last = [""] * len(classes), "bad"
    order = range(len(classes) - 1, -1, -1) if backwards else range(len(classes))
    for i in order:
        found[i] = last
        if classes[i] in wanted:
            last = classes[i]
    return found


def _revise_classification(paragraphs: list[Any], max_heading_distance: int) -> None:
    """jusText's context-sensitive revision (justext.core.revise_paragraph_classification), same result
    in linear time: its neighbour search walks every run of short paragraphs once per member, so a page of
    thousands of table cells or list items took seconds to minutes (jusText PR #52 is the same idea)."""

    def near_good(i: int) -> bool:
        j, distance = i + 1, 0
        while j < len(paragraphs) and distance <= max_heading_distance:
            if paragraphs[j].class_type == "good":
                return True
            distance += len(paragraphs[j].text)
            j += 1
        return False

    for p in paragraphs:
        p.class_type = p.cf_class
    # jusText's "good headings" pass looks ahead before it has copied the classes of what follows (all
    # still ""), so it never marks a heading: left out, for the same votes.

    classes = [p.class_type for p in paragraphs]  # classify short: against the classes before the pass
    prev, next_ = (_nearest_good_or_bad(classes, skip_neargood=True, backwards=b) for b in (False, True))
    prev_any, next_any = (_nearest_good_or_bad(classes, skip_neargood=False, backwards=b) for b in (False, True))
    for i, p in enumerate(paragraphs):
        if classes[i] != "short":
            continue
        if prev[i] == next_[i]:
            p.class_type = prev[i]
        elif (prev[i] == "bad" and prev_any[i] == "neargood") or (next_[i] == "bad" and next_any[i] == "neargood"):
            p.class_type = "good"
        else:
            p.class_type = "bad"

    # revise neargood: earlier ones are already revised when a later one looks back, later ones are not
    after = _nearest_good_or_bad([p.class_type for p in paragraphs], skip_neargood=True, backwards=True)
    last = "bad"
    for i, p in enumerate(paragraphs):
        if p.class_type == "neargood":
            p.class_type = "bad" if (last, after[i]) == ("bad", "bad") else "good"
        if p.class_type in ("good", "bad"):
            last = p.class_type

    for p_i, p in enumerate(paragraphs):  # more good headings
        if p.heading and p.class_type == "bad" and p.cf_class != "bad" and near_good(p_i):
            p.class_type = "good"


def jus_text(html: str, url: str, lang: str) -> str:
    from justext.core import (
        MAX_HEADING_DISTANCE_DEFAULT,
        ParagraphMaker,
        classify_paragraphs,
        html_to_dom,
        preprocessor,
    )

    # justext.justext's steps, with the revision above in place of its quadratic one
    paragraphs = ParagraphMaker.make_paragraphs(preprocessor(html_to_dom(html)))
    classify_paragraphs(paragraphs, _stoplist(lang or "en"))
    _revise_classification(paragraphs, MAX_HEADING_DISTANCE_DEFAULT)
    return "\n\n".join(p.text for p in paragraphs if not p.is_boilerplate)


def resiliparse(html: str, url: str, lang: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(html, main_content=True)


def boilerpy3(html: str, url: str, lang: str) -> str:
    from boilerpy3 import extractors

    return extractors.ArticleExtractor(raise_on_failure=False).get_content(html) or ""


Voter = Callable[[str, str, str], str]
VOTERS: dict[str, Voter] = {
    "trafilatura": trafilatura_default,
    "trafilatura-precision": trafilatura_precision,
    "trafilatura-recall": trafilatura_recall,
    "readability": readability,
    "justext": jus_text,
    "resiliparse": resiliparse,
    "boilerpy3": boilerpy3,
}


def run_voters(html: str, url: str, lang: str, names: tuple[str, ...] | None = None) -> dict[str, str]:
    """Each voter's main text for the page; a voter that raises answers "" (no vote anywhere)."""
    texts = {}
    for name in names or tuple(VOTERS):
        stopping.check()  # each extractor may take seconds on a large page
        try:
            texts[name] = VOTERS[name](html, url, lang) or ""
        except Exception as exc:  # third-party code on hostile input: any failure is just no vote
            log.debug("voter %s failed: %s", name, type(exc).__name__)
            texts[name] = ""
    return texts
