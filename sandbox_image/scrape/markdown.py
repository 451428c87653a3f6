"""HTML to markdown with html-to-markdown (Rust core, MIT): GFM tables, fenced code with its
language, nested lists, emphasis, and absolute link and image URLs.

Chosen over markdownify (slower, leaves `|` in table cells unescaped) and html2text (GPL-3.0);
compared in docs/scrape-quality.md. Before converting, code blocks get their language where sites
put it somewhere html-to-markdown does not look (Sphinx's `highlight-python` wrapper, GitHub's
`highlight-source-rust`, `data-lang`, Sandpack's `sp-javascript`), links that go nowhere
(javascript:, bare #) become text, headings lose their permalinks, a list item left with only a
nested list gives way to its items, an all-bold heading loses the bold, a thread's posts get a rule
between them, images take a lazy loader's real source, an image without alt text comes once (one
repeated down the page, an icon, not at all), and items left empty go; after, invisible whitespace
noise goes (outside code).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from urllib.parse import urldefrag, urljoin

import html_to_markdown
from lxml.html import HtmlElement, tostring

from sandbox_image.scrape.links import srcset_urls

# One class token naming a language: language-x, lang-x, highlight-x, highlight-source-x, brush:x.
_LANG_TOKEN = re.compile(r"^(?:language|lang|highlight-source|highlight|brush|sourcecode)[-:]+([a-z0-9_+#.-]{1,30})$")
# Sandpack (CodeSandbox's editor: react.dev and other docs) names the language as `sp-javascript`, among
# `sp-` tokens that are not languages (`sp-cm`, `sp-pristine`), so only these count.
_SANDPACK_LANG = re.compile(r"^sp-(javascript|typescript|jsx|tsx|css|scss|less|html|json|markdown|python|vue|svelte)$")
_NOT_LANGUAGES = frozenset({"notranslate", "default", "none", "text", "plain", "plaintext", "nohighlight", "highlight"})
_BLANK_LINES = re.compile(r"\n{3,}")
# A <br> that ends a block leaves `  ` (a hard break) before the blank line; a zero-width space
# beside a space or a line end separates nothing. Neither shows; both are noise in the text.
_SPACE_NOISE = re.compile(r"[ \t]+(?=\n\n)|\u200b+(?=[\s]|$)|(?<=\s)\u200b+")
# A line of nothing but zero-width characters (a joiner or a BOM left alone in a paragraph) shows nothing.
_ZERO_WIDTH = "\u200b-\u200d\u2060\ufeff"
_INVISIBLE_LINE = re.compile(rf"^[ \t{_ZERO_WIDTH}]*[{_ZERO_WIDTH}][ \t{_ZERO_WIDTH}]*$", re.MULTILINE)
_FENCE = re.compile(r"^([ \t]*(?:```|~~~).*)$", re.MULTILINE)
# What a permalink shows: a pilcrow (Sphinx), a zero-width space (Docusaurus), a hash, a section sign,
# an icon font's glyph (Font Awesome's link icon is U+F0C1): a few characters without a word.
_PERMALINK_TEXTS = frozenset({"", "¶", "#", "§", "🔗", "⚓", "link", "permalink", "anchor"})
_ICON_FONT = re.compile(r"[\ue000-\uf8ff]+")  # Unicode's private use area, where icon fonts live
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_LISTS = frozenset({"ul", "ol"})
_BOLD = frozenset({"strong", "b"})
_MEDIA = frozenset({"img", "picture", "video", "audio", "iframe", "svg"})
# A thread's posts, a Q&A page's answers, a post's comments: what platforms call the repeated unit.
_POST = re.compile(r"(?:^|[\W_])(?:posts?|messages?|comments?|replies|reply|answers?)(?:$|[\W_])", re.IGNORECASE)
_NOT_POSTS = frozenset({"p", "span", "a", "li", "tr", "td", "th", "dt", "dd", "pre", "code", *_HEADINGS})
# Where lazy loaders keep an image's real source: data-src (lazysizes), data-lazy-src (WP Rocket),
# data-original (jQuery Lazy Load), data-wpfc-original-src (WP Fastest Cache), data-lazy, and srcsets alike.
_LAZY_SOURCE = re.compile(r"^data-(?:[a-z0-9]+-)*(?:src|original|original-src|lazy)$")
_LAZY_SRCSET = re.compile(r"^data-(?:[a-z0-9]+-)*srcset$")
_IMAGE_FILE = re.compile(r"\.(?:jpe?g|png|gif|webp|avif|svg|bmp)(?:[?#]|$)", re.IGNORECASE)
DECORATION_COPIES = 4  # an image without alt text shown this many times is an icon, not a picture
POST_MIN_WORDS = 3  # a post shorter than this (a "+1", a lone author name) gets no rule of its own


@cache
def _options(base_url: str) -> html_to_markdown.ConversionOptions:
    return html_to_markdown.ConversionOptions(
        heading_style="atx",
        bullets="-",
        code_block_style="backticks",
        extract_metadata=False,
        base_url=base_url or None,
        # Its preprocessing drops <nav> and forms wholesale; what is content is decided before
        # conversion (main_content.py), so the converter converts everything it is given.
        preprocessing=html_to_markdown.PreprocessingOptions(enabled=False),
        # Likewise visibility: the rendered page decided it (a closed <details> is content a reader
        # can open; display:none was already removed where it was not), so convert it all.
        hidden_content="all",
        # An <abbr>'s title is a tooltip, not text on the page; by default it is written out after the
        # abbreviation, once per occurrence ("VPN (Virtual Private Network)").
        expand_abbreviations=False,
        # Images stay images everywhere (by default those in headings become their alt text,
        # which puts "Article image for: …" into a heading's words).
        keep_inline_images_in=["h1", "h2", "h3", "h4", "h5", "h6", "a", "td", "th", "li", "figcaption"],
        # Whatever data: media is left (drop_sourceless_images takes the images) would be written out
        # as base64 blobs of thousands of characters.
        inline_data_media="drop_element",
    )


def _language_from(element: HtmlElement) -> str:
    for attribute in ("data-lang", "data-language"):
        value = (element.get(attribute) or "").strip().lower()
        if value and value not in _NOT_LANGUAGES:
            return value[:30]
    tokens = (element.get("class") or "").lower().replace("brush: ", "brush:").replace(";", " ").split()
    for token in tokens:
        match = _LANG_TOKEN.match(token) or _SANDPACK_LANG.match(token)
        if match and match.group(1) not in _NOT_LANGUAGES:
            return match.group(1)
    return ""


def mark_code_languages(root: HtmlElement) -> None:
    """Give each <pre> a <code class="language-x"> when its language is stated on it or around it."""
    for pre in root.iter("pre"):
        code = pre.find("code")
        if code is not None and "language-" in (code.get("class") or ""):
            continue
        language = ""
        element: HtmlElement | None = code if code is not None else pre
        for _ in range(4):  # the <code>, the <pre>, and the wrappers highlighters put around it
            if element is None:
                break
            language = _language_from(element)
            if language:
                break
            element = element.getparent()
        if not language:
            continue
        if code is None:
            code = pre.makeelement("code", {})
            code.text, pre.text = pre.text, None
            for child in list(pre):
                code.append(child)
            pre.append(code)
        code.set("class", f"language-{language} {code.get('class') or ''}".strip())


def unlink_dead_links(root: HtmlElement) -> None:
    """Links to javascript: or a bare # lead nowhere a reader can follow: keep only their text."""
    for a in list(root.iter("a")):
        href = (a.get("href") or "").strip()
        if href.lower().startswith(("javascript:", "vbscript:", "data:")) or href in ("", "#"):
            a.drop_tag()


def unlink_code(root: HtmlElement) -> None:
    """A fenced code block is literal text: a link inside <pre> (a man page's cross-reference, a
    playground's "Run" button) would come out as `[text](url)` in the code, so keep only its text."""
    for pre in list(root.iter("pre")):
        for a in list(pre.iter("a")):
            a.drop_tag()


def _followable(url: str) -> bool:
    url = url.strip()
    return bool(url) and not url.lower().startswith("data:")


def use_lazy_sources(root: HtmlElement) -> None:
    """A lazy loader keeps an image's real source in a data- attribute until the image scrolls into
    view, and a placeholder in src until then (a blank or grey GIF, a blurred thumbnail, nothing): the
    markdown should point at the picture, not at the placeholder. A loader that has run copies the
    same URL into src, so preferring the data- attribute changes nothing there."""
    for img in root.iter("img"):
        sources = [value.strip() for name, value in img.attrib.items() if _LAZY_SOURCE.match(name)]
        for value in (img.get(name) or "" for name in img.attrib if _LAZY_SRCSET.match(name)):
            sources.extend(srcset_urls(value))
        # A URL, not a flag (data-lazy="true"):
        url = next((u for u in sources if _followable(u) and ("/" in u or _IMAGE_FILE.search(u))), None)
        if url:
            img.set("src", url)


def drop_sourceless_images(root: HtmlElement) -> None:
    """An <img> without a source a reader could follow shows nothing to keep: none at all (a lazy
    loader's placeholder that never loaded) or only a data: URI (a placeholder or an icon, which
    would be written out as a base64 blob). The converter would otherwise write the URL, or the
    title, of the link around it as the link's text. With a real URL in srcset only, that is the
    image the browser shows."""
    for img in list(root.iter("img")):
        if _followable(img.get("src") or ""):
            continue
        real = next((url for url in srcset_urls(img.get("srcset") or "") if _followable(url)), None)
        if real is None:
            img.drop_tree()
        else:
            img.set("src", real)


def drop_repeated_images(root: HtmlElement) -> None:
    """An image without alt text that the content shows again says nothing new the second time (a
    carousel's cloned slides, a thumbnail under its picture): the first copy stays. Shown
    DECORATION_COPIES times or more it is decoration, not a picture of the page (a bullet icon, a
    divider, a spacer, a "Pin it" button, a loader, a poster's avatar): every copy goes."""
    images = [(img, (img.get("src") or "").strip(), bool((img.get("alt") or "").strip())) for img in root.iter("img")]
    copies = Counter(src for _, src, alt in images if src and not alt)
    seen: set[str] = set()
    for img, src, alt in images:
        if src and not alt and (src in seen or copies[src] >= DECORATION_COPIES):
            img.drop_tree()
        seen.add(src)


def drop_code_block_buttons(root: HtmlElement, levels: int = 3) -> None:
    """A code block's own controls ("Copy", "Copied!", "Run") are not words of the page: the buttons in
    the wrappers around a <pre> that hold no other text. The first wrapper with text of its own (a
    caption, the article around the block) ends the search, so no button beyond the block goes."""
    for pre in list(root.iter("pre")):
        wrapper = pre.getparent()
        for _ in range(levels):
            if wrapper is None or _has_text_besides(wrapper, pre):
                break
            for button in [b for b in wrapper.iter("button") if pre not in b.iterancestors()]:
                button.drop_tree()
            wrapper = wrapper.getparent()


def _has_text_besides(element: HtmlElement, pre: HtmlElement) -> bool:
    """Whether `element` holds text outside `pre` and outside buttons (stops at the first it finds)."""
    if element is pre or element.tag == "button" or not isinstance(element.tag, str):
        return False
    if (element.text or "").strip():
        return True
    return any(_has_text_besides(child, pre) or (child.tail or "").strip() for child in element)


def drop_svg(root: HtmlElement) -> None:
    """An inline <svg> is an icon or a drawing: no words a reader reads (its <title> is a tooltip)."""
    for svg in list(root.iter("svg", "{http://www.w3.org/2000/svg}svg")):
        svg.drop_tree()


def drop_empty_items(root: HtmlElement) -> None:
    """A list item or heading left with neither words nor a picture (a share bar's icon-font buttons,
    an icon-only feature list once its SVGs are gone) would come out as a bare `-` or `##`; so would
    a list left with no item."""
    for element in list(root.iter("li", *_HEADINGS)):
        if not element.text_content().strip() and not any(e.tag in _MEDIA for e in element.iterdescendants()):
            element.drop_tree()
    for element in list(root.iter(*_LISTS)):
        if element.find("li") is None and not element.text_content().strip():
            element.drop_tree()


def unlink_empty_links(root: HtmlElement) -> None:
    """A link with neither text nor an image (an icon font, an SVG, a lazy image that never loaded)
    shows a reader nothing to read; the converter would write its URL as its text."""
    for a in list(root.iter("a")):
        if not a.text_content().strip() and next(a.iter("img"), None) is None:
            a.drop_tag()


def _to_this_page(href: str, base_url: str) -> bool:
    """Whether a link's target is a place on the page itself (a fragment of its own URL)."""
    href = href.strip()
    if href.startswith("#"):
        return len(href) > 1
    if not base_url or "#" not in href:
        return False
    target, fragment = urldefrag(urljoin(base_url, href))
    return bool(fragment) and target == urldefrag(base_url)[0]


def _words(element: HtmlElement) -> str:
    return " ".join(element.text_content().replace("\u200b", " ").split())


def drop_permalinks(root: HtmlElement, base_url: str) -> None:
    """A heading's or a definition's link to itself is there to copy its address, not to be read:
    Sphinx's `¶` (or an icon font's glyph), Docusaurus's zero-width `#`, MDN's and mdBook's headings
    wrapped in their own anchor (or an anchor wrapped around the heading). In markdown they become
    `## Title[¶](…#title "Link to this heading")` on every heading, so a permalink glyph goes and a
    heading that is all link to itself keeps only its text. Links to another part of the page with
    words of their own (a table of contents, "see below") stay."""
    for a in _links_to_this_page(root, base_url):
        text = _words(a)
        if text.lower() in _PERMALINK_TEXTS or _ICON_FONT.fullmatch(text):
            a.drop_tree()  # lxml keeps its tail
    for a in _links_to_this_page(root, base_url):
        # The heading around the link, or (mdBook's first edition) the one heading inside it.
        heading = next((h for h in a.iterancestors() if h.tag in _HEADINGS), None)
        heading = heading if heading is not None else next(a.iter(*_HEADINGS), None)
        if heading is not None and _words(a) == _words(heading):
            a.drop_tag()


def _links_to_this_page(root: HtmlElement, base_url: str) -> list[HtmlElement]:
    """Text links (not image links) whose target is a place on this page."""
    return [
        a for a in root.iter("a") if _to_this_page(a.get("href") or "", base_url) and next(a.iter("img"), None) is None
    ]


def lift_hollow_list_items(root: HtmlElement) -> None:
    """A list item left with nothing but a nested list (its own link or label was not content, or a
    menu's wrapper) would come out as `- - item`: its items take its place one level up. Wrappers
    between the item and its list (a dropdown's <div>s) do not count as content."""
    for li in reversed(list(root.iter("li"))):
        parent = li.getparent()
        if parent is None:
            continue
        lists = [n for n in li.iterdescendants("ul", "ol") if _outermost_list(n, li)]
        if not lists or " ".join(_words(n) for n in lists) != _words(li):
            continue  # no nested list, or words of its own besides them
        if any(n.tag in _MEDIA and not any(_contains(x, n) for x in lists) for n in li.iter()):
            continue  # an image of its own (a card's picture) is content of the item
        items = [item for n in lists for item in n]
        if items:
            items[-1].tail = (items[-1].tail or "") + (li.tail or "")
        position = parent.index(li)
        parent[position : position + 1] = items


def _outermost_list(element: HtmlElement, li: HtmlElement) -> bool:
    for ancestor in element.iterancestors():
        if ancestor is li:
            return True
        if ancestor.tag in _LISTS:
            return False
    return False


def _contains(ancestor: HtmlElement, element: HtmlElement) -> bool:
    return element is ancestor or any(a is ancestor for a in element.iterancestors())


def unbold_headings(root: HtmlElement) -> None:
    """A heading whose whole text is bold (`## **Title**`) is bold already; the markup is noise."""
    for heading in root.iter(*_HEADINGS):
        bold = [b for b in heading.iter(*_BOLD) if not any(a.tag in _BOLD for a in b.iterancestors())]
        if bold and " ".join(" ".join(b.text_content() for b in bold).split()) == _words(heading):
            for b in list(heading.iter(*_BOLD)):
                b.drop_tag()


def separate_posts(root: HtmlElement) -> None:
    """A thread's posts would run into each other: a horizontal rule goes between sibling posts (two
    or more siblings that carry the same post-like class or tag: `message`, `post`, `comment`,
    `answer`, Reddit's `shreddit-comment`), so a reader sees where one reply ends."""
    for parent in list(root.iter()):
        groups: dict[tuple[str, str], list[HtmlElement]] = {}
        for child in parent:
            key = _post_key(child)
            if key is not None and len(_words(child).split()) >= POST_MIN_WORDS:
                groups.setdefault(key, []).append(child)
        for members in groups.values():
            for post in members[1:]:
                post.addprevious(post.makeelement("hr", {}))


def _post_key(element: HtmlElement) -> tuple[str, str] | None:
    tag = element.tag
    if not isinstance(tag, str) or tag in _NOT_POSTS:
        return None
    if "-" in tag and _POST.search(tag):
        return tag, ""  # a custom element named for it
    token = next((t for t in (element.get("class") or "").split() if _POST.search(t)), None)
    return (tag, token) if token else None


def to_markdown(content: HtmlElement | str, base_url: str = "", page_url: str = "") -> str:
    """Markdown of an element (or an HTML string); links and images absolute against base_url (the
    document's <base href>, as the browser resolves them; links.document_base). page_url, when it
    differs, is the page itself, for links to a place on it (permalinks)."""
    if isinstance(content, str):
        html = content
    else:
        mark_code_languages(content)
        unlink_dead_links(content)
        drop_permalinks(content, page_url or base_url)
        lift_hollow_list_items(content)
        unbold_headings(content)
        separate_posts(content)
        unlink_code(content)
        drop_code_block_buttons(content)
        use_lazy_sources(content)
        drop_sourceless_images(content)
        drop_repeated_images(content)
        drop_svg(content)
        unlink_empty_links(content)
        drop_empty_items(content)
        html = tostring(content, encoding="unicode")
    if not html.strip():
        return ""
    markdown = _tidy(html_to_markdown.convert(html, _options(base_url)).content or "")
    return _BLANK_LINES.sub("\n\n", markdown).strip() + "\n" if markdown.strip() else ""


def _tidy(markdown: str) -> str:
    """Invisible whitespace noise out of the text; code blocks are left exactly as they are."""
    pieces = _FENCE.split(markdown)  # text, fence line, text, fence line, ... text
    inside = False
    for i, piece in enumerate(pieces):
        if i % 2:
            inside = not inside
        elif not inside:
            pieces[i] = _INVISIBLE_LINE.sub("", _SPACE_NOISE.sub("", piece))
    return "".join(pieces)
