"""blockAds and blockResources (sandbox_image/browser/blocking.py) against the real Chromium on this machine:
which requests reach a server of the test's own, for a scrape and for a browser session.

The ad filter here reads a few rules of the test's own in EasyList's syntax (the image's real EasyList and
EasyPrivacy are exercised through MCP in tests/integration/test_scrape.py): the rules are the point of those
lists, the routing and what is exempt from it are the point of this test.
"""

from __future__ import annotations

import asyncio
import base64
import collections
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from rpc.errors import BoxwrightError, ErrorCode
from sandbox_image import browser as browser_feature
from sandbox_image.browser.blocking import ENGINE_FILE, load_engine, serialize
from sandbox_image.browser.consent import Consent
from sandbox_image.config import SandboxSettings
from sandbox_image.dispatcher import Dispatcher
from sandbox_image.scrape import service as scrape_service
from tests.integration.assets.scrape_site import CONSENT
from tests.unit.browser_harness import CHROMIUM, BrowserDriver
from tests.unit.test_scrape_service import PNG_1X1, html, serve_routes

RULES = """[Adblock Plus 2.0]
! Title: Boxwright test list
/ads/*
@@/ads/allowed.js
||localhost^$third-party
##.ad-slot
###ad_box
127.0.0.1##.promo
"""

# A shop page that loads an ad script, an allowed script under /ads/, a third-party pixel (localhost is
# another site than 127.0.0.1), its own picture and an ad frame; its last script says what ran.
SHOP = """<!doctype html><html><head><title>Shop</title></head><body><main><h1>Walnut desk</h1>
<p>A desk of solid walnut, oiled by hand, with two drawers and brass handles.</p>
<img src="/pic.png" alt="The desk"><img src="{other}/track.gif" alt="">
<iframe src="/ads/frame.html"></iframe><p id="ran"></p>
<div class="ad-slot">Advertisement: woollen socks</div><div class="promo">Promo: free shipping</div>
<p class="adviser">Ask our adviser about walnut.</p><img src="/broken.png" alt="A picture that is gone"></main>
<script>setTimeout(() => document.querySelector("main").insertAdjacentHTML("beforeend",
  '<div id="ad_box">A late advert for chairs</div>'), 200);</script>
<script src="/ads/banner.js"></script><script src="/ads/allowed.js"></script>
<script>document.getElementById("ran").textContent =
  "banner " + (window.banner === true) + ", allowed " + (window.allowed === true);</script></body></html>"""


# A consent popup of the Complianz kind (one autoconsent has a rule for): the integration test's page.


@pytest.fixture(scope="module")
async def site() -> AsyncIterator[tuple[str, collections.Counter[str]]]:
    hits: collections.Counter[str] = collections.Counter()

    def counted(make: Any) -> Any:
        def handler(request: web.Request) -> web.StreamResponse:
            hits[request.path] += 1
            return make(request)

        return handler

    routes = {
        "/shop": lambda r: html(SHOP.format(other=f"http://localhost:{r.url.port}")),
        "/ads/banner.js": lambda _r: web.Response(text="window.banner = true;", content_type="text/javascript"),
        "/ads/allowed.js": lambda _r: web.Response(text="window.allowed = true;", content_type="text/javascript"),
        "/ads/frame.html": lambda _r: html("<p>Buy now</p>"),
        "/ads/landing": lambda _r: html("<title>Ad landing</title><main><p>The page asked for itself.</p></main>"),
        "/consent-page": lambda _r: html(CONSENT),
        "/consent": lambda r: web.Response(text=r.query.get("choice", "")),
        "/track.gif": lambda _r: web.Response(body=base64.b64decode(PNG_1X1), content_type="image/png"),
        "/pic.png": lambda _r: web.Response(body=base64.b64decode(PNG_1X1), content_type="image/png"),
        "/broken.png": lambda _r: web.Response(status=404),
    }
    async with serve_routes({path: counted(make) for path, make in routes.items()}) as base:
        yield base, hits


@pytest.fixture(scope="module")
async def driver(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[BrowserDriver]:
    lists = tmp_path_factory.mktemp("filters")
    (lists / "test-list.txt").write_text(RULES)
    dispatcher = Dispatcher("agent")
    service = browser_feature.register(dispatcher, SandboxSettings(chromium=CHROMIUM, filter_lists=str(lists)))
    scrape_service.register(dispatcher, service)
    yield BrowserDriver(service, dispatcher)
    await service.on_cleanup(web.Application())


async def shop(driver: BrowserDriver, base: str, **params: Any) -> dict[str, Any]:
    return await driver.call("scrape.page", url=f"{base}/shop", onlyMainContent=False, **params)


async def test_ads_and_trackers_are_never_requested(
    driver: BrowserDriver, site: tuple[str, collections.Counter[str]]
) -> None:
    base, hits = site
    hits.clear()
    plain = await shop(driver, base)
    assert "banner true, allowed true" in plain["markdown"] and plain.get("blocked") is None
    for shown in ("woollen socks", "free shipping", "late advert", "adviser"):
        assert shown in plain["markdown"], (shown, plain["markdown"])
    assert hits["/broken.png"] == 1, hits  # reading the page asks for no picture again (annotate.js's copy)
    assert min(hits["/ads/banner.js"], hits["/track.gif"], hits["/ads/frame.html"]) >= 1, hits

    hits.clear()
    blocked = await shop(driver, base, blockAds=True)
    assert "banner false, allowed true" in blocked["markdown"], blocked["markdown"]
    assert "Walnut desk" in blocked["markdown"] and "(/pic.png)" not in blocked["markdown"]  # links stay absolute
    for hidden in ("woollen socks", "free shipping", "late advert"):  # generic, this site's, added later
        assert hidden not in blocked["markdown"], (hidden, blocked["markdown"])
    assert "adviser" in blocked["markdown"]  # a class name that only starts like an ad's
    assert hits["/ads/banner.js"] == hits["/track.gif"] == hits["/ads/frame.html"] == 0, hits
    assert hits["/ads/allowed.js"] == hits["/pic.png"] == 1, hits  # an exception rule, a first-party picture
    assert blocked["blocked"] == 3  # each once: reading the page asks for no picture again (annotate.js)


async def test_the_page_asked_for_is_always_loaded(
    driver: BrowserDriver, site: tuple[str, collections.Counter[str]]
) -> None:
    base, _ = site
    landing = await driver.call("scrape.page", url=f"{base}/ads/landing", blockAds=True)
    assert landing["status"] == 200 and "The page asked for itself." in landing["markdown"]
    assert landing["blocked"] == 0


async def test_resource_kinds_are_never_requested(
    driver: BrowserDriver, site: tuple[str, collections.Counter[str]]
) -> None:
    base, hits = site
    hits.clear()
    result = await shop(driver, base, blockResources=["image"])
    assert hits["/pic.png"] == hits["/track.gif"] == hits["/broken.png"] == 0 and hits["/ads/banner.js"] >= 1, hits
    assert "banner true" in result["markdown"] and result["blocked"] == 3  # the three pictures
    assert f"]({base}/pic.png)" in result["markdown"]  # the picture is still in the text, only never fetched
    hits.clear()
    both = await shop(driver, base, blockResources=["image", "font"], blockAds=True)
    assert sum(hits[p] for p in ("/pic.png", "/track.gif", "/ads/banner.js", "/ads/frame.html")) == 0, hits
    assert both["blocked"] == 5


async def test_a_session_that_blocks(driver: BrowserDriver, site: tuple[str, collections.Counter[str]]) -> None:
    base, hits = site
    created = await driver.call(
        "browser.sessions", action="create", sessionId="quiet", blockAds=True, blockResources=["font", "image"]
    )
    try:
        info = next(s for s in created["sessions"] if s["sessionId"] == "quiet")
        assert info["blockAds"] is True and info["blockResources"] == ["image", "font"] and info["blockedRequests"] == 0
        hits.clear()
        await driver.call("browser.goto", sessionId="quiet", url=f"{base}/shop")
        ran = await driver.call(
            "browser.evaluate", sessionId="quiet", expression="document.getElementById('ran').textContent"
        )
        assert ran["value"] == "banner false, allowed true"
        assert sum(hits[p] for p in ("/pic.png", "/track.gif", "/ads/banner.js", "/ads/frame.html")) == 0, hits
        first = await blocked_in(driver, "quiet")
        assert first >= 4
        # A popup is a page of the same context: what it loads is blocked alike.
        await driver.call("browser.evaluate", sessionId="quiet", expression=f"void window.open('{base}/shop')")
        for _ in range(50):
            if await blocked_in(driver, "quiet") >= 2 * first:
                break
            await asyncio.sleep(0.1)
        assert await blocked_in(driver, "quiet") >= 2 * first and hits["/shop"] == 2, hits
        assert sum(hits[p] for p in ("/pic.png", "/track.gif", "/ads/banner.js", "/ads/frame.html")) == 0, hits
        # The page can call the binding itself: garbage gets nothing, a flood is cut, neither breaks anything.
        for args in ("123, 'x', null, true", "location.href, Array(100000).fill('ad-slot'), [], false"):
            answer = await driver.call(
                "browser.evaluate", sessionId="quiet", expression=f"window.__boxwrightAdStyles({args})"
            )
            assert answer["value"] in ([], [".ad-slot"]), answer
        late = await driver.error("browser.sessions", action="list", blockAds=True)
        assert late.code is ErrorCode.INVALID_PARAMETER and late.details["errors"][0]["field"] == "blockAds"
    finally:
        await driver.call("browser.sessions", action="close", sessionId="quiet")


async def blocked_in(driver: BrowserDriver, session_id: str) -> int:
    listed = await driver.call("browser.sessions", action="list")
    return int(next(s for s in listed["sessions"] if s["sessionId"] == session_id)["blockedRequests"])


async def test_cookie_banners_are_refused(driver: BrowserDriver, site: tuple[str, collections.Counter[str]]) -> None:
    base, hits = site
    hits.clear()
    plain = await driver.call("scrape.page", url=f"{base}/consent-page", onlyMainContent=False)
    assert "We use cookies" in plain["markdown"] and plain.get("cookieBanners") is None
    assert hits["/consent"] == 0
    refused = await driver.call(
        "scrape.page", url=f"{base}/consent-page", onlyMainContent=False, blockCookieBanners=True
    )
    assert "We use cookies" not in refused["markdown"] and "Walnut desk" in refused["markdown"], refused["markdown"]
    assert refused["cookieBanners"] == ["Complianz banner"] and hits["/consent"] == 1, (refused, hits)
    shot = await driver.call("scrape.page", url=f"{base}/consent-page", format="screenshot", blockCookieBanners=True)
    assert shot["cookieBanners"] == ["Complianz banner"]
    nothing = await driver.call("scrape.page", url=f"{base}/shop", blockCookieBanners=True)
    assert nothing["cookieBanners"] == [] and nothing["elapsedMs"] < 10_000

    await driver.call("browser.sessions", action="create", sessionId="polite", blockCookieBanners=True)
    try:
        await driver.call("browser.goto", sessionId="polite", url=f"{base}/consent-page")
        for _ in range(50):
            listed = await driver.call("browser.sessions", action="list")
            info = next(s for s in listed["sessions"] if s["sessionId"] == "polite")
            if info["cookieBanners"]:
                break
            await asyncio.sleep(0.1)
        assert info["blockCookieBanners"] is True and info["cookieBanners"] == ["Complianz banner"], info
        left = await driver.call("browser.evaluate", sessionId="polite", expression="document.cookie")
        assert "cmplz_banner-status=dismissed" in left["value"]
    finally:
        await driver.call("browser.sessions", action="close", sessionId="polite")


@pytest.mark.parametrize(
    "bad",
    [{"blockResources": ["stylesheet"]}, {"blockResources": []}, {"blockResources": "image"}, {"blockAds": "maybe"}],
)
async def test_bad_blocks_are_refused(driver: BrowserDriver, bad: dict[str, Any]) -> None:
    err = await driver.error("scrape.page", url="http://127.0.0.1:9/", **bad)
    assert err.code is ErrorCode.INVALID_PARAMETER and err.details["errors"][0]["field"].startswith(next(iter(bad)))
    assert err.hint


def test_no_lists_or_a_broken_engine_is_a_clear_error(tmp_path: Path) -> None:
    for broken in (None, b"not an engine"):  # no lists at all; an engine file of another adblock version
        if broken is not None:
            (tmp_path / ENGINE_FILE).write_bytes(broken)
        with pytest.raises(BoxwrightError) as caught:
            load_engine(tmp_path)
        assert caught.value.code is ErrorCode.EXECUTION_ERROR and "boxwright image build" in caught.value.hint


def test_the_serialized_engine_blocks_as_the_lists_do(tmp_path: Path) -> None:
    (tmp_path / "test-list.txt").write_text(RULES)
    built = load_engine(tmp_path)
    assert serialize(tmp_path) == tmp_path / ENGINE_FILE
    loaded = load_engine(tmp_path)  # now from engine.dat
    for url, kind in (("http://a.test/ads/x.js", "script"), ("http://a.test/ads/allowed.js", "script"),
                      ("http://localhost/p.gif", "image"), ("http://a.test/app.js", "script")):  # fmt: skip
        want = built.check_network_urls(url, "http://a.test/", kind).matched
        assert loaded.check_network_urls(url, "http://a.test/", kind).matched is want
    assert loaded.check_network_urls("http://a.test/ads/x.js", "http://a.test/", "script").matched is True


async def test_a_scrape_waits_for_the_consent_script_only_as_long_as_it_must() -> None:
    """Consent.settle on the states the script reports (pure logic: the real script is exercised above)."""
    loop = asyncio.get_running_loop()

    async def reports(consent: Consent, *states: tuple[str, int, bool]) -> None:
        for state, attempts, detected in states:
            await asyncio.sleep(0.05)
            consent.main_state, consent.attempts, consent.detected = state, attempts, detected
            consent.changed.set()

    done = Consent(main_state="done", attempts=1, detected=True)  # dealt with while the page settled
    assert await done.settle(5) is False
    quiet = Consent(main_state="started", attempts=1)
    started = loop.time()
    feed = asyncio.create_task(reports(quiet, ("started", 2, False)))  # the second look finds nothing
    assert await quiet.settle(5) is False and loop.time() - started < 1
    await feed
    popup = Consent(main_state="started", attempts=1)
    feed = asyncio.create_task(reports(popup, ("cmpDetected", 1, True), ("runningOptOut", 1, True), ("done", 1, True)))
    assert await popup.settle(5) is True and popup.main_state == "done"  # waited for it: the page changed
    await feed
    silent = Consent(main_state="started", attempts=1)  # never looks again: bounded
    started = loop.time()
    assert await silent.settle(0.3) is False and loop.time() - started < 1
