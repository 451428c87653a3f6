"""What a page states about itself: title, description, language, canonical URL, published and
modified dates, author, site name and lead image. Only what the page states (meta tags, <link
rel=canonical>, schema.org JSON-LD and microdata); nothing is guessed from the URL or the text, so an
absent field means the page did not say.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urljoin

from lxml.html import HtmlElement

from sandbox_image.scrape.links import document_base

MAX_FIELD = 2000
_DATE_NAMES = (
    "article:published_time",
    "og:article:published_time",
    "datepublished",
    "date",
    "pubdate",
    "publishdate",
    "publish-date",
    "publish_date",
    "dc.date",
    "dc.date.issued",
    "dcterms.created",
    "dcterms.issued",
    "sailthru.date",
    "parsely-pub-date",
    "article.published",
)
_MODIFIED_NAMES = (
    "article:modified_time",
    "og:updated_time",
    "datemodified",
    "last-modified",
    "dc.date.modified",
    "dcterms.modified",
    "parsely-modified-date",
)
_SITE_NAMES = ("og:site_name", "application-name", "apple-mobile-web-app-title")
_IMAGE_NAMES = ("og:image:secure_url", "og:image", "og:image:url", "twitter:image", "twitter:image:src")
_AUTHOR_NAMES = ("author", "article:author", "og:article:author", "parsely-author", "sailthru.author", "dc.creator")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class PageMetadata:
    title: str = ""
    description: str = ""
    language: str = ""
    canonicalUrl: str = ""
    publishedDate: str = ""
    modifiedDate: str = ""
    author: str = ""
    siteName: str = ""
    image: str = ""

    def as_dict(self) -> dict[str, str]:
        """Only the fields the page stated."""
        return {k: v for k, v in asdict(self).items() if v}


def _clean(value: object) -> str:
    return _SPACE.sub(" ", str(value or "")).strip()[:MAX_FIELD]


def _metas(root: HtmlElement) -> dict[str, str]:
    """First content of each <meta name|property|itemprop|http-equiv>, keyed lower-case."""
    found: dict[str, str] = {}
    for meta in root.iter("meta"):
        content = _clean(meta.get("content"))
        if not content:
            continue
        for attribute in ("name", "property", "itemprop", "http-equiv"):
            key = (meta.get(attribute) or "").strip().lower()
            if key and key not in found:
                found[key] = content
    return found


def json_ld_objects(root: HtmlElement) -> Iterator[dict[str, Any]]:
    """Every JSON object in the page's application/ld+json scripts (@graph flattened)."""
    for script in root.iter("script"):
        if (script.get("type") or "").strip().lower() != "application/ld+json" or not script.text:
            continue
        try:
            data = json.loads(script.text)
        except ValueError:
            continue
        stack = [data]
        while stack:
            item = stack.pop()
            if isinstance(item, list):
                stack.extend(reversed(item))
            elif isinstance(item, dict):
                yield item
                if isinstance(item.get("@graph"), list):
                    stack.extend(reversed(item["@graph"]))


def _person_name(value: Any) -> str:
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, dict):
        return _clean(value.get("name"))
    if isinstance(value, list):
        names = [n for n in (_person_name(v) for v in value) if n]
        return ", ".join(dict.fromkeys(names))
    return ""


def _microdata(root: HtmlElement, prop: str) -> str:
    for element in root.xpath(f'//*[@itemprop="{prop}"]'):
        value = element.get("content") or element.get("datetime")
        if not value and prop == "author":
            named = element.xpath('.//*[@itemprop="name"]')
            value = (named[0].get("content") or named[0].text_content()) if named else element.text_content()
        if value and _clean(value):
            return _clean(value)
    return ""


def _ld_image(value: Any) -> str:
    """schema.org `image`: a URL, an ImageObject, or a list of either (the first)."""
    if isinstance(value, list):
        return next((u for u in (_ld_image(v) for v in value) if u), "")
    if isinstance(value, dict):
        return _clean(value.get("url") or value.get("contentUrl"))
    return _clean(value) if isinstance(value, str) else ""


def _is_a(item: dict[str, Any], kind: str) -> bool:
    kinds = item.get("@type")
    return kind == kinds or (isinstance(kinds, list) and kind in kinds)


def _stated_url(value: str, base: str) -> str:
    """A stated URL made absolute; only http(s) (not a data: image or a script)."""
    absolute = urljoin(base, value.strip()) if value else ""
    return absolute[:MAX_FIELD] if absolute.startswith(("http://", "https://")) else ""


def extract_metadata(root: HtmlElement, url: str) -> PageMetadata:
    """The page's stated metadata; `root` is the whole document (its <head> included)."""
    metas = _metas(root)
    ld = list(json_ld_objects(root))
    title_element = root.find(".//title")
    title = _clean(title_element.text_content() if title_element is not None else "") or metas.get("og:title", "")
    description = metas.get("description") or metas.get("og:description") or metas.get("twitter:description", "")

    html = root if root.tag == "html" else root.getroottree().getroot()
    language = _clean(html.get("lang") or html.get("xml:lang") or metas.get("content-language") or "")
    language = language or metas.get("og:locale", "").replace("_", "-")

    base = document_base(root, url)
    canonical = image = ""
    for link in root.iter("link"):
        rel = (link.get("rel") or "").lower().split()
        if "canonical" in rel and link.get("href") and not canonical:
            canonical = urljoin(base, link.get("href", "").strip())
        if "image_src" in rel and link.get("href") and not image:
            image = link.get("href", "")

    published = next((metas[n] for n in _DATE_NAMES if metas.get(n)), "")
    published = published or next((_clean(o["datePublished"]) for o in ld if o.get("datePublished")), "")
    published = published or _microdata(root, "datePublished")

    author = next((metas[n] for n in _AUTHOR_NAMES if metas.get(n) and not metas[n].startswith("http")), "")
    author = author or next((n for n in (_person_name(o.get("author")) for o in ld if o.get("author")) if n), "")
    author = author or _microdata(root, "author")

    modified = next((metas[n] for n in _MODIFIED_NAMES if metas.get(n)), "")
    modified = modified or next((_clean(o["dateModified"]) for o in ld if o.get("dateModified")), "")
    modified = modified or _microdata(root, "dateModified")

    site = next((metas[n] for n in _SITE_NAMES if metas.get(n)), "")
    site = site or next((_clean(o.get("name")) for o in ld if _is_a(o, "WebSite") and o.get("name")), "")

    image = next((metas[n] for n in _IMAGE_NAMES if metas.get(n)), "") or image
    image = image or next((i for i in (_ld_image(o.get("image")) for o in ld if o.get("image")) if i), "")
    return PageMetadata(
        title=title,
        description=_clean(description),
        language=language[:64],
        canonicalUrl=canonical[:MAX_FIELD],
        publishedDate=_clean(published)[:64],
        modifiedDate=_clean(modified)[:64],
        author=author,
        siteName=site,
        image=_stated_url(image, base),
    )
