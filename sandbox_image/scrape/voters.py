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


def jus_text(html: str, url: str, lang: str) -> str:
    import justext

    paragraphs = justext.justext(html, _stoplist(lang or "en"))
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
