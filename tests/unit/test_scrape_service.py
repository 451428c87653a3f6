"""scrape.page through the agent's dispatcher against the real Chromium on this machine, on pages an
aiohttp server of this module serves: formats, waits, fallback, load failures, login state, and that
nothing is left open afterwards (seed 004 TC-01…TC-04; the MCP side is in the integration tests)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import re
import socket
import struct
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.scrape import MAX_CONTENT_BYTES, MAX_PAGE_BYTES, ScrapePageParams
from rpc.paging import cap_text, text_part
from rpc.sizes import json_size
from sandbox_image.browser.timeouts import Budget
from sandbox_image.scrape import frames, reading
from sandbox_image.scrape import service as scrape_service
from sandbox_image.scrape.output import cap_links
from tests.unit.browser_harness import BrowserDriver
from tests.unit.test_scrape_pdf import REPORT_PDF

PARA = "The quick brown fox jumps over the lazy dog while the reader keeps reading this sentence. " * 5
ARTICLE = f"""<!doctype html><html lang="en"><head><title>Fox news</title>
<meta name="description" content="All about foxes">
<meta name="author" content="Ann Writer">
<meta property="article:published_time" content="2026-11-01T10:00:00Z">
<link rel="canonical" href="/article">
<meta property="og:site_name" content="Fox Weekly"><meta property="og:image" content="/img/fox.jpg">
</head><body>
<nav><a href="/">Home</a> <a href="/about">About</a> <a href="/about">About again</a></nav>
<main><article><h1>Foxes and dogs</h1>
{"".join(f"<h2>Part {i}</h2><p>{PARA}</p>" for i in range(1, 9))}
<pre><code class="language-python">print("fox")</code></pre>
<table><tr><th>Animal</th><th>Speed</th></tr><tr><td>Fox</td><td>50</td></tr></table>
<p>See <a href="/more#x">more</a> and <a href="https://example.org/fox">elsewhere</a>.</p>
</article></main>
<footer>Footer links <a href="/about">About</a></footer>
</body></html>"""

TIMER = """<!doctype html><html><head><title>Timer</title></head><body><main><h1>Timer page</h1>
<p>Words that are here from the start and stay here for the whole life of the page.</p></main>
<script>setTimeout(() => { const p = document.createElement('p'); p.textContent = 'TIMER CONTENT ARRIVED';
document.querySelector('main').appendChild(p); }, 1500);</script></body></html>"""

LATE = """<!doctype html><html><head><title>Late</title></head><body><main><h1>Late page</h1>
<p>Words that are here from the start and stay here for the whole life of the page.</p></main>
<script>window.addEventListener('load', () => fetch('/slow-data').then(r => r.text()).then(t => {
const p = document.createElement('p'); p.textContent = t; document.querySelector('main').appendChild(p); }));
</script></body></html>"""

NAV_ONLY = """<!doctype html><html><head><title>Menu</title></head><body>
<nav><ul><li><a href="/a">Alpha</a></li><li><a href="/b">Beta</a></li><li><a href="/c">Gamma</a></li></ul></nav>
<footer><a href="/privacy">Privacy</a> <a href="/terms">Terms</a></footer></body></html>"""


# Frames: /framed holds /article (same origin) and /inner from the other origin (localhost instead of
# 127.0.0.1), which holds a srcdoc frame of its own; a hidden frame, a tracking pixel and a frame that never
# loads are not read. /frameset is a page that is nothing but frames.
FRAMED = """<!doctype html><html><head><title>Framed</title></head><body><h1>Framed page</h1>
<iframe src="/article" width="800" height="600"></iframe>
<iframe src="{other}/inner" width="600" height="300" class="embed"></iframe>
<iframe sandbox="" srcdoc="<p>Sandboxed frame words</p>" width="300" height="80"></iframe>
<iframe src="/secret" style="display:none"></iframe><iframe src="/secret" width="1" height="1"></iframe>
<iframe src="/never" width="300" height="100"></iframe></body></html>"""
INNER = """<!doctype html><html><head><title>Inner</title></head><body>
<p>Cross origin words from the other site, a whole sentence of them to read here.</p><a href="rel">relative</a>
<iframe srcdoc="<p>Nested srcdoc words</p>" width="300" height="100"></iframe></body></html>"""
FRAMESET = """<!doctype html><html><head><title>Frames</title></head><frameset cols="30%,70%">
<frame src="/nav-only"><frame src="/article"><noframes>Noframes text</noframes></frameset></html>"""


# What the page sees of the device it is shown on.
DEVICE = """<!doctype html><html><head><title>Device</title><meta name="viewport" content="width=device-width">
</head><body><main><h1>Device</h1><p id="seen"></p></main>
<script>document.getElementById("seen").textContent = [navigator.userAgent, "width " + innerWidth,
"touch " + matchMedia("(pointer: coarse)").matches].join(" | ");</script></body></html>"""


# A listing whose second half a "Load more" click adds: what a fresh load (scrape) never shows.
MORE = f"""<!doctype html><html lang="en"><head><title>Fox listing</title></head><body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<main><h1>Foxes, part one</h1><p>{PARA}</p><textarea id="note"></textarea><div id="later"></div>
<button id="more" onclick="document.getElementById('later').innerHTML =
'<h2>Foxes, part two</h2><p>Later words about the red fox, its den and its cubs, loaded on request. {PARA}</p>' +
'<a href=/fox/2>Second fox</a>'">Load more</button></main><footer>Footer words</footer></body></html>"""
# What the server was asked for and what the page's scripts are told, for scrape's `locale`.
LANGUAGE = """<!doctype html><html><head><title>Language</title></head><body><main><h1>Language</h1>
<p>asked {header}</p><p id="told"></p><p id="agent"></p></main><script>
document.getElementById("told").textContent =
  "told " + navigator.language + " | " + new Intl.NumberFormat().format(1234.5);
document.getElementById("agent").textContent = "agent " + navigator.userAgent;</script>
<p>sent {agent}</p></body></html>"""
# A product card whose price and reviews live in a web component's open shadow root (nested one deeper).
SHADOW = f"""<!doctype html><html lang="en"><head><title>Shadow shop</title></head><body><main>
<h1>Walnut desk</h1><p>{PARA}</p><product-card></product-card></main>
<script>
const card = document.querySelector("product-card").attachShadow({{mode: "open"}});
card.innerHTML = '<p class="price">Price 420 euros</p><review-list></review-list>';
const reviews = card.querySelector("review-list").attachShadow({{mode: "open"}});
reviews.innerHTML = '<p class="review">A fine desk, five stars</p><a class="review" href="/r/1">All reviews</a>';
</script></body></html>"""
# Links on both sides of a web component's open shadow roots (one nested), one of them twice, one with a fragment.
SHADOW_LINKS = """<!doctype html><html lang="en"><head><title>Shadow links</title></head><body>
<nav><a href="/first">First</a></nav><main><h1>Links in components</h1><link-bar></link-bar>
<p><a href="/last">Last</a></p></main>
<script>
const bar = document.querySelector("link-bar").attachShadow({mode: "open"});
bar.innerHTML = '<a href="/shadow/one#top">One</a> <a href="/first">First again</a> <deep-links></deep-links>';
bar.querySelector("deep-links").attachShadow({mode: "open"}).innerHTML = '<a href="shadow/two">Two</a>';
</script></body></html>"""
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def other_origin(request: web.Request) -> str:
    return f"http://localhost:{request.url.port}"


def html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, content_type="text/html", status=status)


async def slow_data(_request: web.Request) -> web.Response:
    await asyncio.sleep(0.7)
    return web.Response(text="SLOW DATA LOADED")


async def never(_request: web.Request) -> web.Response:
    await asyncio.sleep(60)
    return html("late")


async def show_cookie(request: web.Request) -> web.Response:
    return html(f"<title>Cookie</title><p>flavour={request.cookies.get('flavour', 'none')}</p>")


async def huge_streamed(request: web.Request) -> web.StreamResponse:
    """27 MB of HTML in chunks, with no Content-Length to say so up front (as a server that streams it)."""
    response = web.StreamResponse(headers={"Content-Type": "text/html"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    await response.write(b"<title>Streamed</title>")
    chunk = b"<p>many words in a paragraph</p>\n" * 8_000
    with contextlib.suppress(ConnectionError):  # the browser stops reading once it has seen enough
        for _ in range(100):
            await response.write(chunk)
        await response.write_eof()
    return response


ROUTES: dict[str, Any] = {
    "/article": lambda _r: html(ARTICLE),
    "/timer": lambda _r: html(TIMER),
    "/late": lambda _r: html(LATE),
    "/slow-data": slow_data,
    "/nav-only": lambda _r: html(NAV_ONLY),
    "/gone": lambda _r: html("<title>Gone</title><h1>404 Not Found</h1><p>No such page here.</p>", 404),
    "/pdf": lambda _r: web.Response(body=b"%PDF-1.4\n%%EOF\n", content_type="application/pdf"),
    "/report.pdf": lambda _r: web.Response(body=REPORT_PDF, content_type="application/pdf"),
    "/to-report": lambda _r: web.Response(status=302, headers={"Location": "/report.pdf"}),
    "/bytes/report.pdf": lambda _r: web.Response(  # a PDF the server only calls bytes, as a download
        body=REPORT_PDF, content_type="application/octet-stream", headers={"Content-Disposition": "attachment"}
    ),
    "/bytes/fake.pdf": lambda _r: web.Response(
        body=b"PK\x03\x04 not a pdf",
        content_type="application/octet-stream",
        headers={"Content-Disposition": "attachment"},
    ),
    "/text": lambda _r: web.Response(text="plain words\nsecond line", content_type="text/plain"),
    "/big": lambda _r: html("<title>Big</title><p>" + "x" * (MAX_PAGE_BYTES + 1024) + "</p>"),
    "/huge": lambda _r: html("<title>Huge</title>" + "<p>many words in a paragraph</p>\n" * 800_000),  # 27 MB
    "/huge-streamed": huge_streamed,
    "/never": never,
    "/alert": lambda _r: html("<title>Alert</title><script>alert('hi')</script><main><p>After the alert.</p></main>"),
    "/cookie": show_cookie,
    "/moved": lambda _r: web.Response(status=302, headers={"Location": "/article"}),
    "/framed": lambda r: html(FRAMED.format(other=other_origin(r))),
    "/inner": lambda _r: html(INNER),
    "/secret": lambda _r: html("<p>Secret frame words</p>"),
    "/frameset": lambda _r: html(FRAMESET),
    "/device": lambda _r: html(DEVICE),
    "/shadow": lambda _r: html(SHADOW),
    "/shadow-links": lambda _r: html(SHADOW_LINKS),
    "/language": lambda r: html(
        LANGUAGE.format(header=r.headers.get("Accept-Language", "none"), agent=r.headers.get("User-Agent", "none"))
    ),
    "/more": lambda _r: html(MORE),  # browser.scrape (test_browser_scrape): content a click adds
    "/pic.png": lambda _r: web.Response(body=base64.b64decode(PNG_1X1), content_type="image/png"),
    "/charset/{name}": lambda r: encoded(r.match_info["name"]),
}

CHARSETS = {  # a page in each, the charset named by the header or only by a <meta>
    "shift_jis": ("日本語のページ", "日本語の本文はここにあります。"),
    "gbk": ("中文页面", "这是一个用中文写的段落。"),
    "euc-kr": ("한국어 페이지", "한국어로 쓴 문단입니다."),
    "iso-8859-1": ("Café crème", "Une crème brûlée à la façon de grand-mère."),
    "meta-shift_jis": ("日本語のページ", "メタだけが文字コードを言います。"),
}


def encoded(name: str) -> web.Response:
    title, text = CHARSETS[name]
    charset = name.removeprefix("meta-")
    meta = f'<meta charset="{charset}">' if name.startswith("meta-") else ""
    page = f"<!doctype html><html><head>{meta}<title>{title}</title></head><body><main><h1>{title}</h1>"
    page += f"<p>{text}</p>" * 3 + "</main></body></html>"
    content_type = "text/html" + ("" if meta else f"; charset={charset}")
    return web.Response(body=page.encode(charset), headers={"Content-Type": content_type})


def _async(make: Any) -> Any:
    async def handler(request: web.Request) -> web.StreamResponse:
        return make(request)

    return handler


@contextlib.asynccontextmanager
async def serve_routes(routes: dict[str, Any]) -> AsyncIterator[str]:
    """An aiohttp server on 127.0.0.1 (a free port) answering GET on `routes`; its base URL."""
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_get(path, handler if asyncio.iscoroutinefunction(handler) else _async(handler))
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    finally:
        await runner.cleanup()


@pytest.fixture(scope="module")
async def pages() -> AsyncIterator[str]:
    async with serve_routes(ROUTES) as base:
        yield base


@pytest.fixture(scope="module")
def scraper(browser: BrowserDriver) -> BrowserDriver:
    scrape_service.register(browser.dispatcher, browser.service)
    return browser


async def scrape(driver: BrowserDriver, url: str, **params: Any) -> dict[str, Any]:
    return await driver.call("scrape.page", url=url, **params)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


async def test_markdown_html_links_and_metadata(scraper: BrowserDriver, pages: str) -> None:
    md = await scrape(scraper, f"{pages}/article")
    assert md["format"] == "markdown" and md["status"] == 200 and md["title"] == "Fox news"
    assert md["mainContent"] is True and md["fallback"] is False and md["truncated"] is False
    text = md["markdown"]
    assert "# Foxes and dogs" in text and "## Part 8" in text
    assert "```python" in text and "| Fox" in text
    assert f"({pages}/more#x)" in text  # links made absolute
    assert "Footer links" not in text and "About again" not in text  # only the main content
    assert md["metadata"] == {
        "description": "All about foxes",
        "language": "en",
        "canonicalUrl": f"{pages}/article",
        "publishedDate": "2026-11-01T10:00:00Z",
        "modifiedDate": None,
        "author": "Ann Writer",
        "siteName": "Fox Weekly",
        "image": f"{pages}/img/fox.jpg",
    }
    assert md["wait"] == "settled"

    full = await scrape(scraper, f"{pages}/article", onlyMainContent=False)
    assert "Footer links" in full["markdown"] and full["mainContent"] is False

    h = await scrape(scraper, f"{pages}/article", format="html")
    assert "<h1>Foxes and dogs</h1>" in h["html"] and "<footer" not in h["html"] and h["markdown"] is None

    links = (await scrape(scraper, f"{pages}/article", format="links"))["links"]
    assert links == [f"{pages}/", f"{pages}/about", f"{pages}/more", "https://example.org/fox"]  # no fragments


async def read_in_parts(driver: BrowserDriver, url: str, **params: Any) -> tuple[str, int]:
    """The whole text, read maxChars at a time from offset 0 on; and how many calls it took."""
    parts, offset = [], 0
    while True:
        got = await scrape(driver, url, offset=offset, **params)
        parts.append(got[params.get("format", "markdown")])
        assert len(parts[-1]) <= params["maxChars"] and got["truncated"] == (got["nextOffset"] is not None)
        if got["nextOffset"] is None:
            return "".join(parts), len(parts)
        offset = got["nextOffset"]


async def test_the_callers_selectors_choose_the_content(scraper: BrowserDriver, pages: str) -> None:
    heads = (await scrape(scraper, f"{pages}/article", includeTags=["h2", "table"]))["markdown"]
    assert "## Part 1" in heads and "| Fox" in heads and "quick brown fox" not in heads and "# Foxes" not in heads
    no_table = (await scrape(scraper, f"{pages}/article", excludeTags=["table"]))["markdown"]
    assert "## Part 8" in no_table and "| Fox" not in no_table
    links = (await scrape(scraper, f"{pages}/article", format="links", includeTags=["article"]))["links"]
    assert links == [f"{pages}/more", "https://example.org/fox"]  # not the menu's
    links = (await scrape(scraper, f"{pages}/article", format="links", excludeTags=["nav", "footer"]))["links"]
    assert links == [f"{pages}/more", "https://example.org/fox"]
    # The browser's CSS (a list in :is(), a case-insensitive attribute), and its verdict on one it cannot parse:
    # refused before the page loads, nothing left open.
    modern = await scrape(scraper, f"{pages}/article", includeTags=[":is(h1, table)", "[HREF$='FOX' i]"])
    assert (
        modern["markdown"].startswith("# Foxes and dogs")
        and "[elsewhere](https://example.org/fox)" in modern["markdown"]
        and "Part 1" not in modern["markdown"]
    )
    before = scraper.service.engine.open_counts()
    for field, selector in [("includeTags", "div["), ("excludeTags", "a >>> b")]:
        err = await scraper.error("scrape.page", url=f"{pages}/never", **{field: ["p", selector]})
        assert err.code.value == "INVALID_PARAMETER" and err.details["errors"][0]["field"] == field, err
        assert selector in err.message and err.hint
    assert scraper.service.engine.open_counts() == before


async def test_the_callers_selectors_reach_into_open_shadow_roots(scraper: BrowserDriver, pages: str) -> None:
    # Each selector matches in the document and in every open shadow root, as querySelectorAll on that root.
    chosen = (await scrape(scraper, f"{pages}/shadow", includeTags=[".price", ".review"]))["markdown"]
    assert chosen.split("\n\n") == ["Price 420 euros", "A fine desk, five stars", f"[All reviews]({pages}/r/1)\n"]
    left = (await scrape(scraper, f"{pages}/shadow", excludeTags=[".review"], onlyMainContent=False))["markdown"]
    assert "Price 420 euros" in left and "five stars" not in left and "All reviews" not in left
    links = await scrape(scraper, f"{pages}/shadow", format="links", includeTags=["a.review"])
    assert links["links"] == [f"{pages}/r/1"]


async def test_links_include_those_in_open_shadow_roots(scraper: BrowserDriver, pages: str) -> None:
    """format links read the page's HTML without its shadow trees, so a web component's links were missing
    (markdown had them): now in page order, absolute, without fragments, once each — as markdown shows them."""
    expected = [f"{pages}/first", f"{pages}/shadow/one", f"{pages}/shadow/two", f"{pages}/last"]
    assert (await scrape(scraper, f"{pages}/shadow-links", format="links"))["links"] == expected
    assert (await scrape(scraper, f"{pages}/shadow", format="links"))["links"] == [f"{pages}/r/1"]
    whole = (await scrape(scraper, f"{pages}/shadow-links", onlyMainContent=False))["markdown"]
    assert [link for link in expected if f"({link}" in whole] == expected


async def test_empty_selector_lists_read_the_page_as_without_them(scraper: BrowserDriver, pages: str) -> None:
    links = await scrape(scraper, f"{pages}/article", format="links", includeTags=[], excludeTags=[])
    assert links["links"] == (await scrape(scraper, f"{pages}/article", format="links"))["links"] != []
    md = await scrape(scraper, f"{pages}/article", includeTags=[])
    assert md["markdown"] == (await scrape(scraper, f"{pages}/article"))["markdown"] and md["mainContent"]


async def test_long_text_is_read_in_parts(scraper: BrowserDriver, pages: str) -> None:
    whole = await scrape(scraper, f"{pages}/article")
    assert whole["totalChars"] == len(whole["markdown"]) and whole["nextOffset"] is None
    text, calls = await read_in_parts(scraper, f"{pages}/article", maxChars=200)
    assert text == whole["markdown"] and calls >= 3
    page_html = (await scrape(scraper, f"{pages}/article", format="html"))["html"]
    assert (await read_in_parts(scraper, f"{pages}/article", format="html", maxChars=2500))[0] == page_html
    report = await scrape(scraper, f"{pages}/report.pdf")
    assert (await read_in_parts(scraper, f"{pages}/report.pdf", maxChars=20))[0] == report["markdown"]
    past = await scrape(scraper, f"{pages}/article", offset=10**6)
    assert past["markdown"] == "" and not past["truncated"] and past["totalChars"] == whole["totalChars"]


async def test_screenshots(scraper: BrowserDriver, pages: str) -> None:
    shot = await scrape(scraper, f"{pages}/article", format="screenshot")
    full = await scrape(scraper, f"{pages}/article", format="fullscreenshot")
    w1, h1 = png_size(base64.b64decode(shot["screenshot"]))
    w2, h2 = png_size(base64.b64decode(full["screenshot"]))
    assert (shot["width"], shot["height"]) == (w1, h1) and (full["width"], full["height"]) == (w2, h2)
    assert w1 == w2 and h2 > h1
    assert shot["markdown"] is None and shot["title"] == "Fox news"


# The wait tests read the whole page: they ask what the wait saw, and which blocks of a three-block toy page
# are main content is the trained models' call (a retrain may keep or drop a three-word line there).


async def test_mobile_reads_the_page_as_a_phone_shows_it(scraper: BrowserDriver, pages: str) -> None:
    desktop = (await scrape(scraper, f"{pages}/device", onlyMainContent=False))["markdown"]
    assert "width 1280" in desktop and "touch false" in desktop and "Mobile" not in desktop
    phone = (await scrape(scraper, f"{pages}/device", onlyMainContent=False, mobile=True))["markdown"]
    assert "width 412" in phone and "touch true" in phone and "Android" in phone and "Mobile Safari" in phone
    shot = await scrape(scraper, f"{pages}/device", format="screenshot", mobile=True)
    assert (shot["width"], shot["height"]) == (412, 839) == png_size(base64.b64decode(shot["screenshot"]))
    # The next plain call is a desktop again: nothing of the phone stays in the browser.
    assert "width 1280" in (await scrape(scraper, f"{pages}/device", onlyMainContent=False))["markdown"]


async def test_locale_is_the_language_asked_for_and_reported(scraper: BrowserDriver, pages: str) -> None:
    german = (await scrape(scraper, f"{pages}/language", onlyMainContent=False, locale="de-DE"))["markdown"]
    assert "asked de-DE" in german and "told de-DE | 1.234,5" in german
    french = (await scrape(scraper, f"{pages}/language", onlyMainContent=False, locale="fr", mobile=True))["markdown"]
    assert "asked fr" in french and "told fr | 1" in french and "234,5" in french  # French groups with a space
    # The next plain call is the browser's own language again.
    plain = (await scrape(scraper, f"{pages}/language", onlyMainContent=False))["markdown"]
    assert "asked en-US" in plain and "told en-US | 1,234.5" in plain
    for bad in ("german", "de_DE", "de-DE-x", "d", ""):
        err = await scraper.error("scrape.page", url=f"{pages}/language", locale=bad)
        assert err.code.value == "INVALID_PARAMETER" and err.details["errors"][0]["field"] == "locale", bad


async def test_user_agent_is_the_one_sent_and_reported(scraper: BrowserDriver, pages: str) -> None:
    bot = "ExampleBot/2.1 (+https://example.org/bot)"
    for mobile in (False, True):  # the caller's, over the browser's own and over a phone's
        md = await scrape(scraper, f"{pages}/language", onlyMainContent=False, userAgent=bot, mobile=mobile)
        assert f"sent {bot}" in md["markdown"] and f"agent {bot}" in md["markdown"], md["markdown"]
    plain = (await scrape(scraper, f"{pages}/language", onlyMainContent=False))["markdown"]
    assert "Chrome/" in plain and bot not in plain
    for bad in ("a\r\nX-Injected: 1", "", "é" * 3, "x" * 513):
        err = await scraper.error("scrape.page", url=f"{pages}/language", userAgent=bad)
        assert err.code.value == "INVALID_PARAMETER" and err.details["errors"][0]["field"] == "userAgent", bad


async def test_fixed_wait_skips_the_smart_wait(scraper: BrowserDriver, pages: str) -> None:
    short = await scrape(scraper, f"{pages}/timer", waitFor=200, onlyMainContent=False)
    assert short["wait"] == "fixed" and "TIMER CONTENT ARRIVED" not in short["markdown"]
    long = await scrape(scraper, f"{pages}/timer", waitFor=2500, onlyMainContent=False)
    assert long["wait"] == "fixed" and "TIMER CONTENT ARRIVED" in long["markdown"]


async def test_smart_wait_sees_what_a_script_adds_after_load(scraper: BrowserDriver, pages: str) -> None:
    late = await scrape(scraper, f"{pages}/late", onlyMainContent=False)
    assert late["wait"] == "settled" and "SLOW DATA LOADED" in late["markdown"]


async def test_empty_main_content_falls_back_to_the_whole_page(scraper: BrowserDriver, pages: str) -> None:
    out = await scrape(scraper, f"{pages}/nav-only")
    assert out["fallback"] is True and out["mainContent"] is False
    assert "Gamma" in out["markdown"] and "Terms" in out["markdown"]


async def test_the_final_url_is_after_redirects(scraper: BrowserDriver, pages: str) -> None:
    out = await scrape(scraper, f"{pages}/moved", format="links")
    assert out["url"] == f"{pages}/article" and out["status"] == 200 and out["title"] == "Fox news"


async def test_a_page_that_navigates_while_it_is_read_is_read_again(
    scraper: BrowserDriver, pages: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The page goes on to another document in the middle of the read (as a late redirect or a
    # reload does): Playwright's "Execution context was destroyed" comes from the real browser here,
    # and the scrape reads the document the page went on to instead of failing.
    real_extract = reading.extract_page
    calls: list[str] = []

    async def extract_during_a_navigation(page: Any, **kwargs: Any) -> Any:
        calls.append(page.url)
        if len(calls) == 1:
            await page.evaluate("() => new Promise(() => { location.href = '/article'; })")
        return await real_extract(page, **kwargs)

    monkeypatch.setattr(reading, "extract_page", extract_during_a_navigation)
    out = await scrape(scraper, f"{pages}/timer", waitFor=100)
    assert calls == [f"{pages}/timer", f"{pages}/article"]
    assert out["url"] == f"{pages}/article" and out["title"] == "Fox news" and "# Foxes and dogs" in out["markdown"]


async def test_a_page_that_never_stops_navigating_fails_cleanly(
    scraper: BrowserDriver, pages: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def always_navigating(page: Any, **_kwargs: Any) -> Any:
        await page.evaluate("() => new Promise(() => { location.href = '/article?n=' + Math.random(); })")

    monkeypatch.setattr(reading, "extract_page", always_navigating)
    with pytest.raises(BoxwrightError) as caught:
        await scrape(scraper, f"{pages}/article", waitFor=100)
    assert caught.value.code == "EXECUTION_ERROR" and "kept going on to other documents" in caught.value.message
    assert "waitFor" in (caught.value.hint or "") and caught.value.details["reads"] == 3


async def test_a_renderer_that_dies_while_the_page_is_read_is_page_crashed(
    scraper: BrowserDriver, pages: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of memory mid-read, Playwright says "Target crashed": that was EXECUTION_ERROR ("see details")."""

    async def crash(page: Any, **_kwargs: Any) -> Any:
        cdp = await page.context.new_cdp_session(page)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(cdp.send("Page.crash"), 1)
        await page.evaluate("1")  # "Target crashed"

    monkeypatch.setattr(reading, "extract_page", crash)
    with pytest.raises(BoxwrightError) as caught:
        await scrape(scraper, f"{pages}/article")
    assert caught.value.code == "PAGE_CRASHED" and "scrape again" in (caught.value.hint or ""), caught.value


async def test_frames_are_read_in_place_when_asked(scraper: BrowserDriver, pages: str) -> None:
    other = pages.replace("127.0.0.1", "localhost")
    plain = await scrape(scraper, f"{pages}/framed", onlyMainContent=False, waitFor=500)
    assert "Framed page" in plain["markdown"] and "Foxes and dogs" not in plain["markdown"]
    assert plain["iframes"] is None

    full = await scrape(scraper, f"{pages}/framed", onlyMainContent=False, waitFor=500, includeIframes=True)
    text = full["markdown"]
    assert full["iframes"] == 4  # /article, /inner and the srcdoc inside it, a frame without scripts
    assert text.index("Framed page") < text.index("# Foxes and dogs") < text.index("Cross origin words")
    assert "## Part 8" in text and "Nested srcdoc words" in text and "Sandboxed frame words" in text
    assert f"({pages}/more#x)" in text and f"({other}/rel)" in text  # against each frame's own address
    assert "Secret frame words" not in text  # hidden, and a 1x1 pixel

    main = await scrape(scraper, f"{pages}/framed", waitFor=500, includeIframes=True)
    assert "## Part 8" in main["markdown"] and main["iframes"] == 4

    page_html = await scrape(
        scraper, f"{pages}/framed", format="html", onlyMainContent=False, waitFor=500, includeIframes=True
    )
    assert f'href="{other}/rel"' in page_html["html"] and f'src="{pages}/article"' not in page_html["html"]
    assert re.search(r"<div class=\"embed\">\s*<p>Cross origin words", page_html["html"]), page_html["html"]

    links = await scrape(scraper, f"{pages}/framed", format="links", waitFor=500, includeIframes=True)
    assert f"{pages}/more" in links["links"] and f"{other}/rel" in links["links"] and links["iframes"] == 4
    assert (await scrape(scraper, f"{pages}/framed", format="links", waitFor=500))["links"] == []


async def test_frames_are_read_within_their_bounds(
    scraper: BrowserDriver, pages: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(frames, "MAX_FRAMES", 1)
    one = await scrape(scraper, f"{pages}/framed", onlyMainContent=False, waitFor=500, includeIframes=True)
    assert one["iframes"] == 1 and "## Part 8" in one["markdown"] and "Cross origin words" not in one["markdown"]
    monkeypatch.setattr(frames, "MAX_FRAMES", 20)
    monkeypatch.setattr(frames, "MAX_PAGE_BYTES", 4200)  # room for the page and /inner, not for /article too
    small = await scrape(scraper, f"{pages}/framed", onlyMainContent=False, waitFor=500, includeIframes=True)
    assert "Foxes and dogs" not in small["markdown"] and "Cross origin words" in small["markdown"]
    assert small["iframes"] == 3  # /inner and its srcdoc frame, the frame without scripts


async def test_a_frameset_page_reads_as_its_frames(scraper: BrowserDriver, pages: str) -> None:
    out = await scrape(scraper, f"{pages}/frameset", onlyMainContent=False, includeIframes=True)
    assert out["iframes"] == 2 and out["title"] == "Frames"
    assert out["markdown"].index("Gamma") < out["markdown"].index("## Part 8")
    assert "Noframes text" not in out["markdown"]
    main = await scrape(scraper, f"{pages}/frameset", includeIframes=True)
    assert "## Part 8" in main["markdown"]
    # A frameset has nothing to read but its frames: read without being asked.
    unasked = await scrape(scraper, f"{pages}/frameset")
    assert unasked["markdown"] == main["markdown"] and unasked["iframes"] == 2
    assert f"{pages}/more" in (await scrape(scraper, f"{pages}/frameset", format="links"))["links"]


@pytest.mark.parametrize("name", sorted(CHARSETS))
async def test_a_page_in_any_charset_reads_as_the_browser_shows_it(
    scraper: BrowserDriver, pages: str, name: str
) -> None:
    """Chromium hands the document over already decoded (UTF-8) whatever the server sent: read as such, a
    Shift_JIS, GBK or EUC-KR page comes out as it reads, not decoded a second time into nonsense."""
    title, text = CHARSETS[name]
    for fmt in ("markdown", "html"):
        page = await scrape(scraper, f"{pages}/charset/{name}", format=fmt)
        assert page["title"] == title and text in page[fmt], page[fmt][:300]


async def test_http_errors_are_returned_with_the_page(scraper: BrowserDriver, pages: str) -> None:
    out = await scrape(scraper, f"{pages}/gone")
    assert out["status"] == 404 and "No such page" in out["markdown"]


async def test_text_and_dialogs(scraper: BrowserDriver, pages: str) -> None:
    text = await scrape(scraper, f"{pages}/text")
    assert text["contentType"] == "text/plain" and "plain words\nsecond line" in text["markdown"]
    alert = await scrape(scraper, f"{pages}/alert", timeoutMs=5000)
    assert "After the alert." in alert["markdown"]


async def test_a_timeout_names_the_callers_timeout(scraper: BrowserDriver, pages: str) -> None:
    """The caller gave 2000 ms: the error says so (not only the part of it the load had)."""
    err = await scraper.error("scrape.page", url=f"{pages}/never", timeoutMs=2000)
    assert err.code.value == "NAVIGATION_TIMEOUT" and err.details["timeoutMs"] == 2000
    assert 0 < err.details["loadMs"] < 2000 and "the call's timeoutMs is 2000 ms" in err.message


def test_a_crash_is_the_pages_not_a_tabs() -> None:
    """A scrape's caller has no tab: the tab's wording ("the page in tab_1 … navigate again") is replaced."""
    params = ScrapePageParams(url="http://127.0.0.1:1/x?token=secret")
    crashed = BoxwrightError(ErrorCode.PAGE_CRASHED, "the page in tab_1 crashed", details={"tabId": "tab_1"})
    said = scrape_service._as_a_scrape(crashed, params, Budget.of(Deadline.after(30), 30_000))
    assert said.code is ErrorCode.PAGE_CRASHED and "tab" not in said.message and "tabId" not in said.details
    assert said.hint and "scrape it again" in said.hint and "secret" not in said.message


async def test_a_page_far_too_large_is_refused_before_it_is_rendered(scraper: BrowserDriver, pages: str) -> None:
    """Its Content-Length says so as the answer starts: refused then, in every format — the renderer
    given 27 MB of HTML ran out of memory (PAGE_CRASHED after 13 s in the sandbox)."""
    for fmt in ("markdown", "screenshot"):
        started = time.monotonic()
        err = await scraper.error("scrape.page", url=f"{pages}/huge", format=fmt, timeoutMs=30_000)
        assert err.code.value == "PAGE_TOO_LARGE" and err.details["bytes"] > 20_000_000, err
        assert time.monotonic() - started < 5


async def test_a_page_far_too_large_without_a_length_is_stopped_as_it_arrives(
    scraper: BrowserDriver, pages: str
) -> None:
    """No Content-Length (chunked): its bytes are counted as they come and the load stopped past the cap — it
    was rendered whole before and ran the sandbox's renderer out of memory (PAGE_CRASHED). The session stays
    usable afterwards."""
    for fmt in ("markdown", "screenshot"):
        err = await scraper.error("scrape.page", url=f"{pages}/huge-streamed", format=fmt, timeoutMs=30_000)
        assert err.code.value == "PAGE_TOO_LARGE", err
        assert MAX_PAGE_BYTES < err.details["bytes"] < 27_000_000 and err.details["measured"] == "HTML as it arrived"
    assert (await scrape(scraper, f"{pages}/article"))["title"] == "Fox news"


@pytest.mark.parametrize(
    ("path", "code", "params"),
    [
        ("/pdf", "UNSUPPORTED_CONTENT_TYPE", {}),
        ("/big", "PAGE_TOO_LARGE", {}),
        ("/never", "NAVIGATION_TIMEOUT", {"timeoutMs": 2000}),
    ],
)
async def test_pages_that_cannot_be_read(
    scraper: BrowserDriver, pages: str, path: str, code: str, params: dict[str, Any]
) -> None:
    err = await scraper.error("scrape.page", url=f"{pages}{path}", **params)
    assert err.code.value == code and err.hint, err


async def test_a_pdf_can_still_be_seen(scraper: BrowserDriver, pages: str) -> None:
    """What UNSUPPORTED_CONTENT_TYPE's hint promises: the screenshot formats show what the browser displays."""
    shot = await scrape(scraper, f"{pages}/pdf", format="screenshot")
    assert shot["contentType"] == "application/pdf" and png_size(base64.b64decode(shot["screenshot"]))[0] > 0


async def test_a_pdf_is_read_as_text(scraper: BrowserDriver, pages: str) -> None:
    md = await scrape(scraper, f"{pages}/to-report")
    assert md["url"] == f"{pages}/report.pdf" and md["status"] == 200 and md["contentType"] == "application/pdf"
    assert md["title"] == "Fox report" and md["markdown"] == "# Fox report\n\nFoxes run fast.\n\nDogs sleep late.\n"
    stated = {k: v for k, v in md["metadata"].items() if v is not None}
    assert stated == {"author": "Ann Writer", "publishedDate": "2026-11-01T10:00:00+00:00", "language": "en-GB"}
    assert not md["mainContent"] and not md["truncated"]
    page_html = (await scrape(scraper, f"{pages}/report.pdf", format="html"))["html"]
    assert '<section data-page="2"><p>Dogs sleep late.</p></section>' in page_html
    assert (await scrape(scraper, f"{pages}/report.pdf", format="links"))["links"] == ["https://example.org/fox"]
    bytes_md = await scrape(scraper, f"{pages}/bytes/report.pdf")
    assert bytes_md["markdown"] == md["markdown"] and bytes_md["contentType"] == "application/pdf"
    fake = await scraper.error("scrape.page", url=f"{pages}/bytes/fake.pdf")
    assert fake.code.value == "UNSUPPORTED_CONTENT_TYPE" and fake.details["contentType"] == "application/octet-stream"


async def test_unreachable_host(scraper: BrowserDriver) -> None:
    with socket.socket() as s:  # a port nothing listens on (bound, never listening)
        s.bind(("127.0.0.1", 0))
        err = await scraper.error("scrape.page", url=f"http://127.0.0.1:{s.getsockname()[1]}/")
    assert err.code.value == "HOST_UNREACHABLE" and "network mode" in err.hint
    assert err.details["netError"] == "ERR_CONNECTION_REFUSED"


async def test_login_state_comes_in_and_does_not_stay(scraper: BrowserDriver, pages: str) -> None:
    cookie = {"name": "flavour", "value": "oatmeal", "domain": "127.0.0.1", "path": "/", "expires": -1,
              "httpOnly": False, "secure": False, "sameSite": "Lax"}  # fmt: skip
    state = {"cookies": [cookie], "origins": []}
    assert "flavour=oatmeal" in (await scrape(scraper, f"{pages}/cookie", storageState=state))["markdown"]
    assert "flavour=none" in (await scrape(scraper, f"{pages}/cookie"))["markdown"]


async def test_nothing_is_left_open(scraper: BrowserDriver, pages: str) -> None:
    await scrape(scraper, f"{pages}/article")  # the browser is up
    before = scraper.service.engine.open_counts()
    sessions = set(scraper.service.sessions.sessions)
    for path, params in [("/article", {}), ("/pdf", {}), ("/report.pdf", {}), ("/never", {"timeoutMs": 1000}),
                         ("/alert", {})] * 3:  # fmt: skip
        with contextlib.suppress(BoxwrightError):  # failures are part of the point
            await scrape(scraper, f"{pages}{path}", **params)
    # Cancelled mid-load (the MCP client gave up): cleaned up all the same.
    task = asyncio.ensure_future(scrape(scraper, f"{pages}/never", timeoutMs=30000))
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.3)
    assert scraper.service.engine.open_counts() == before
    assert set(scraper.service.sessions.sessions) == sessions


def test_text_parts_add_up_to_the_text() -> None:
    lines = "".join(f"line {i} " + "word " * (i % 7) + "\n" for i in range(400))
    assert text_part(lines) == text_part(lines, 0, None)
    whole = text_part(lines)
    assert (whole.text, whole.truncated, whole.next_offset, whole.total) == (lines, False, None, len(lines))
    for max_chars, text in [(100, lines), (100, "x" * 950), (7, lines)]:
        parts, offset = [], 0
        while True:
            part = text_part(text, offset, max_chars)
            assert 0 < len(part.text) <= max_chars and part.total == len(text)
            parts.append(part.text)
            if part.next_offset is None:
                break
            assert part.truncated and part.next_offset == offset + len(part.text)
            if max_chars == 100 and text is lines:
                assert part.text.endswith("\n")  # cut at a line end when there is one in its last half
            offset = part.next_offset
        assert "".join(parts) == text
    assert text_part(lines, len(lines) + 5) == text_part(lines, len(lines)) == type(whole)("", False, None, len(lines))
    huge = "é\n" * MAX_CONTENT_BYTES  # 4 MiB as JSON: cut by the byte cap, read on all the same
    parts, offset = [], 0
    while offset is not None:
        part = text_part(huge, offset)
        assert json_size(part.text) <= MAX_CONTENT_BYTES and part.text.endswith("\n")
        parts.append(part.text)
        offset = part.next_offset
    assert len(parts) >= 4 and "".join(parts) == huge


def test_caps_fit_one_message() -> None:
    quotes = '"' * (2 * MAX_CONTENT_BYTES)
    cut, truncated = cap_text(quotes)
    assert truncated and json_size(cut) <= MAX_CONTENT_BYTES
    lines = "line\n" * 1000
    assert cap_text(lines) == (lines, False)
    kept, truncated = cap_links([f"https://example.org/{i}" for i in range(20_000)])
    assert truncated and len(kept) == 10_000


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("net::ERR_NAME_NOT_RESOLVED at http://nowhere.invalid/", "DNS_FAILURE"),
        ("net::ERR_CONNECTION_REFUSED at http://127.0.0.1:1/", "HOST_UNREACHABLE"),
        ("net::ERR_ADDRESS_UNREACHABLE at http://10.0.0.1/", "HOST_UNREACHABLE"),
        ("net::ERR_CERT_AUTHORITY_INVALID at https://self-signed/", "TLS_ERROR"),
        ("net::ERR_SSL_PROTOCOL_ERROR at https://x/", "TLS_ERROR"),
        ("net::ERR_UNSAFE_PORT at http://x:1/", "NAVIGATION_FAILED"),
        ("Download is starting", "UNSUPPORTED_CONTENT_TYPE"),
    ],
)
def test_every_load_failure_has_its_code(message: str, code: str) -> None:
    from sandbox_image.scrape.loading import failed

    err = failed("https://user:secret@example.org/x", message, "markdown", None)
    assert err.code.value == code and err.hint
    assert "secret" not in err.message and "secret" not in str(err.details)


async def test_http_auth_is_given_to_its_site_only(scraper: BrowserDriver, caplog: pytest.LogCaptureFixture) -> None:
    """httpAuth answers the site's own challenge — the page, and a PDF fetched again — and no other origin's,
    not even after a redirect there (127.0.0.1 and localhost on one port are two origins); the password
    appears in no result and no log line."""
    password = "s3cret-pw-77"
    expected = "Basic " + base64.b64encode(f"ada:{password}".encode()).decode()
    seen: list[tuple[str, str | None]] = []

    def locked(request: web.Request) -> web.Response | None:
        seen.append((request.host.split(":")[0], request.headers.get("Authorization")))
        if request.headers.get("Authorization") == expected:
            return None
        return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="staging"'},
                            text="<title>Locked</title><h1>Locked out</h1>", content_type="text/html")  # fmt: skip

    async def private(request: web.Request) -> web.Response:
        staging = ARTICLE.replace("Foxes and dogs", "Staging notes")
        return locked(request) or web.Response(text=staging, content_type="text/html")

    async def private_pdf(request: web.Request) -> web.Response:
        return locked(request) or web.Response(body=REPORT_PDF, content_type="application/pdf")

    async def elsewhere(request: web.Request) -> web.Response:
        raise web.HTTPFound(f"http://localhost:{request.url.port}/private")

    caplog.set_level("DEBUG")
    async with serve_routes({"/private": private, "/private.pdf": private_pdf, "/elsewhere": elsewhere}) as base:
        auth = {"username": "ada", "password": password}
        shut = await scraper.error("scrape.page", url=f"{base}/private")  # Chromium gives up on the challenge
        assert shut.code.value == "NAVIGATION_FAILED" and "username and password" in shut.message
        assert "httpAuth" in (shut.hint or "") and shut.details["netError"] == "ERR_INVALID_AUTH_CREDENTIALS"
        opened = await scrape(scraper, f"{base}/private", httpAuth=auth)
        assert opened["status"] == 200 and "# Staging notes" in opened["markdown"]
        pdf = await scrape(scraper, f"{base}/private.pdf", httpAuth=auth)
        assert pdf["contentType"] == "application/pdf" and "Foxes run fast." in pdf["markdown"]
        wrong = await scrape(scraper, f"{base}/private", httpAuth={**auth, "password": "nope"})
        assert wrong["status"] == 401 and "Locked out" in wrong["markdown"]  # the site's own answer
        seen.clear()
        moved = await scraper.error("scrape.page", url=f"{base}/elsewhere", httpAuth=auth)  # for 127.0.0.1 only
        assert moved.details["netError"] == "ERR_INVALID_AUTH_CREDENTIALS"
        assert ("localhost", None) in seen and all(given is None for host, given in seen if host == "localhost"), seen
        # A session of the browser tools: the site is named, and listed — never the credentials.
        listed = await scraper.call("browser.sessions", action="create", sessionId="staging",
                                    httpAuth={**auth, "origin": base + "/"})  # fmt: skip
        try:
            [info] = [s for s in listed["sessions"] if s["sessionId"] == "staging"]
            assert info["httpAuthOrigin"] == base and password not in str(listed)
            went = await scraper.call("browser.goto", sessionId="staging", url=f"{base}/private")
            assert went["status"] == 200 and went["title"] == "Fox news"
            plain = await scraper.error("browser.goto", url=f"{base}/private")  # the default session has none
            assert plain.code.value == "NAVIGATION_FAILED" and f"origin: '{base}'" in (plain.hint or ""), plain.hint
        finally:
            await scraper.call("browser.sessions", action="close", sessionId="staging")
        assert password not in str([opened, pdf, wrong, moved.message, moved.details]) and password not in caplog.text
    for bad, field in (({**auth, "origin": "https://a.example/path"}, "httpAuth.origin"),
                       ({**auth, "origin": "ftp://a.example"}, "httpAuth.origin"),
                       ({"username": "ada"}, "httpAuth.password")):  # fmt: skip
        err = await scraper.error("scrape.page", url="http://127.0.0.1:9/", httpAuth=bad)
        assert err.code.value == "INVALID_PARAMETER" and [e["field"] for e in err.details["errors"]] == [field]
    unnamed = await scraper.error("browser.sessions", action="create", httpAuth=auth)
    assert unnamed.code.value == "INVALID_PARAMETER" and "origin" in unnamed.message
    assert password not in unnamed.message + str(unnamed.details)


async def test_an_extraction_whose_call_went_stops_at_its_next_check() -> None:
    """A worker thread cannot be cancelled: a scrape that timed out left its extraction running for
    minutes, a core busy with nobody waiting."""
    import threading

    from sandbox_image.scrape import stopping

    ended = threading.Event()
    checks = 0

    def slow_extraction() -> None:
        nonlocal checks
        try:
            for _ in range(600):  # a minute, in steps
                stopping.check()
                checks += 1
                time.sleep(0.1)
        finally:
            ended.set()

    call = asyncio.ensure_future(stopping.in_thread(slow_extraction))
    await asyncio.sleep(0.5)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert await asyncio.to_thread(ended.wait, 2) and checks < 20
    stopping.check()  # the caller's own context is not stopped
    assert await stopping.in_thread(lambda: 42) == 42
