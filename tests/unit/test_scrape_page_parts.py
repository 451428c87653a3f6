"""scrape: links, metadata, the fallback rule, the choice between rendered and server HTML, blocks
and their alignment with an extractor's text."""

from __future__ import annotations

import json

from sandbox_image.scrape.align import kept_blocks
from sandbox_image.scrape.blocks import segment
from sandbox_image.scrape.document import choose_document
from sandbox_image.scrape.dom import parse_html, visible_document
from sandbox_image.scrape.links import extract_links, make_absolute, srcset_urls
from sandbox_image.scrape.main_content import implausibly_short
from sandbox_image.scrape.metadata import extract_metadata

URL = "https://example.org/blog/post.html"


def doc(body: str, head: str = "", attrs: str = 'lang="en"') -> str:
    return f"<!doctype html><html {attrs}><head>{head}</head><body>{body}</body></html>"


def test_links_are_absolute_deduplicated_and_in_page_order() -> None:
    root = parse_html(
        doc(
            '<a href="/b">b</a><a href="a.html">a</a><a href="/b#top">b again</a>'
            '<a href="https://other.org/x">x</a><a href="mailto:me@example.org">mail</a>'
            '<a href="javascript:go()">js</a><a href="#only-fragment">frag</a><a>no href</a>'
            '<map><area href="/c" alt="c"></map><a href="  /d  ">spaces</a><a href="http://[::1">bad</a>'
        )
    )
    assert extract_links(root, URL) == [
        "https://example.org/b",
        "https://example.org/blog/a.html",
        "https://other.org/x",
        "https://example.org/c",
        "https://example.org/d",
    ]


def test_links_resolve_against_base_href() -> None:
    root = parse_html(doc('<a href="x">x</a>', head='<base href="https://cdn.example.net/root/">'))
    assert extract_links(root, URL) == ["https://cdn.example.net/root/x"]


def test_markdown_links_and_images_resolve_against_base_href_too() -> None:
    # An app served with <base href="/"> (Angular's default): the browser takes `docs/x` to /docs/x,
    # so the markdown must, as the links format does; a heading's permalink to the page still goes.
    from sandbox_image.scrape.extract import extract_html

    body = (
        '<h2 id="s">Setup<a href="/blog/post.html#s">#</a></h2><p>Read <a href="docs/x">the guide</a> '
        'and <a href="#s">this part</a>.</p><img src="img/a.png" alt="A">'
    )
    page = extract_html(doc(body, head='<base href="/">'), URL, only_main_content=False)
    assert "[the guide](https://example.org/docs/x)" in page.markdown
    assert "![A](https://example.org/img/a.png)" in page.markdown
    assert "## Setup\n" in page.markdown and "#](" not in page.markdown
    assert page.links == ["https://example.org/blog/post.html", "https://example.org/docs/x"]
    assert 'href="https://example.org/docs/x"' in page.html and 'src="https://example.org/img/a.png"' in page.html


def test_srcset_urls_follow_the_html_parsing_rules() -> None:
    assert srcset_urls("a.jpg 1x, b.jpg 2x") == ["a.jpg", "b.jpg"]
    assert srcset_urls("a.jpg,b.jpg") == ["a.jpg,b.jpg"]  # one URL: commas end a URL only before a space
    assert srcset_urls("a.jpg, b.jpg") == ["a.jpg", "b.jpg"]
    assert srcset_urls("https://x/c_fill,w_50/p.png 50w,https://x/q.png 99w") == [
        "https://x/c_fill,w_50/p.png",
        "https://x/q.png",
    ]
    assert srcset_urls("  ") == []


def test_html_taken_out_of_its_page_points_where_the_page_did() -> None:
    root = parse_html(
        '<div><a href="docs/x">x</a><img src="a.png" srcset="a-1.png 1x, https://cdn.example/c_fill,w_9/b.png 2x">'
        '<a href="http://[bad">b</a><p style="background:url(bg.png)">p</p></div>'
    )
    make_absolute(root, "https://example.org/base/")
    (a, bad), img = list(root.iter("a")), next(root.iter("img"))
    assert a.get("href") == "https://example.org/base/docs/x" and img.get("src") == "https://example.org/base/a.png"
    assert img.get("srcset") == "https://example.org/base/a-1.png 1x, https://cdn.example/c_fill,w_9/b.png 2x"
    assert bad.get("href") is None  # cannot be resolved: dropped, not left relative


def test_metadata_from_meta_tags() -> None:
    head = (
        "<title> The  title </title>"
        '<meta name="description" content="What it is about.">'
        '<link rel="canonical" href="/blog/post">'
        '<meta property="article:published_time" content="2024-05-06T07:08:09Z">'
        '<meta name="author" content="Ada Lovelace">'
    )
    meta = extract_metadata(parse_html(doc("<p>x</p>", head)), URL)
    assert meta.as_dict() == {
        "title": "The title",
        "description": "What it is about.",
        "language": "en",
        "canonicalUrl": "https://example.org/blog/post",
        "publishedDate": "2024-05-06T07:08:09Z",
        "author": "Ada Lovelace",
    }


def test_metadata_from_json_ld_graph_and_og() -> None:
    ld = {
        "@context": "https://schema.org",
        "@graph": [
            {"@type": "WebSite", "name": "Site"},
            {"@type": "BlogPosting", "datePublished": "2023-01-02", "author": [{"name": "Ann"}, {"name": "Bo"}]},
        ],
    }
    head = (
        f'<script type="application/ld+json">{json.dumps(ld)}</script>'
        '<script type="application/ld+json">{broken json</script>'
        '<meta property="og:description" content="From OG."><meta property="og:title" content="OG title">'
        '<meta property="og:locale" content="fr_FR">'
    )
    meta = extract_metadata(parse_html(doc("<p>x</p>", head, attrs="")), URL)
    assert meta.publishedDate == "2023-01-02"
    assert meta.author == "Ann, Bo"
    assert meta.description == "From OG."
    assert meta.title == "OG title"
    assert meta.language == "fr-FR"


def test_metadata_site_image_and_modified_date() -> None:
    head = (
        '<meta property="og:site_name" content="Fox Weekly"><meta property="og:image" content="/img/lead.jpg">'
        '<meta property="article:modified_time" content="2024-06-01T00:00:00Z">'
    )
    meta = extract_metadata(parse_html(doc("<p>x</p>", head)), URL)
    assert (meta.siteName, meta.image, meta.modifiedDate) == (
        "Fox Weekly", "https://example.org/img/lead.jpg", "2024-06-01T00:00:00Z"
    )  # fmt: skip
    ld = [
        {"@type": ["WebSite"], "name": "LD Site"},
        {"@type": "Article", "dateModified": "2023-03-04", "image": [{"@type": "ImageObject", "url": "a.png"}]},
    ]
    meta = extract_metadata(
        parse_html(doc("<p>x</p>", f'<script type="application/ld+json">{json.dumps(ld)}</script>')), URL
    )
    assert (meta.siteName, meta.image, meta.modifiedDate) == ("LD Site", "https://example.org/blog/a.png", "2023-03-04")
    # Only a web address counts as the image: not a data: URI, not a script.
    for bad in ("data:image/png;base64,AAAA", "javascript:alert(1)"):
        stated = f'<meta property="og:image" content="{bad}"><link rel="image_src" href="{bad}">'
        assert extract_metadata(parse_html(doc("<p>x</p>", stated)), URL).image == ""


def test_metadata_absent_when_the_page_does_not_say() -> None:
    meta = extract_metadata(parse_html(doc("<p>Just text 2024-01-01 by Someone</p>", attrs="")), URL)
    assert meta.as_dict() == {}


def test_metadata_microdata() -> None:
    body = (
        '<article><time itemprop="datePublished" datetime="2022-02-02">Feb 2</time>'
        '<span itemprop="author" itemscope><span itemprop="name">Grace Hopper</span></span></article>'
    )
    meta = extract_metadata(parse_html(doc(body)), URL)
    assert meta.publishedDate == "2022-02-02"
    assert meta.author == "Grace Hopper"


def test_fallback_rule_empty_or_implausibly_short() -> None:
    assert implausibly_short(0, 0)
    assert implausibly_short(0, 5000)
    assert implausibly_short(12, 1000)  # a handful of words out of a long page
    assert not implausibly_short(12, 100)  # a short page whose main content is short
    assert not implausibly_short(60, 5000)


def test_rendered_document_is_preferred_unless_scripts_failed_to_render_it() -> None:
    words = " ".join(f"word{i}" for i in range(200))
    rendered = doc(f"<main><p>{words}</p></main>")
    server = doc(f"<main><p>{words}</p></main><script>app()</script>")
    assert choose_document(rendered, server).source == "rendered"
    assert choose_document(rendered, None).source == "rendered"
    # An app shell that did not boot: the words exist only in the server's <noscript> fallback.
    shell = doc('<div id="app">Loading…</div><noscript>enable JavaScript</noscript>')
    server_with_noscript = doc(f'<div id="app"></div><noscript><article><p>{words}</p></article></noscript>')
    chosen = choose_document(shell, server_with_noscript)
    assert chosen.source == "static"
    assert "word199" in chosen.root.text_content()


def test_mis_decoded_utf8_is_repaired_and_real_accents_are_left_alone() -> None:
    # "it’s", "café" and "“quoted”" as a CMS that read UTF-8 as Windows-1252 / Latin-1 serves them.
    broken = "it\u00e2\u20ac\u2122s a caf\u00c3\u00a9 with \u00e2\u20ac\u0153quoted\u00e2\u20ac\u009d words"
    page = doc(
        f"<main><p>{broken}</p><p>Na\u00efve fa\u00e7ade \u00c0 la carte \u2014 \u201cok\u201d, 5\u00a0\u00b0C</p>"
        "<img src=a.png alt='caf\u00c3\u00a9 sign'></main>",
        head="<title>Bob\u00e2\u20ac\u2122s page</title><meta name=description content='caf\u00c3\u00a9 menu'>",
    )
    root = choose_document(page).root
    text = root.text_content()
    assert "it\u2019s a caf\u00e9 with \u201cquoted\u201d words" in text
    # already right, so untouched:
    assert "Na\u00efve fa\u00e7ade \u00c0 la carte \u2014 \u201cok\u201d, 5\u00a0\u00b0C" in text
    assert root.find(".//img").get("alt") == "caf\u00e9 sign"
    meta = extract_metadata(root, "https://example.org/")
    assert meta.title == "Bob\u2019s page" and meta.description == "caf\u00e9 menu"


def test_a_repair_that_would_make_a_control_character_is_not_made() -> None:
    # ftfy reads "À€" (C0 80, modified UTF-8) as NUL, which no text node may hold: the text stays as it was
    # (this failed every markdown and html scrape of such a page with an internal error).
    page = doc(
        "<main><p>Our caf\u00c3\u00a9 serves coffee \u00c0\u20ac every day.</p></main>",
        head="<title>\u00c0\u20ac</title>",
    )
    root = choose_document(page).root
    assert "Our caf\u00c3\u00a9 serves coffee \u00c0\u20ac every day." in root.text_content()


def test_hidden_marks_are_removed_from_the_visible_document() -> None:
    html = doc(
        '<p>seen</p><div data-bw-hidden="display"><p>display none</p></div>'
        '<p data-bw-hidden="visibility">invisible</p><p data-bw-hidden="collapsed">collapsed</p>'
        '<p data-bw-hidden="offscreen">off</p><p data-bw-hidden="aria">aria</p><script>var s</script>'
    )
    text = visible_document(html).text_content()
    assert "seen" in text and "aria" in text
    for gone in ("display none", "invisible", "collapsed", "off", "var s"):
        assert gone not in text
    assert "aria" not in visible_document(html, drop_aria_hidden=True).text_content()


def test_blocks_own_their_inline_text_only() -> None:
    root = parse_html(
        doc(
            '<nav><a href="/">Home</a> <a href="/a">About</a></nav>'
            "<main><h1>Title</h1><div>Intro <em>text</em><p>Para one.</p>tail words</div>"
            '<a href="/card"><div>Card inside a link</div></a></main>'
        )
    )
    blocks = segment(root)
    by_text = {b.text: b for b in blocks}
    assert set(by_text) == {"Home About", "Title", "Intro text tail words", "Para one.", "Card inside a link"}
    assert by_text["Home About"].in_chrome and by_text["Home About"].link_density == 1.0
    assert by_text["Title"].heading and by_text["Title"].in_main
    assert by_text["Para one."].words == 2


def test_alignment_finds_blocks_in_order_and_rejects_far_short_matches() -> None:
    blocks = ["Home", "A long first paragraph about things", "Share", "Second paragraph of the article", "Home"]
    extracted = "A long first paragraph about things.\n\nSecond paragraph of the article."
    assert kept_blocks(blocks, extracted) == [False, True, False, True, False]
    # A short block counts only near the previous match: "home" deep in the text is a different word.
    far = "A long first paragraph about things. " + "filler " * 80 + "Second paragraph of the article home"
    assert kept_blocks(["A long first paragraph about things", "Home"], far) == [True, False]
    assert kept_blocks(blocks, "") == [False] * 5
