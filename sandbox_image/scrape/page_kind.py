"""What kind of page this says it is: signals for the block model, from the page itself only.

Two sources, both stated by the page: the schema.org types it declares (JSON-LD @type, microdata
itemtype, og:type) and the conventional words in its URL path (/products/, /collections/,
/threads/, /docs/ …). Each kind becomes one 0/1 feature; the model learns how much to trust it.
No page type label is ever read from outside the page.

In the extraction (main_content.select_blocks) the root has already lost its scripts
(dom.remove_unrendered), so JSON-LD declarations are not seen there: only microdata and og:type
count, and the shipped models were trained that way. Reading JSON-LD before the scripts go (branch
extract10) and retraining cross-validated level with this (round 9, docs/scrape-quality.md), so the
models were left as they are.
"""

from __future__ import annotations

import re
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
