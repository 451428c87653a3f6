"""scrape: HTML to markdown (tables, code, nested lists, emphasis, links) and back to plain text."""

from __future__ import annotations

from sandbox_image.scrape.dom import parse_html
from sandbox_image.scrape.markdown import to_markdown
from sandbox_image.scrape.plaintext import markdown_to_text

BASE = "https://example.org/docs/page.html"


def md(body: str, base: str = BASE) -> str:
    root = parse_html(f"<html><body>{body}</body></html>")
    return to_markdown(root.find("body"), base)


def test_table_becomes_gfm_with_escaped_pipes() -> None:
    out = md(
        "<table><thead><tr><th>Name</th><th>Value</th></tr></thead>"
        "<tbody><tr><td>a | b</td><td>1</td></tr><tr><td>c</td><td>2</td></tr></tbody></table>"
    )
    lines = [line.strip() for line in out.strip().splitlines()]
    assert lines[0].startswith("| Name") and lines[0].endswith("|")
    assert set(lines[1].replace("|", "").replace(" ", "")) == {"-"}
    assert "a \\| b" in lines[2]
    assert len(lines) == 4


def test_code_blocks_keep_their_language_wherever_the_site_put_it() -> None:
    assert "```python\nx = 1\n```" in md('<pre><code class="language-python">x = 1</code></pre>')
    sphinx = (
        '<div class="highlight-python notranslate"><div class="highlight"><pre><span></span>y = 2\n</pre></div></div>'
    )
    assert "```python\ny = 2\n```" in md(sphinx)
    assert "```rust" in md('<div class="highlight highlight-source-rust"><pre>fn main() {}</pre></div>')
    assert "```go" in md('<pre data-lang="go"><code>package main</code></pre>')
    assert "```php" in md('<pre class="brush: php;">echo 1;</pre>')
    # Sandpack (react.dev): the language among the editor's other `sp-` tokens, which are not languages.
    sandpack = (
        '<div class="sp-code-editor"><pre class="sp-cm sp-pristine sp-javascript"><code>let a;</code></pre></div>'
    )
    assert "```javascript\nlet a;\n```" in md(sandpack)
    assert "```\nb\n```" in md('<div class="sp-wrapper"><pre class="sp-cm sp-pristine">b</pre></div>')
    plain = md("<pre>no language here</pre>")
    assert "```\nno language here\n```" in plain


def test_nested_lists_are_indented() -> None:
    out = md("<ul><li>one<ul><li>two<ol><li>three</li></ol></li></ul></li><li>four</li></ul>")
    assert out.splitlines() == ["- one", "  - two", "    1. three", "- four"]


def test_emphasis_and_inline_code() -> None:
    out = md("<p><strong>bold</strong>, <em>italic</em>, <del>gone</del> and <code>x()</code></p>")
    assert out.strip() == "**bold**, *italic*, ~~gone~~ and `x()`"


def test_links_and_images_are_absolute_and_dead_links_are_text() -> None:
    out = md(
        '<p><a href="../guide/">Guide</a> <a href="https://other.org/x">Other</a> '
        '<a href="javascript:void(0)">Menu</a> <a href="#">Top</a> <img src="img/a.png" alt="A chart"></p>'
    )
    assert "[Guide](https://example.org/guide/)" in out
    assert "[Other](https://other.org/x)" in out
    assert "![A chart](https://example.org/docs/img/a.png)" in out
    assert "Menu" in out and "javascript:" not in out
    assert "[Top]" not in out and "Top" in out


def test_plain_text_drops_markup_link_targets_and_images() -> None:
    markdown = (
        "# Title\n\nSome **bold** and *it* with [a link](https://x.org/a_b) and ![alt words](https://x/i.png).\n\n"
        "| a \\| b | c |\n| --- | --- |\n| 1 | 2 |\n\n```python\nx = 1\n```\n\n- one\n  - two\n1. first\n> quoted\n"
    )
    text = markdown_to_text(markdown)
    assert "#" not in text and "**" not in text and "```" not in text and "python" not in text
    assert "https" not in text and "alt words" not in text and "---" not in text
    assert "a link" in text and "a | b" in text and "x = 1" in text
    assert "first" in text and "1." not in text and "quoted" in text and ">" not in text
    assert text.splitlines()[0] == "Title"


def test_plain_text_of_markdown_round_trip_keeps_every_word() -> None:
    html = (
        "<h2>Setup</h2><p>Install the <a href='/pkg'>package</a> with <code>pip</code>.</p>"
        "<ul><li>fast</li><li>small<ul><li>really</li></ul></li></ul>"
        "<table><tr><th>k</th><th>v</th></tr><tr><td>alpha</td><td>beta</td></tr></table>"
    )
    words = markdown_to_text(md(html)).split()
    for word in ("Setup", "Install", "package", "pip.", "fast", "small", "really", "alpha", "beta"):
        assert word in words


def test_navigation_and_forms_given_to_the_converter_are_converted() -> None:
    # Choosing content is main_content.py's job: the converter must not drop <nav> on its own.
    out = md('<nav><a href="/toc">Contents</a></nav><form><label>Search the docs</label></form><p>Body</p>')
    assert "[Contents](https://example.org/toc)" in out and "Search the docs" in out and "Body" in out


def test_closed_details_and_custom_elements_are_converted() -> None:
    out = md("<product-info><details><summary>Specs</summary><p>Weight 2 kg</p></details></product-info>")
    assert "Specs" in out and "Weight 2 kg" in out


def test_plain_text_drops_targets_of_links_with_brackets_spaces_and_nested_images() -> None:
    text = markdown_to_text(
        "[[pdf]](https://arxiv.org/pdf/1.pdf) [Title [v2]](http://a.b/c) [x](<https://a.b/c d>) "
        "[![logo](https://x/l.png)](https://x/) [b](https://w.org/x_(y))"
    )
    assert text.split() == ["[pdf]", "Title", "[v2]", "x", "b"]  # literal brackets are text a reader sees


def test_plain_text_drops_an_image_whose_alt_text_runs_over_lines() -> None:
    # html-to-markdown keeps an alt attribute's line breaks (the Rust book's figures); CommonMark reads
    # it as one image, so its alt text is not page text. A blank line ends it: that is no image.
    text = markdown_to_text(
        "Before\n\n![Two tables: s1 on the\nstack and the heap](https://x/t.svg)\n\nAfter ![a\n\nb](u)"
    )
    assert text.split() == ["Before", "After", "![a", "b]"]


def test_plain_text_drops_a_title_that_runs_over_lines() -> None:
    # A badge's title attribute with line breaks ("…(verified skill)\nSkill verified by …"): a tooltip.
    text = markdown_to_text(
        'Skills ![](https://x/b.png "commerce - air badge\nverified by Mike\n") and [more](u "a\nb") end'
    )
    assert text.split() == ["Skills", "and", "more", "end"]


def test_plain_text_keeps_brackets_that_are_not_links_without_gluing_words() -> None:
    text = markdown_to_text(
        "Press [CTRL][ALT][DEL] now. A dependency[[1]](https://x.org/#c1) and [a ref][r], [r] and [none][x].\n\n"
        "[r]: https://x.org/r"
    )
    assert text == "Press [CTRL][ALT][DEL] now. A dependency[1] and a ref, r and [none][x]."


def test_plain_text_of_a_code_block_inside_a_quote_has_no_fence_or_language() -> None:
    text = markdown_to_text("- **status**: list nodes\n  > ```console\n  > $ celery status\n  > ```\n")
    assert text.splitlines() == ["status: list nodes", "$ celery status"]


def test_images_in_headings_stay_images() -> None:
    out = md('<h3><a href="/story"><img src="/t.jpg" alt="Article image for: Story">Story</a></h3>')
    assert "![Article image for: Story](https://example.org/t.jpg)" in out
    assert markdown_to_text(out).split() == ["Story"]


def test_abbreviations_are_not_expanded_into_the_text() -> None:
    # The title is a tooltip; written out after every "VPN" it added words the page does not show.
    assert md('<p>Use a <abbr title="Virtual Private Network">VPN</abbr> here.</p>').strip() == "Use a VPN here."


def test_links_inside_code_blocks_become_their_text() -> None:
    # A fenced block is literal: `[pcre(3)](url)` would show the markup (and the URL) as code.
    out = md('<pre>see <a href="/man3/pcre.3.html">pcre(3)</a> for more</pre><p><a href="/b">b</a></p>')
    assert "```\nsee pcre(3) for more\n```" in out and "man3" not in out
    assert "[b](https://example.org/b)" in out  # links outside code stay links


def test_a_link_around_an_image_without_a_source_does_not_get_its_url_as_text() -> None:
    out = md('<p><a href="/case/one"><img alt="" src=""></a> <a href="/case/two"><img src="/t.png" alt="t"></a></p>')
    assert "[https://" not in out and "one" not in markdown_to_text(out)
    assert "![t](https://example.org/t.png)" in out


def test_a_link_that_shows_no_text_does_not_get_its_url_as_text() -> None:
    # An icon font, or a lazy image that never loaded inside a wrapper: the reader sees no words.
    out = md(
        '<p>Share <a href="/share/x"><i class="icon-x"></i></a> or read on.</p>'
        '<a href="/venue/8282"><figure><span><img class="lazyload" alt="8282"></span></figure></a><h3>8282</h3>'
    )
    assert "https://" not in out and markdown_to_text(out).split() == ["Share", "or", "read", "on.", "8282"]


def test_inline_svg_and_data_images_leave_no_base64_and_no_tooltip_words() -> None:
    out = md(
        '<p>Comments <a href="/c"><svg><title>Comment Icon</title><path d="M0 0"/></svg>19</a> and '
        '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" alt="spacer"> '
        '<a href="/x"><svg><title>X</title></svg></a>end <img src="/real.png" alt="real"></p>'
    )
    assert "base64" not in out and "Icon" not in out and "spacer" not in out and "/x" not in out
    assert "[19](https://example.org/c)" in out and "![real](https://example.org/real.png)" in out
    # An avatar drawn as a data: image inside a titled profile link: neither the title nor the URL.
    avatar = md('<p>x</p><a href="/u/1" title="Go to Bob\'s profile"><img src="data:image/svg+xml,%3Csvg%3E"></a>')
    assert avatar.strip() == "x"
    # A lazy loader's placeholder in src, the real picture in srcset: the one the browser shows.
    lazy = md('<img src="data:image/gif;base64,R0l" srcset="/a-400.jpg 400w, /a-800.jpg 800w" alt="A">')
    assert lazy.strip() == "![A](https://example.org/a-400.jpg)"


def test_a_code_blocks_own_buttons_go_and_other_buttons_stay() -> None:
    out = md(
        '<p>Install it:</p><div class="cb"><div class="bar"><button>Copy</button></div><pre>pip install x</pre></div>'
        "<p>Then <button>Subscribe</button> now.</p>"
        "<article><p>Intro</p><pre>code</pre><button>Show more</button></article>"
    )
    assert "Copy" not in out and "```\npip install x\n```" in out
    assert "Subscribe" in out and "Show more" in out  # not a code block's own: the wrapper has other text


def test_plain_text_keeps_code_and_snake_case_as_written() -> None:
    markdown = (
        "The pet_type field and `model_validate()`, not _emphasis_.\n\n## 1. First step\n\n"
        "```python\ndef __init__(self, pet_type):\n    return 2*3*4\n```\n"
    )
    text = markdown_to_text(markdown)
    assert text.splitlines()[0] == "The pet_type field and model_validate(), not emphasis."
    assert "1. First step" in text
    assert "def __init__(self, pet_type):" in text and "return 2*3*4" in text


def test_permalinks_go_and_headings_wrapped_in_their_own_anchor_keep_their_text() -> None:
    # Sphinx's pilcrow, Docusaurus's zero-width hash link, MDN's heading that is its own anchor.
    out = md(
        '<h1>Middleware<a class="headerlink" href="#middleware" title="Link to this heading">¶</a></h1>'
        '<h2 id="fast">Fast Track<a href="#fast" class="hash-link" aria-label="Direct link">\u200b</a></h2>'
        '<h2><a href="https://example.org/docs/page.html#why">Why flexbox?</a></h2>'
        '<dl><dt>class <code>Cache</code><a href="/src/cache.py#L61">[source]</a>'
        '<a class="headerlink" href="#Cache">¶</a></dt><dd>Caches.</dd></dl>'
        '<p>See <a href="#why">why below</a> and <a href="/other.html#why">the other page</a>.</p>'
        '<h2>Icons<a class="headerlink" href="#icons">\uf0c1</a></h2><a href="#borrowing"><h1>Borrowing</h1></a>'
    )
    assert "\n## Icons\n" in out and "\n# Borrowing\n" in out  # an icon font's glyph; a link around a heading
    assert "[†](https://example.org/docs/page.html#fn1)" in md('<p>A claim<a href="#fn1">†</a>.</p>')  # a footnote
    assert out.splitlines()[0] == "# Middleware" and "\n## Fast Track\n" in out and "\n## Why flexbox?\n" in out
    assert "¶" not in out and "\u200b" not in out and "Link to this heading" not in out
    assert "[[source]](https://example.org/src/cache.py#L61)" in out  # a link elsewhere stays
    # Links to this page with words of their own, and anchors into other pages, stay links.
    assert "[why below](https://example.org/docs/page.html#why)" in out
    assert "[the other page](https://example.org/other.html#why)" in out


def test_a_heading_linking_elsewhere_or_only_partly_linked_stays_a_link() -> None:
    out = md('<h2><a href="/guide.html#intro">Intro</a></h2><h2>Part <a href="#p2">two</a></h2>')
    assert "## [Intro](https://example.org/guide.html#intro)" in out
    assert "## Part [two](https://example.org/docs/page.html#p2)" in out


def test_a_list_item_left_with_only_a_nested_list_gives_way_to_its_items() -> None:
    out = md(
        "<ul><li><ul><li><ul><li>deep</li></ul></li></ul></li><li>kept <ul><li>child</li></ul></li></ul>"
        "<ol><li><ol><li>first</li><li>second</li></ol></li></ol><p>after</p>"
    )
    assert "- - " not in out and "1. 1." not in out
    assert "- deep\n- kept\n  - child" in out  # an item with text of its own keeps its nesting
    assert "1. first\n2. second" in out and out.rstrip().endswith("after")
    # A dropdown's wrappers between the item and its list are no content of the item.
    dropdown = '<div class="dropdown"><div><ul><li><a href="/security">Security</a></li></ul></div></div>'
    menu = md(f"<ul><li>{dropdown}</li></ul>")
    assert menu == "- [Security](https://example.org/security)\n"
    card = md('<ul><li><img src="/p.png" alt="p"><div><ul><li>spec</li></ul></div></li></ul>')
    assert "- ![p](https://example.org/p.png)" in card and "  - spec" in card  # its picture is the item's own


def test_a_heading_that_is_all_bold_loses_the_bold() -> None:
    out = md("<h2><strong>What is <b>it</b>?</strong></h2><h3>Partly <b>bold</b></h3><p><b>Lead</b> text</p>")
    assert "## What is it?" in out and "### Partly **bold**" in out and "**Lead** text" in out


def test_invisible_whitespace_noise_goes_outside_code_and_stays_inside() -> None:
    out = md(
        "<h2>Former employees\u200b</h2><p>A line ends here.<br></p><p>zero\u200bwidth inside a word</p>"
        "<pre><code>keep  \n\nthis\u200b \n</code></pre><p>\u200d</p><p>family \U0001f468\u200d\U0001f467 here</p>"
    )
    assert "## Former employees\n" in out and "A line ends here.\n\n" in out
    assert "zero\u200bwidth" in out  # between two letters it may be a word break: left alone
    assert "keep  \n\nthis\u200b" in out  # code is literal
    assert "\n\u200d\n" not in out and "\U0001f468\u200d\U0001f467" in out  # a joiner alone goes, in an emoji stays


def test_a_threads_posts_are_separated_by_a_rule() -> None:
    out = md(
        '<div class="thread"><article class="message message--post"><p>First post, asking a question.</p></article>'
        '<article class="message message--post"><p>A reply with an answer to it.</p></article>'
        '<article class="message message--post"><p>+1</p></article></div>'
        "<shreddit-comment><p>A comment on Reddit itself.</p></shreddit-comment>"
        "<shreddit-comment><p>And another one below it.</p></shreddit-comment>"
        '<div class="entry"><p>Plain paragraphs of an article.</p><p>Stay together as they were.</p></div>'
    )
    assert "asking a question.\n\n---\n\nA reply with" in out
    assert "+1" in out and "answer to it.\n\n+1" in out  # too short to be a post of its own
    assert "Reddit itself.\n\n---\n\nAnd another" in out
    assert "of an article.\n\nStay together" in out and out.count("---") == 2


def test_a_lazy_loaders_real_source_replaces_its_placeholder() -> None:
    # lazysizes: a blank GIF in src until the image scrolls into view, the picture in data-src.
    out = md('<p>x</p><img class="lazyload" src="/img/blank.gif" data-src="/shop/one.png?t=1" alt="One">')
    assert "![One](https://example.org/shop/one.png?t=1)" in out and "blank.gif" not in out
    # WP Fastest Cache names its attribute its own way.
    wpfc = md('<img src="/blank.gif" data-wpfc-original-src="/up/a-620x388.png" alt="A case study">')
    assert wpfc.strip() == "![A case study](https://example.org/up/a-620x388.png)"
    # No src at all and only a data-srcset (an image CDN's commas stay inside the URL).
    cdn = md('<img data-srcset="https://cdn.example/c_crop,h_300/a.png 300w, https://cdn.example/b.png 600w" alt="A">')
    assert cdn.strip() == "![A](https://cdn.example/c_crop,h_300/a.png)"
    # A flag, not a source: the placeholder stays what it was (an http URL the reader can follow).
    flag = md('<img src="/real.jpg" data-lazy="true" alt="R">')
    assert flag.strip() == "![R](https://example.org/real.jpg)"
    # A data: URI in data-src is no better than one in src: the image goes.
    assert md('<p>y</p><img src="" data-src="data:image/gif;base64,R0l" alt="z">').strip() == "y"


def test_an_image_without_alt_text_is_shown_once_and_a_repeated_icon_not_at_all() -> None:
    icon = '<img src="/i/check.svg">'
    out = md(
        f"<p>{icon} Fast</p><p>{icon} Light</p><p>{icon} Strong</p><p>{icon} Cheap</p>"
        '<img src="/slide-1.jpg"><img src="/slide-2.jpg"><img src="/slide-1.jpg"><img src="/slide-2.jpg">'
        '<img src="/w.png" alt="Wallet"><img src="/w.png">'
        '<p><a href="https://pinterest.com/pin/1"><img src="/pin.png"></a>a</p>'
        '<p><a href="https://pinterest.com/pin/2"><img src="/pin.png"></a>b</p>'
        '<p><a href="https://pinterest.com/pin/3"><img src="/pin.png"></a>c</p>'
        '<p><a href="https://pinterest.com/pin/4"><img src="/pin.png"></a>d</p>'
    )
    assert "check.svg" not in out and "pin.png" not in out and "pinterest" not in out  # decoration, links too
    assert out.count("slide-1.jpg") == 1 and out.count("slide-2.jpg") == 1  # a carousel's clones once
    assert out.count("w.png") == 1 and "![Wallet]" in out  # the copy with alt text is the one kept
    assert markdown_to_text(out).split() == ["Fast", "Light", "Strong", "Cheap", "a", "b", "c", "d"]
    # Images with alt text are never touched, however often they repeat (a smiley that says ":)").
    assert md('<img src="/s.gif" alt=":)">' * 4).count("s.gif") == 4


def test_list_items_and_headings_with_nothing_in_them_leave_no_bare_markers() -> None:
    out = md(
        "<h2>Top pick</h2><ul><li><i class='icon-fb'></i><span></span></li><li><svg><path d='M0'/></svg></li></ul>"
        "<h2><div class='share'></div></h2><p>Text.</p>"
        "<ul><li></li><li>kept</li><li><img src='/a.png' alt=''></li></ul>"
    )
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines == ["## Top pick", "Text.", "- kept", "- ![](https://example.org/a.png)"]
