"""What kind of page this says it is: signals for the block model, from the page itself only.

Two sources, both stated by the page: the schema.org types it declares (JSON-LD @type, microdata
itemtype, og:type) and the conventional words in its URL path (/products/, /collections/,
/threads/, /docs/ …). Each kind becomes one 0/1 feature; the model learns how much to trust it.
No page type label is ever read from outside the page.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

from lxml.html import HtmlElement

from sandbox_image.scrape.metadata import json_ld_objects

KINDS = ("article", "product", "collection", "forum", "docs", "listing", "service")
# schema.org / og types (lower-case) -> kind
_TYPES = {
    "article": "article",
    "newsarticle": "article",
    "blogposting": "article",
    "reportagenewsarticle": "article",
    "recipe": "article",
    "review": "article",
    "product": "product",
    "productgroup": "product",
    "offer": "product",
    "collectionpage": "collection",
    "itemlist": "listing",
    "searchresultspage": "listing",
    "discussionforumposting": "forum",
    "qapage": "forum",
    "question": "forum",
    "socialmediaposting": "forum",
    "techarticle": "docs",
    "apireference": "docs",
    "softwaresourcecode": "docs",
    "service": "service",
    "organization": "service",
    "localbusiness": "service",
    "faqpage": "service",
    "webapplication": "service",
    "softwareapplication": "service",
}
_PATHS = {
    "article": re.compile(r"/(blog|blogs|news|article|articles|story|stories|post|posts)(/|$)|/\d{4}/\d{2}/"),
    "product": re.compile(r"/(product|products|p|dp|item|itm|shop/[^/]+/[^/]+)(/|$)"),
    "collection": re.compile(r"/(collection|collections|category|categories|c|cat|b|browse|department)(/|$)"),
    "forum": re.compile(r"/(thread|threads|t|forum|forums|community|discussion|discussions|questions|topic)(/|$)"),
    "docs": re.compile(r"/(docs?|documentation|api|reference|manual|guide|guides|library|wiki|handbook)(/|$)"),
    "listing": re.compile(r"/(tag|tags|topics?|search|archive|archives|courses|events|jobs|list)(/|$)"),
    "service": re.compile(r"/(services?|solutions?|pricing|features?|platform|about|contact)(/|$)"),
}


def _declared_types(root: HtmlElement) -> set[str]:
    types: set[str] = set()
    for item in json_ld_objects(root):
        declared = item.get("@type")
        for t in declared if isinstance(declared, list) else [declared]:
            if isinstance(t, str):
                types.add(t.rsplit("/", 1)[-1].lower())
    for element in root.xpath("//*[@itemtype]"):
        types.add((element.get("itemtype") or "").rstrip("/").rsplit("/", 1)[-1].lower())
    for meta in root.xpath('//meta[@property="og:type"]'):
        types.add((meta.get("content") or "").split(".")[-1].strip().lower())
    return types


def page_kind_features(root: HtmlElement, url: str) -> dict[str, float]:
    """`declares_<kind>` and `path_<kind>` as 0/1, plus the URL path depth."""
    declared = {_TYPES[t] for t in _declared_types(root) if t in _TYPES}
    try:
        path = urlsplit(url).path.lower()
    except ValueError:
        path = ""
    features = {f"declares_{kind}": float(kind in declared) for kind in KINDS}
    features.update({f"path_{kind}": float(bool(_PATHS[kind].search(path))) for kind in _PATHS})
    features["path_depth"] = float(len([part for part in path.split("/") if part]))
    return features


# Words that pages of one kind use about themselves (shop, forum, listing, docs, service furniture).
_CUES = {
    "cue_cart": re.compile(r"\b(add to (?:cart|bag|basket)|in stock|out of stock|sku|quantity|buy now)\b", re.I),
    "cue_forum": re.compile(r"\b(reply|replies|posted|joined|quote|thread|members?|posts?)\b", re.I),
    "cue_listing": re.compile(r"\b(sort by|filter|results|showing \d|next page|load more|page \d)\b", re.I),
    "cue_docs": re.compile(r"\b(parameters?|returns?|example|syntax|install|api|function|class|method)\b", re.I),
    "cue_service": re.compile(
        r"\b(contact us|get started|request a|pricing|our services|solutions?|book a|free trial)\b", re.I
    ),
}
_PRICE = re.compile(r"(?:[$€£¥]\s?\d|\d[.,]\d\d\s?(?:€|eur|usd|\$))", re.I)
_SHAPE_TAGS = ("li", "cell", "para", "pre", "heading")


def page_shape(texts: Sequence[str], words: Sequence[int], rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """How the page is built, for telling its kind: which block kinds hold its words, how long and
    how alike its blocks are, and how often it uses shop, forum, listing, docs or service words.
    `rows` are the blocks' feature rows (features.py), which carry the page-wide signals too."""
    total = max(sum(words), 1)
    shape = {k: v for k, v in (rows[0] if rows else {}).items() if k.startswith(("declares_", "path_", "page_"))}
    for tag in _SHAPE_TAGS:
        shape[f"share_{tag}"] = sum(w for w, row in zip(words, rows, strict=True) if row.get(tag)) / total
    shape["share_sentence"] = sum(w for w, row in zip(words, rows, strict=True) if row.get("sentence_end")) / total
    shape["mean_alike"] = sum(w * row.get("alike", 0.0) for w, row in zip(words, rows, strict=True)) / total
    shape["log_blocks"] = math.log1p(len(rows))
    shape["mean_block_words"] = total / max(len(rows), 1)
    shape["short_share"] = sum(w for w in words if w <= 3) / total
    text = "\n".join(texts)
    root_total = math.sqrt(total)
    for name, pattern in _CUES.items():
        shape[name] = len(pattern.findall(text)) / root_total
    shape["price"] = len(_PRICE.findall(text)) / root_total
    return shape
