"""scrape of an RSS or Atom feed and of an XML sitemap: read as text (feed.py, sitemap.py: parsed in child
processes), through the agent's dispatcher against the host's Chromium, on files an aiohttp server of this
module serves."""

from __future__ import annotations

import base64
import gzip
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from sandbox_image.scrape.loading import xml_reader
from tests.unit.browser_harness import BrowserDriver
from tests.unit.test_scrape_service import scraper, serve_routes  # noqa: F401 (scraper: a fixture)

RSS = """<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0"><channel><title>Fox Weekly</title><link>/</link><description>News about foxes</description>
<language>en-gb</language><lastBuildDate>Sun, 29 Nov 2026 12:00:00 GMT</lastBuildDate>
<image><url>/logo.png</url><title>Fox Weekly</title><link>/</link></image>
<item><title>Foxes and dogs</title><link>/posts/1</link><author>ann@example.org (Ann Writer)</author>
<pubDate>Sun, 29 Nov 2026 10:00:00 GMT</pubDate>
<description>&lt;p&gt;The &lt;b&gt;quick&lt;/b&gt; fox &lt;a href="/dogs"&gt;meets a dog&lt;/a&gt;.&lt;/p&gt;
&lt;script&gt;steal()&lt;/script&gt;&lt;img src="x" onerror="steal()"&gt;</description>
<enclosure url="/audio/1.mp3" length="1000" type="audio/mpeg"/></item>
<item><title>A den in winter</title><link>/posts/2</link><pubDate>Sat, 28 Nov 2026 09:00:00 GMT</pubDate>
<description>Dens are dug in autumn.</description></item>
</channel></rss>"""
ATOM = """<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Den notes</title><subtitle>Notes from the den</subtitle>
<link href="/den/"/><updated>2026-11-29T08:00:00Z</updated><author><name>Bo Keeper</name></author>
<entry><title>First note</title><link href="/den/1"/><updated>2026-11-29T08:00:00Z</updated>
<content type="html">&lt;h3&gt;Snow&lt;/h3&gt;&lt;ul&gt;&lt;li&gt;cold&lt;/li&gt;&lt;li&gt;white&lt;/li&gt;&lt;/ul&gt;
</content></entry>
</feed>"""
NOT_A_FEED = """<?xml version="1.0"?><catalog><book id="1"><title>Foxes</title></book></catalog>"""
BROKEN = "<rss version='2.0'><channel><title>Cut off"
SITEMAP = """<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>https://example.org/</loc><lastmod>2026-11-01</lastmod></url>
<url><loc>https://example.org/foxes</loc></url><url><loc>/relative/den</loc></url>
<url><loc>javascript:alert(1)</loc></url></urlset>"""
INDEX = """<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>https://example.org/sitemap-1.xml</loc><lastmod>2026-11-02T10:00:00+00:00</lastmod></sitemap>
</sitemapindex>"""
# A billion laughs: nine levels of ten entities each (10^9 "lol"s once expanded).
LAUGHS = (
    '<!DOCTYPE lolz [<!ENTITY lol0 "lol">'
    + "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
    + "]>"
)
BOMB = f'<?xml version="1.0"?>{LAUGHS}<urlset><url><loc>&lol9;</loc></url></urlset>'
BOMB_FEED = f'<?xml version="1.0"?>{LAUGHS}<rss version="2.0"><channel><title>&lol9;</title><item><title>x</title>'
BOMB_FEED += "</item></channel></rss>"


def _serve(body: str | bytes, ctype: str) -> Any:
    async def handler(_request: web.Request) -> web.Response:
        data = body.encode() if isinstance(body, str) else body
        return web.Response(body=data, headers={"Content-Type": ctype})

    return handler


LATIN_RSS = """<?xml version="1.0" encoding="iso-8859-1"?>
<rss version="2.0"><channel><title>Crème brûlée</title><link>/</link><description>Pâtisserie</description>
<item><title>Façon grand-mère</title><link>/posts/1</link><description>Une crème à la vanille.</description></item>
</channel></rss>"""
SJIS_RSS = """<?xml version="1.0" encoding="Shift_JIS"?>
<rss version="2.0"><channel><title>日本語のフィード</title><link>/</link><description>説明</description>
<item><title>最初の記事</title><link>/posts/1</link><description>本文はここにあります。</description></item>
</channel></rss>"""

ROUTES = {
    "/latin-rss": _serve(LATIN_RSS.encode("iso-8859-1"), "application/rss+xml"),
    "/sjis-rss": _serve(SJIS_RSS.encode("shift_jis"), "application/rss+xml; charset=shift_jis"),
    "/latin.xml.gz": _serve(gzip.compress(LATIN_RSS.encode("iso-8859-1")), "application/gzip"),
    "/rss": _serve(RSS, "application/rss+xml"),
    "/rss.xml": _serve(RSS, "text/xml"),
    "/atom": _serve(ATOM, "application/atom+xml"),
    "/catalog.xml": _serve(NOT_A_FEED, "application/xml"),
    "/broken": _serve(BROKEN, "application/rss+xml"),
    "/sitemap.xml": _serve(SITEMAP, "application/xml"),
    "/sitemap_index.xml": _serve(INDEX, "text/xml"),
    "/bomb.xml": _serve(BOMB, "application/xml"),
    "/bomb-feed": _serve(BOMB_FEED, "application/rss+xml"),
    # Gzipped files a browser downloads: a sitemap (as gzip, and as bytes named .gz), a feed, a gzip bomb
    # (9 MiB of zeros in a few KiB), and gzipped text that is neither.
    "/sitemap.xml.gz": _serve(gzip.compress(SITEMAP.encode()), "application/gzip"),
    "/s2.xml.gz": _serve(gzip.compress(SITEMAP.encode()), "application/octet-stream"),
    "/feed.gz": _serve(gzip.compress(RSS.encode()), "application/x-gzip"),
    "/zeros.gz": _serve(gzip.compress(b"<urlset>" + b"0" * (9 * 1024 * 1024)), "application/gzip"),
    "/notes.txt.gz": _serve(gzip.compress(b"just some notes"), "application/gzip"),
}


@pytest.fixture(scope="module")
async def feeds() -> AsyncIterator[str]:
    async with serve_routes(ROUTES) as base:
        yield base


async def scrape(driver: BrowserDriver, url: str, **params: Any) -> dict[str, Any]:
    return await driver.call("scrape.page", url=url, **params)


def test_which_xml_is_read_as_what() -> None:
    assert xml_reader("application/rss+xml", "text/plain", b"") == "feed"
    assert xml_reader("", "application/atom+xml", b"") == "feed"
    assert xml_reader("text/xml", "text/xml", b'<?xml version="1.0"?>\n<rss version="2.0">') == "feed"
    assert xml_reader("application/xml", "application/xml", b"<?xml version='1.0'?><feed xmlns='x'>") == "feed"
    assert xml_reader("text/xml", "", b"<rdf:RDF xmlns:rdf='x'>") == "feed"
    assert xml_reader("application/xml", "", b"<?xml version='1.0'?><urlset xmlns='x'>") == "sitemap"
    assert xml_reader("text/xml", "", b"<sitemapindex>") == "sitemap"
    assert xml_reader("text/xml", "text/xml", b"<?xml version='1.0'?><catalog><feeder/>") is None
    assert xml_reader("text/html", "text/html", b"<html><rss><urlset>") is None


async def test_an_rss_feed_reads_as_its_entries(scraper: BrowserDriver, feeds: str) -> None:  # noqa: F811
    for path in ("/rss", "/rss.xml"):  # as the feed type, and as plain XML the browser would show as a tree
        md = await scrape(scraper, f"{feeds}{path}")
        assert md["title"] == "Fox Weekly" and md["status"] == 200 and md["url"] == f"{feeds}{path}"
        assert md["contentType"] in ("application/rss+xml", "text/xml") and not md["mainContent"]
        text = md["markdown"]
        assert text.startswith(f"# [Fox Weekly]({feeds}/)\n\nNews about foxes\n\n## [Foxes and dogs]({feeds}/posts/1)")
        assert "2026-11-29T10:00:00Z · Ann Writer" in text and "The **quick** fox" in text
        assert f"[meets a dog]({feeds}/dogs)" in text and f"{feeds}/audio/1.mp3" in text
        assert "steal" not in text and "## [A den in winter]" in text and "Dens are dug in autumn." in text
        assert md["metadata"]["language"] == "en-gb" and md["metadata"]["description"] == "News about foxes"
        assert (
            md["metadata"]["image"] == f"{feeds}/logo.png" and md["metadata"]["modifiedDate"] == "2026-11-29T12:00:00Z"
        )

    links = await scrape(scraper, f"{feeds}/rss", format="links")
    assert links["links"] == [
        f"{feeds}/",
        f"{feeds}/posts/1",
        f"{feeds}/dogs",
        f"{feeds}/audio/1.mp3",
        f"{feeds}/posts/2",
    ]
    page = await scrape(scraper, f"{feeds}/rss", format="html")
    assert f'<h2><a href="{feeds}/posts/1">Foxes and dogs</a></h2>' in page["html"] and "<script" not in page["html"]
    assert "onerror" not in page["html"]
    whole = (await scrape(scraper, f"{feeds}/rss"))["markdown"]
    first = await scrape(scraper, f"{feeds}/rss", maxChars=120)
    rest = await scrape(scraper, f"{feeds}/rss", offset=first["nextOffset"])
    assert first["truncated"] and first["markdown"] + rest["markdown"] == whole and first["totalChars"] == len(whole)


async def test_a_feed_in_another_charset_reads_as_written(scraper: BrowserDriver, feeds: str) -> None:  # noqa: F811
    """The XML names its encoding; the browser hands the file over already decoded, and a gzipped one comes
    as the server's bytes: each is read in the encoding it is in."""
    for path, title, entry in (
        ("/latin-rss", "Crème brûlée", "## [Façon grand-mère]"),
        ("/latin.xml.gz", "Crème brûlée", "Une crème à la vanille."),
        ("/sjis-rss", "日本語のフィード", "本文はここにあります。"),
    ):
        md = await scrape(scraper, f"{feeds}{path}")
        assert md["title"] == title and entry in md["markdown"], md["markdown"][:200]


async def test_an_atom_feed(scraper: BrowserDriver, feeds: str) -> None:  # noqa: F811
    md = await scrape(scraper, f"{feeds}/atom")
    assert md["title"] == "Den notes" and md["metadata"]["author"] == "Bo Keeper"
    assert md["markdown"].startswith(
        f"# [Den notes]({feeds}/den/)\n\nNotes from the den\n\n## [First note]({feeds}/den/1)"
    )
    assert "### Snow" in md["markdown"] and "- cold\n- white" in md["markdown"]


async def test_what_is_not_a_feed_says_so(scraper: BrowserDriver, feeds: str) -> None:  # noqa: F811
    catalog = await scraper.error("scrape.page", url=f"{feeds}/catalog.xml")
    assert catalog.code.value == "UNSUPPORTED_CONTENT_TYPE" and catalog.details["contentType"] == "application/xml"
    broken = await scraper.error("scrape.page", url=f"{feeds}/broken")
    assert broken.code.value == "UNSUPPORTED_CONTENT_TYPE" and "could not be read as a feed" in broken.message
    assert broken.hint and broken.details["contentType"] == "application/rss+xml"
    bomb = await scrape(scraper, f"{feeds}/bomb-feed")  # a billion laughs: the entities are left unexpanded
    assert bomb["title"] == "&lol9;" and len(bomb["markdown"]) < 200
    # A picture of a feed is the browser's, as of any page.
    shot = await scrape(scraper, f"{feeds}/rss", format="screenshot")
    assert base64.b64decode(shot["screenshot"])[:8] == b"\x89PNG\r\n\x1a\n"


async def test_a_sitemap_reads_as_its_pages(scraper: BrowserDriver, feeds: str) -> None:  # noqa: F811
    host = feeds.removeprefix("http://")
    md = await scrape(scraper, f"{feeds}/sitemap.xml")
    assert md["title"] == f"Sitemap of {host}" and md["contentType"] == "application/xml" and not md["truncated"]
    assert md["markdown"] == (
        f"# Sitemap of {host}\n\n- <https://example.org/> 2026-11-01\n- <https://example.org/foxes>\n"
        f"- <{feeds}/relative/den>\n"
    )
    links = await scrape(scraper, f"{feeds}/sitemap.xml", format="links")
    assert links["links"] == ["https://example.org/", "https://example.org/foxes", f"{feeds}/relative/den"]
    index = await scrape(scraper, f"{feeds}/sitemap_index.xml", format="links")
    assert index["title"] == f"Sitemap index of {host}" and index["links"] == ["https://example.org/sitemap-1.xml"]
    # Entity expansion is the parser's to bound: the reader refuses, the agent is untouched.
    bomb = await scraper.error("scrape.page", url=f"{feeds}/bomb.xml")
    assert bomb.code.value == "UNSUPPORTED_CONTENT_TYPE" and "could not be read as a sitemap" in bomb.message


async def test_gzipped_sitemaps_and_feeds(scraper: BrowserDriver, feeds: str) -> None:  # noqa: F811
    for path in ("/sitemap.xml.gz", "/s2.xml.gz"):
        links = await scrape(scraper, f"{feeds}{path}", format="links")
        assert links["links"] == ["https://example.org/", "https://example.org/foxes", f"{feeds}/relative/den"], path
        assert links["title"].startswith("Sitemap of ")
    news = await scrape(scraper, f"{feeds}/feed.gz")
    assert news["title"] == "Fox Weekly" and "## [Foxes and dogs]" in news["markdown"]
    bomb = await scraper.error("scrape.page", url=f"{feeds}/zeros.gz")
    assert bomb.code.value == "PAGE_TOO_LARGE" and bomb.details["measured"] == "unpacked gzip file"
    notes = await scraper.error("scrape.page", url=f"{feeds}/notes.txt.gz")
    assert notes.code.value == "UNSUPPORTED_CONTENT_TYPE" and notes.details["contentType"] == "application/gzip"


async def test_a_feed_or_sitemap_in_a_tab_reads_as_scrape_reads_it(
    scraper: BrowserDriver,  # noqa: F811
    feeds: str,
    sid: str,
) -> None:
    """browser.scrape of a tab showing a feed or a sitemap (Chromium's XML viewer, or a feed type shown as text)
    answers what scrape answers for the same address, not the viewer's rendering or the raw XML."""
    for path in ("/rss", "/rss.xml", "/atom", "/sitemap.xml", "/sitemap_index.xml"):
        await scraper.call("browser.goto", sessionId=sid, url=f"{feeds}{path}")
        for fmt in ("markdown", "links"):
            tab = await scraper.call("browser.scrape", sessionId=sid, format=fmt)
            fresh = await scrape(scraper, f"{feeds}{path}", format=fmt)
            assert tab[fmt] == fresh[fmt] and tab["title"] == fresh["title"], (path, fmt, tab)
            assert tab["contentType"] == fresh["contentType"] and tab["url"] == f"{feeds}{path}"
    await scraper.call("browser.goto", sessionId=sid, url=f"{feeds}/catalog.xml")  # XML, neither: as before
    other = await scraper.error("browser.scrape", sessionId=sid)
    assert other.code.value == "UNSUPPORTED_CONTENT_TYPE"
