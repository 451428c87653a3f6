"""One rendered page in, everything `scrape` answers out: markdown, content HTML, links, metadata.

`extract_page` is what the agent calls with a live Playwright page; `extract_html` is the same
thing as a pure function of the annotated HTML (and, when the caller has it, the HTML the server
sent), which is what the benchmark and the unit tests call. Extraction is CPU work (lxml, the
voters, the trees), so `extract_page` runs it in a worker thread and the agent's event loop stays
responsive.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from lxml.html import HtmlElement, tostring

from sandbox_image.scrape import stopping, tags
from sandbox_image.scrape.annotate import Selectors, annotate_page
from sandbox_image.scrape.document import Document, choose_document
from sandbox_image.scrape.dom import HIDDEN_MARK, HIDDEN_REASONS, remove_own_text, strip_marks
from sandbox_image.scrape.frames import annotate_with_frames
from sandbox_image.scrape.lexicon import Lexicon
from sandbox_image.scrape.links import document_base, extract_links, make_absolute
from sandbox_image.scrape.main_content import content_element, implausibly_short, select_blocks
from sandbox_image.scrape.markdown import to_markdown
from sandbox_image.scrape.metadata import PageMetadata, extract_metadata
from sandbox_image.scrape.model import Forest

if TYPE_CHECKING:
    from playwright.async_api import Page

# A hidden element holding more than this share of the page's words is not hidden from readers on
# purpose: it is a loading artefact (an anti-flicker `visibility:hidden` on <body>, an app root
# waiting for a script), so full-page output keeps it.
HIDDEN_ARTEFACT_SHARE = 0.5


@dataclass(frozen=True)
class ExtractedPage:
    url: str
    title: str
    markdown: str
    html: str  # the content as HTML: the main content, or the visible page
    links: list[str] = field(default_factory=list)
    metadata: PageMetadata = field(default_factory=PageMetadata)
    main_content: bool = True  # False: the whole page (asked for, or the fallback)
    fallback: bool = False  # main content was asked for but came out empty or implausibly short
    source: str = "rendered"  # "rendered", or "static" when the server's HTML was read instead
    frames: int | None = None  # frame documents read in (when asked for)


def visible_body(document: Document, parts: Sequence[HtmlElement] | None = None) -> HtmlElement:
    """A copy of the body, or a body of copies of `parts`, without what the reader cannot see (loading
    artefacts excepted)."""
    body = document.root.find("body")
    body = body if body is not None else document.root
    total = len(body.text_content().split()) or 1

    def hidden(element: HtmlElement) -> bool:
        return element.get(HIDDEN_MARK) in HIDDEN_REASONS and (
            len(element.text_content().split()) <= HIDDEN_ARTEFACT_SHARE * total
        )

    if parts is None:
        out = copy.deepcopy(body)
    else:  # a part inside something hidden is hidden too
        out = body.makeelement("body", {})
        out.extend(copy.deepcopy(p) for p in parts if not any(hidden(a) for a in (p, *p.iterancestors())))
    for element in list(out.iter()):
        if not isinstance(element.tag, str) or element.getparent() is None:
            continue
        if element.get(HIDDEN_MARK) == "visibility-text":
            remove_own_text(element)
        elif hidden(element):
            element.drop_tree()
    out.tag = "body"
    return out


def extract_html(
    annotated_html: str,
    url: str,
    *,
    only_main_content: bool = True,
    response_html: str | None = None,
    lang: str = "",
    models: Sequence[Forest] | None = None,
    selector: Forest | None = None,
    voter_texts: Mapping[str, str] | None = None,
    lexicon: Lexicon | None = None,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    marked: bool = False,
) -> ExtractedPage:
    """Extract from annotate.js's HTML (plain HTML works too: it just has no visibility marks).

    `exclude`: CSS selectors whose elements go first; `include`: CSS selectors whose elements are the
    content, instead of the main content (tags.py). `marked`: annotate.js matched them already."""
    document = choose_document(annotated_html, response_html)
    root = document.root
    metadata = extract_metadata(root, url)
    marked = marked and document.source == "rendered"  # the server's HTML has no marks
    if exclude:
        tags.drop_matching(root, exclude, marked=marked)
    links = extract_links(root, url)
    base = document_base(root, url)  # what relative links and images resolve against, as in the browser
    fallback = False
    if include is not None:
        only_main_content = False  # the caller chose the content
        content = visible_body(document, tags.matching(root, include, marked=marked))
    elif only_main_content:
        selection = select_blocks(
            document, url, lang or metadata.language, models, voter_texts, selector, lexicon=lexicon
        )
        fallback = selection.fallback
        content = visible_body(document) if fallback else content_element(document, selection)
    else:
        content = visible_body(document)
    strip_marks(content)
    markdown = to_markdown(content, base, url)
    if only_main_content and not fallback and implausibly_short(len(markdown.split()), selection.page_words):
        # The kept blocks rendered to (almost) nothing, e.g. all inside elements markdown drops.
        content = visible_body(document)
        strip_marks(content)
        markdown, fallback = to_markdown(content, base, url), True
    make_absolute(content, base)  # the html format, out of its page
    return ExtractedPage(
        url=url,
        title=metadata.title,
        markdown=markdown,
        html=tostring(content, encoding="unicode"),
        links=links,
        metadata=metadata,
        main_content=only_main_content and not fallback,
        fallback=fallback,
        source=document.source,
    )


async def extract_page(
    page: Page,
    *,
    only_main_content: bool = True,
    response_html: str | None = None,
    frames_s: float | None = None,
    selectors: Selectors | None = None,
) -> ExtractedPage:
    """Annotate the rendered `page` in the browser, then extract from it in a worker thread.

    `response_html` is the body of the navigation response, when the caller kept it: it lets
    extraction fall back to the server's HTML for pages whose scripts failed to render them.
    `frames_s`: read the page's frames in place too, within that many seconds (frames.py). `selectors`:
    includeTags / excludeTags, as extract_html's include / exclude, matched by the browser (annotate.js).
    """
    frames = None
    if frames_s is None:
        annotated = await annotate_page(page, selectors)
    else:
        annotated, frames = await annotate_with_frames(page, frames_s, selectors)
    extracted = await stopping.in_thread(
        extract_html,
        annotated.html,
        annotated.url,
        only_main_content=only_main_content,
        response_html=response_html,
        lang=annotated.lang,
        include=selectors.include if selectors else None,
        exclude=selectors.exclude if selectors else None,
        marked=selectors is not None,
    )
    return extracted if frames is None else replace(extracted, frames=frames)
