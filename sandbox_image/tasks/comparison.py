"""multi_tab_compare's comparison: facts read from each page's text, then what they share and where they differ.

Pure functions over page content (no browser), so the rules are easy to test and to read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rpc.models.browser import ContentSection
from rpc.models.templates import Comparison, PageFacts, PageValues

MAX_VALUES = 50
# A heading or value is cut to this many characters: a page's single 1 MB "heading" would otherwise be
# copied into the comparison (and the result) once per page that has it.
MAX_VALUE_CHARS = 300
# An amount with a currency symbol or code before or after it: $1,299.00, € 5, 12.50 EUR, 99元.
_PRICE = re.compile(
    r"(?:[$€£¥₹]\s?\d[\d,]*(?:\.\d+)?"
    r"|\b(?:USD|EUR|GBP|JPY|CNY|RMB)\s?\d[\d,]*(?:\.\d+)?"
    r"|\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|JPY|CNY|RMB|元|€)(?![A-Za-z]))"
)
_NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)*(?![\w])")
_WORD = re.compile(r"\w+")


def _unique(values: Iterable[str], limit: int = MAX_VALUES) -> list[str]:
    return list(dict.fromkeys(v.strip()[:MAX_VALUE_CHARS] for v in values if v.strip()))[:limit]


def page_facts(url: str, title: str, sections: list[ContentSection]) -> PageFacts:
    text = "\n".join(f"{s.heading}\n{s.text}" if s.heading else s.text for s in sections)
    prices = _unique(m.group(0) for m in _PRICE.finditer(text))
    return PageFacts(
        url=url,
        title=title,
        wordCount=len(_WORD.findall(text)),
        headings=_unique((s.heading for s in sections), limit=200),
        prices=prices,
        numbers=_unique(m.group(0) for m in _NUMBER.finditer(text)),
    )


def _split(pages: list[PageFacts], values: list[list[str]]) -> tuple[list[str], list[PageValues]]:
    """Values on every page (in the first page's order), and per page the ones that are not."""
    shared = [v for v in values[0] if all(v in other for other in values[1:])] if values else []
    differing = [
        PageValues(url=p.url, values=[v for v in vs if v not in shared]) for p, vs in zip(pages, values, strict=True)
    ]
    return shared, differing


def compare(pages: list[PageFacts]) -> Comparison:
    shared_headings, differing_headings = _split(pages, [p.headings for p in pages])
    shared_prices, differing_prices = _split(pages, [p.prices for p in pages])
    shared_numbers, differing_numbers = _split(pages, [p.numbers for p in pages])
    words = [p.wordCount for p in pages] or [0]
    return Comparison(
        pages=pages,
        sameTitle=len({p.title for p in pages}) <= 1,
        sharedHeadings=shared_headings,
        differingHeadings=differing_headings,
        sharedPrices=shared_prices,
        differingPrices=differing_prices,
        sharedNumbers=shared_numbers,
        differingNumbers=differing_numbers,
        wordCountMin=min(words),
        wordCountMax=max(words),
    )
