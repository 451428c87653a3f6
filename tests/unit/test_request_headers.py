"""The caller's request headers (sandbox_image/browser/headers.py) against the real Chromium on this machine:
what two servers of the test's own receive — the page's site, and another site (another port: another
origin) that the page loads a picture from and redirects to.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from pydantic import ValidationError

from host.readings import key_of
from rpc.errors import ErrorCode
from rpc.models.browser import ContextOptions, SessionsParams
from rpc.models.scrape import ScrapeRequest
from sandbox_image import browser as browser_feature
from sandbox_image.browser import headers
from sandbox_image.config import SandboxSettings
from sandbox_image.dispatcher import Dispatcher
from sandbox_image.scrape import service as scrape_service
from tests.integration.assets.scrape_site import make_pdf
from tests.unit.browser_harness import CHROMIUM, BrowserDriver
from tests.unit.test_scrape_service import PNG_1X1, html

TOKEN = "Bearer t0k-3f9a"
GIVEN = {"Authorization": TOKEN, "X-Tenant": "acme", "Cookie": "given=2"}
WATCHED = ("authorization", "x-tenant", "cookie")
REPORT = make_pdf("Orders report", ["Forty orders shipped.", "Two returned."], "https://example.org/")

# The site's page: its own picture, another site's, and a POST to its own API whose answer it shows.
PAGE = """<!doctype html><title>Orders</title><main><h1>Orders</h1><p id="api">waiting</p>
<img src="/pic.png" alt="ours"><img src="{other}/pix.png" alt="theirs"><p id="jar"></p></main>
<script>fetch("/api", {{method: "POST", body: "hello"}}).then(r => r.text()).then(t => {{
  document.getElementById("api").textContent = t;
  document.getElementById("jar").textContent = "jar: " + document.cookie;
}});</script>"""


@dataclass
class Seen:
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)  # (site, path, watched headers)

    def of(self, site: str, path: str) -> list[dict[str, str]]:
        return [h for s, p, h in self.requests if (s, p) == (site, path)]


@dataclass
class Sites:
    base: str
    other: str
    seen: Seen


async def _serve(name: str, seen: Seen, routes: dict[str, Any]) -> tuple[web.AppRunner, str]:
    async def handle(request: web.Request) -> web.StreamResponse:
        watched = {k.lower(): v for k, v in request.headers.items() if k.lower() in WATCHED}
        seen.requests.append((name, request.path, watched))
        make = routes.get(request.path)
        return await make(request) if make is not None else web.Response(status=404)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]


@pytest.fixture(scope="module")
async def sites() -> AsyncIterator[Sites]:
    seen = Seen()
    png = base64.b64decode(PNG_1X1)
    other_runner, other = await _serve(
        "other",
        seen,
        {
            "/pix.png": _const(web.Response(body=png, content_type="image/png")),
            "/landed": _const(html("<title>Elsewhere</title><main><p>Another site's page.</p></main>")),
            "/report.pdf": _const(web.Response(body=REPORT, content_type="application/pdf")),
        },
    )

    async def page(_r: web.Request) -> web.Response:
        answer = html(PAGE.format(other=other))
        answer.set_cookie("jar", "1")
        return answer

    async def api(r: web.Request) -> web.Response:
        return web.Response(text=f"got {await r.text()} for {r.headers.get('X-Tenant', 'nobody')}")

    async def packed(_r: web.Request) -> web.Response:
        answer = html("<title>Packed</title><main><p>" + "A compressed paragraph of text. " * 200 + "</p></main>")
        answer.enable_compression(web.ContentCoding.gzip)
        return answer

    async def report(r: web.Request) -> web.Response:  # a PDF behind the token: fetched again outside the page
        if r.headers.get("Authorization") != TOKEN:
            return html("<title>Sign in</title><p>Members only.</p>", status=401)
        return web.Response(body=REPORT, content_type="application/pdf")

    routes = {
        "/page": page,
        "/report.pdf": report,
        "/moved.pdf": _redirect("/report.pdf"),
        "/elsewhere.pdf": _redirect(f"{other}/report.pdf"),
        "/packed": packed,
        "/api": api,
        "/pic.png": _const(web.Response(body=png, content_type="image/png")),
        "/away": _redirect(f"{other}/landed"),
        "/home": _redirect("/page"),
    }
    runner, base = await _serve("site", seen, routes)
    try:
        yield Sites(base, other, seen)
    finally:
        await runner.cleanup()
        await other_runner.cleanup()


def _const(response: web.Response) -> Any:
    async def make(_r: web.Request) -> web.StreamResponse:
        return web.Response(body=response.body, content_type=response.content_type, status=response.status)

    return make


def _redirect(to: str) -> Any:
    async def make(_r: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(to)

    return make


@pytest.fixture(scope="module")
async def driver() -> AsyncIterator[BrowserDriver]:
    dispatcher = Dispatcher("agent")
    service = browser_feature.register(dispatcher, SandboxSettings(chromium=CHROMIUM))
    scrape_service.register(dispatcher, service)
    yield BrowserDriver(service, dispatcher)
    await service.on_cleanup(web.Application())


async def test_headers_go_to_the_page_s_own_site_only(driver: BrowserDriver, sites: Sites) -> None:
    sites.seen.requests.clear()
    result = await driver.call(
        "scrape.page", url=f"{sites.base}/page", headers=GIVEN, onlyMainContent=False, exportState=True
    )
    assert result["status"] == 200 and result["title"] == "Orders"
    assert "got hello for acme" in result["markdown"], result["markdown"]  # the page's own API call had them
    assert "jar: jar=1" in result["markdown"]  # a given Cookie never enters the page's cookie jar
    for path in ("/page", "/api", "/pic.png"):
        (got,) = sites.seen.of("site", path)
        assert got["authorization"] == TOKEN and got["x-tenant"] == "acme", (path, got)
    assert sites.seen.of("site", "/page")[0]["cookie"] == "given=2"
    assert sites.seen.of("site", "/api")[0]["cookie"] == "given=2; jar=1"  # joined with the jar's own
    assert sites.seen.of("other", "/pix.png") == [{"cookie": "jar=1"}]  # the jar's cookie (a host's, any port)
    saved = [c["name"] for c in result["storageState"]["cookies"]]
    assert saved == ["jar"], saved  # not saved into a login profile either
    assert TOKEN not in json.dumps(result)


async def test_a_redirect_takes_no_header_along(driver: BrowserDriver, sites: Sites) -> None:
    sites.seen.requests.clear()
    away = await driver.call("scrape.page", url=f"{sites.base}/away", headers=GIVEN)
    assert away["url"] == f"{sites.other}/landed" and "Another site's page." in away["markdown"]
    assert sites.seen.of("site", "/away")[0]["authorization"] == TOKEN
    assert "authorization" not in sites.seen.of("other", "/landed")[0]
    # Nor along a redirect within the site: the request the browser makes next is its own (documented).
    sites.seen.requests.clear()
    home = await driver.call("scrape.page", url=f"{sites.base}/home", headers=GIVEN)
    assert home["url"] == f"{sites.base}/page" and "authorization" not in sites.seen.of("site", "/page")[0]
    assert sites.seen.of("site", "/api")[0]["authorization"] == TOKEN  # the page's own requests have them again


async def test_a_file_fetched_again_goes_as_the_page_s_requests(driver: BrowserDriver, sites: Sites) -> None:
    """A PDF is fetched again outside the page (loading.fetch_again): with the headers to their site, hop by
    hop, never to another site."""
    locked = await driver.call("scrape.page", url=f"{sites.base}/report.pdf")
    assert locked["status"] == 401 and "Members only." in locked["markdown"]
    sites.seen.requests.clear()
    read = await driver.call("scrape.page", url=f"{sites.base}/report.pdf", headers=GIVEN)
    assert "Forty orders shipped." in read["markdown"] and read["url"] == f"{sites.base}/report.pdf", read
    assert [h["authorization"] for h in sites.seen.of("site", "/report.pdf")] == [TOKEN, TOKEN]  # page, again
    moved = await driver.call("scrape.page", url=f"{sites.base}/moved.pdf", headers=GIVEN)
    assert moved["status"] == 401  # the browser's own request after a redirect has none (documented)
    sites.seen.requests.clear()
    away = await driver.call("scrape.page", url=f"{sites.base}/elsewhere.pdf", headers=GIVEN)
    assert "Forty orders shipped." in away["markdown"] and away["url"] == f"{sites.other}/report.pdf"
    assert sites.seen.of("site", "/elsewhere.pdf")[0]["authorization"] == TOKEN
    assert all("authorization" not in h for h in sites.seen.of("other", "/report.pdf"))


async def test_a_compressed_answer_reads_as_without_headers(driver: BrowserDriver, sites: Sites) -> None:
    plain = await driver.call("scrape.page", url=f"{sites.base}/packed")
    given = await driver.call("scrape.page", url=f"{sites.base}/packed", headers=GIVEN)
    assert given["markdown"] == plain["markdown"] and plain["markdown"].count("compressed paragraph") == 200


async def test_blocked_requests_are_not_made_with_headers(driver: BrowserDriver, sites: Sites) -> None:
    sites.seen.requests.clear()
    result = await driver.call("scrape.page", url=f"{sites.base}/page", headers=GIVEN, blockResources=["image"])
    assert result["blocked"] == 2 and sites.seen.of("site", "/pic.png") == [] == sites.seen.of("other", "/pix.png")
    assert sites.seen.of("site", "/api")[0]["x-tenant"] == "acme"


async def test_a_site_that_is_down_fails_as_without_headers(driver: BrowserDriver, sites: Sites) -> None:
    runner, gone = await _serve("gone", sites.seen, {})
    await runner.cleanup()
    plain = await driver.error("scrape.page", url=f"{gone}/page", timeoutMs=5000)
    given = await driver.error("scrape.page", url=f"{gone}/page", headers=GIVEN, timeoutMs=5000)
    assert given.code == plain.code and given.code is not ErrorCode.INTERNAL_ERROR, (given, plain)
    assert TOKEN not in json.dumps([given.message, given.hint, given.details], default=str)


async def test_a_session_sends_them_to_the_site_it_names(driver: BrowserDriver, sites: Sites) -> None:
    unnamed = await driver.error("browser.sessions", action="create", sessionId="api", headers=GIVEN)
    assert unnamed.code is ErrorCode.INVALID_PARAMETER and "headersOrigin" in str(unnamed.details), unnamed.details
    made = await driver.call(
        "browser.sessions", action="create", sessionId="api", headers=GIVEN, headersOrigin=sites.base
    )
    try:
        info = next(s for s in made["sessions"] if s["sessionId"] == "api")
        assert info["headersOrigin"] == sites.base and info["headerNames"] == list(GIVEN)
        assert TOKEN not in json.dumps(made)
        sites.seen.requests.clear()
        await driver.call("browser.goto", sessionId="api", url=f"{sites.base}/page")
        assert sites.seen.of("site", "/page")[0]["authorization"] == TOKEN
    finally:
        await driver.call("browser.sessions", action="close", sessionId="api")


# -- the model's refusals (pure) -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "said"),
    [
        ({"Host": "example.com"}, "set by the browser"),
        ({"Sec-Fetch-Mode": "cors"}, "set by the browser"),
        ({"Proxy-Authorization": "x"}, "set by the browser"),
        ({"User-Agent": "bot"}, "userAgent"),
        ({"accept-language": "de"}, "locale"),
        ({"bad name": "x"}, "not a header name"),
        ({"X-A": "one\r\nX-B: two"}, "no line breaks"),
        ({"X-A": "café"}, "printable ASCII"),
        ({"X-A": "1", "x-a": "2"}, "given twice"),
        ({f"X-{i}": "v" for i in range(33)}, "at most 32"),
        ({"X-Big": "v" * 8000, "X-Big2": "v" * 8000, "X-Big3": "v" * 8000, "X-Big4": "v" * 8000, "X-5": "v" * 900},
         "32 KiB"),
    ],
)  # fmt: skip
def test_headers_the_model_refuses(headers: dict[str, str], said: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ContextOptions(headers=headers)
    assert said in str(caught.value), str(caught.value)


def test_the_site_the_headers_go_to() -> None:
    scrape = ScrapeRequest(url="https://Shop.Example.com:443/a?b", headers={"Authorization": TOKEN})
    assert scrape.headersOrigin == "https://shop.example.com"
    assert TOKEN not in repr(scrape)
    assert ScrapeRequest(url="https://shop.example.com/").headersOrigin is None
    with pytest.raises(ValidationError, match="give headers too"):
        ContextOptions(headersOrigin="https://shop.example.com")
    with pytest.raises(ValidationError, match="required for a session"):
        SessionsParams(action="create", headers={"X-A": "1"})
    assert SessionsParams(action="create", headers={"X-A": "1"}, headersOrigin="http://h:8080").headersOrigin == (
        "http://h:8080"
    )


async def test_a_local_site_only_gets_its_local_network_back() -> None:
    for origin, local in [
        ("http://127.0.0.1:8080", True),
        ("http://[::1]:3000", True),
        ("https://10.2.3.4", True),
        ("http://192.168.1.20", True),
        ("https://93.184.216.34", False),
        ("http://8.8.8.8", False),
    ]:
        assert await headers._local(origin) is local, origin  # literals: nothing is looked up


def test_a_kept_reading_is_only_for_the_same_headers() -> None:
    url = "https://shop.example.com/orders"
    keys = {
        key_of("ada", ScrapeRequest(url=url)),
        key_of("ada", ScrapeRequest(url=url, headers={"Authorization": TOKEN})),
        key_of("ada", ScrapeRequest(url=url, headers={"Authorization": "Bearer other"})),
    }
    assert len(keys) == 3
