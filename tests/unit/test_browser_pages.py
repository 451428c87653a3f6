"""Reading pages and the remaining actions against the real Chromium: screenshots, dialogs, console and
failed requests, wait_for_stable, page_info, page_content, evaluate, scroll, keys, history."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import re
import time
from typing import Any

import pytest
from aiohttp import web

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.browser import MAX_FULL_PAGE_HEIGHT, PageContentResult, PageInfoResult, StabilityResult
from sandbox_image.browser import stability
from sandbox_image.browser import state as state_module
from sandbox_image.browser.screenshot import png_size
from sandbox_image.browser.tab import Tab, same_document
from tests.unit.browser_harness import BrowserDriver, Site
from tests.unit.test_scrape_service import serve_routes

pytestmark = pytest.mark.chromium  # launches the host's Chromium


async def test_screenshots(browser: BrowserDriver, site: Site, sid: str) -> None:
    await browser.call("browser.goto", sessionId=sid, url=site.url("/article"))
    shot = await browser.call("browser.screenshot", sessionId=sid)
    png = base64.b64decode(shot["data"])
    assert png_size(png) == (1280, 720) == (shot["width"], shot["height"])
    assert shot["sizeBytes"] == len(png) and shot["mimeType"] == "image/png"
    full = await browser.call("browser.screenshot", sessionId=sid, fullPage=True)
    assert full["width"] == 1280 and full["height"] >= 720
    element = await browser.call("browser.screenshot", sessionId=sid, selector="h1")
    assert 0 < element["height"] < 200
    both = await browser.error("browser.screenshot", sessionId=sid, selector="h1", fullPage=True)
    assert both.code is ErrorCode.INVALID_PARAMETER
    assert not full["truncated"]


async def test_full_page_screenshot_of_a_very_long_page_is_cut(browser: BrowserDriver, sid: str) -> None:
    tall = "data:text/html,<title>tall</title><div style='height:30000px;background:linear-gradient(red,blue)'></div>"
    await browser.call("browser.goto", sessionId=sid, url=tall)
    full = await browser.call("browser.screenshot", sessionId=sid, fullPage=True)
    assert full["truncated"] is True
    assert png_size(base64.b64decode(full["data"])) == (full["width"], MAX_FULL_PAGE_HEIGHT)


async def test_typed_passwords_are_masked_in_snapshots(browser: BrowserDriver, site: Site, sid: str) -> None:
    await browser.call("browser.goto", sessionId=sid, url=site.url("/login"))
    await browser.call("browser.type", sessionId=sid, selector="#email", text="me@example.com")
    await browser.call("browser.type", sessionId=sid, selector="#password", text="hunter2")
    snap = await browser.call("browser.snapshot", sessionId=sid)
    assert "hunter2" not in snap["elements"] and "hunter2" not in snap["text"]
    assert re.search(r'textbox "Password" value="\*+"', snap["elements"]), snap["elements"]
    assert 'value="me@example.com"' in snap["elements"]  # other fields keep their values
    info = await browser.call("browser.page_info", sessionId=sid)
    assert "hunter2" not in str(info)


async def test_dialogs_block_actions_until_handled(browser: BrowserDriver, site: Site, sid: str) -> None:
    await browser.call("browser.goto", sessionId=sid, url=site.url("/dialogs"))
    started = time.monotonic()
    opened = await browser.error("browser.click", sessionId=sid, selector="button >> nth=0")
    assert opened.code is ErrorCode.INVALID_PARAMETER  # '>>' is not CSS
    opened = await browser.error("browser.click", sessionId=sid, selector="button:first-of-type", timeoutMs=5000)
    assert opened.code is ErrorCode.DIALOG_PENDING and time.monotonic() - started < 3
    assert opened.details["dialog"] == {"type": "confirm", "message": "Proceed?", "defaultValue": None}
    blocked = await browser.error("browser.snapshot", sessionId=sid)
    assert blocked.code is ErrorCode.DIALOG_PENDING and "Proceed?" in blocked.message
    info = await browser.call("browser.page_info", sessionId=sid)
    assert info["pendingDialog"]["message"] == "Proceed?" and info["intents"] == ["handle_dialog"]
    handled = await browser.call("browser.handle_dialog", sessionId=sid, accept=True)
    assert handled["handled"]["type"] == "confirm"
    result = await browser.call(
        "browser.evaluate", sessionId=sid, expression="document.getElementById('r').textContent"
    )
    assert result["value"] == "true"

    await browser.error("browser.click", sessionId=sid, selector="button:nth-of-type(2)")
    answered = await browser.call("browser.handle_dialog", sessionId=sid, accept=True, promptText="Ada")
    assert answered["handled"] == {"type": "prompt", "message": "Name?", "defaultValue": "x"}
    result = await browser.call(
        "browser.evaluate", sessionId=sid, expression="document.getElementById('r').textContent"
    )
    assert result["value"] == "Ada"
    nothing = await browser.error("browser.handle_dialog", sessionId=sid)
    assert nothing.code is ErrorCode.EXECUTION_ERROR


ALERT_LOOP = "data:text/html,<title>Nagging</title><script>setInterval(() => alert('again'), 50)</script>"


async def test_goto_leaves_a_page_that_keeps_alerting(browser: BrowserDriver, site: Site, sid: str) -> None:
    """Each answered alert is followed by the next one: handle_dialog alone never gets out, and goto used to
    fail DIALOG_PENDING too (only closing the tab did). Going to another page leaves it, as a user would."""
    with contextlib.suppress(BoxwrightError):  # the first alert may come before the load event
        await browser.call("browser.goto", sessionId=sid, url=ALERT_LOOP)
    await asyncio.sleep(0.2)
    trapped = await browser.error("browser.snapshot", sessionId=sid)
    assert trapped.code is ErrorCode.DIALOG_PENDING
    await browser.call("browser.handle_dialog", sessionId=sid)
    await asyncio.sleep(0.2)
    assert (await browser.error("browser.snapshot", sessionId=sid)).code is ErrorCode.DIALOG_PENDING
    left = await browser.call("browser.goto", sessionId=sid, url=site.url("/login"))
    assert left["title"] == "Login" and left["url"] == site.url("/login")
    await asyncio.sleep(0.2)  # no alert of the page left behind is still pending
    assert "Sign in" in (await browser.call("browser.snapshot", sessionId=sid))["text"]
    assert (await browser.error("browser.handle_dialog", sessionId=sid)).code is ErrorCode.EXECUTION_ERROR

    # A page that answers slowly: the page being left goes on alerting while the navigation waits for it.
    async def slow(_request: web.Request) -> web.Response:
        await asyncio.sleep(0.5)
        return web.Response(text="<title>Slow</title><p>Slow words</p>", content_type="text/html")

    async with serve_routes({"/slow": slow}) as base:
        with contextlib.suppress(BoxwrightError):
            await browser.call("browser.goto", sessionId=sid, url=ALERT_LOOP)
        assert (await browser.call("browser.goto", sessionId=sid, url=f"{base}/slow"))["title"] == "Slow"
        await asyncio.sleep(0.2)
        assert "Slow words" in (await browser.call("browser.snapshot", sessionId=sid))["text"]


async def test_a_documents_dialogs_still_count_after_it_moves_to_a_fragment(
    browser: BrowserDriver, site: Site, sid: str
) -> None:
    """goto pairs the dialogs of the page it leaves only when that document has shown some; a hash change
    used to make the document look new (its count reset), so such a page's late dialogs were not paired."""

    async def once(_request: web.Request) -> web.Response:
        body = "<title>Once</title><script>alert('hi')</script><p id=top>top</p><p id=end>end</p>"
        return web.Response(text=body, content_type="text/html")

    async with serve_routes({"/once": once}) as base:
        with contextlib.suppress(BoxwrightError):
            await browser.call("browser.goto", sessionId=sid, url=f"{base}/once")
        await browser.call("browser.handle_dialog", sessionId=sid)
        tab = await browser.service.sessions.get(sid).active_tab()
        assert tab.document_dialogs == 1
        await browser.call("browser.evaluate", sessionId=sid, expression="location.hash = 'end'")
        await asyncio.sleep(0.1)
        assert tab.url == f"{base}/once#end" and tab.document_dialogs == 1
        await browser.call("browser.goto", sessionId=sid, url=site.url("/login"))
        assert tab.document_dialogs == 0  # a new document: its own count


def test_same_document() -> None:
    page = "https://example.test/doc"
    assert same_document(page, page + "#a") and same_document(page + "#a", page + "#b")
    assert not same_document(page, page)  # a reload is a new document
    assert not same_document(page + "#a", page)  # leaving the fragment loads the page again
    assert not same_document(page, "https://example.test/other#a") and not same_document("", page + "#a")


async def test_a_dialog_of_the_page_gone_to_still_stops_goto(browser: BrowserDriver, site: Site, sid: str) -> None:
    """Leaving a page answers its dialogs, but the new page's own are the caller's: an alert while it loads
    ends goto at once with DIALOG_PENDING (its load event waits for the answer), as before."""
    with contextlib.suppress(BoxwrightError):
        await browser.call("browser.goto", sessionId=sid, url=ALERT_LOOP)
    await asyncio.sleep(0.2)
    started = time.monotonic()
    alerting = "data:text/html,<title>Hello</title><script>alert('welcome')</script><p>after</p>"
    opened = await browser.error("browser.goto", sessionId=sid, url=alerting, timeoutMs=10_000)
    assert opened.code is ErrorCode.DIALOG_PENDING and opened.details["dialog"]["message"] == "welcome"
    assert time.monotonic() - started < 3
    await browser.call("browser.handle_dialog", sessionId=sid)
    shown = await browser.call("browser.snapshot", sessionId=sid)
    assert shown["title"] == "Hello" and "after" in shown["text"]


async def test_console_and_failed_requests(browser: BrowserDriver, site: Site, sid: str) -> None:
    await browser.call("browser.goto", sessionId=sid, url=site.url("/noisy"))
    await browser.call("browser.wait_for_stable", sessionId=sid, quietMs=200, timeoutMs=5000)
    logs = await browser.call("browser.console", sessionId=sid)
    assert [(m["type"], m["text"]) for m in logs["messages"] if m["type"] in ("log", "error")][:2] == [
        ("log", "hello from the page"),
        ("error", "something bad"),
    ]
    failures = {r["url"]: r for r in logs["failedRequests"]}
    assert failures[site.url("/missing")]["status"] == 404
    assert "ERR_" in failures["http://127.0.0.1:9/x"]["failure"]
    limited = await browser.call("browser.console", sessionId=sid, limit=1, clear=True)
    assert len(limited["messages"]) == 1 and limited["messages"][0]["text"] == logs["messages"][-1]["text"]
    rest = await browser.call("browser.console", sessionId=sid, clear=True)
    assert [m["text"] for m in rest["messages"]] == [m["text"] for m in logs["messages"][:-1]]
    assert (await browser.call("browser.console", sessionId=sid))["messages"] == []


async def test_wait_for_stable(browser: BrowserDriver, site: Site, sid: str) -> None:
    await browser.call("browser.goto", sessionId=sid, url=site.url("/busy"))
    stable = StabilityResult.model_validate(
        await browser.call("browser.wait_for_stable", sessionId=sid, quietMs=300, timeoutMs=5000)
    )
    assert stable.stable and stable.domStable and stable.networkPending == 0 and stable.loadState == "complete"
    counter = await browser.call(
        "browser.evaluate", sessionId=sid, expression="document.getElementById('n').textContent"
    )
    assert counter["value"] == "12"  # it waited for the mutations to stop

    await browser.call("browser.goto", sessionId=sid, url=site.url("/forever-busy"))
    started = time.monotonic()
    restless = await browser.call("browser.wait_for_stable", sessionId=sid, quietMs=300, timeoutMs=1000)
    assert restless["stable"] is False and restless["domStable"] is False
    assert 0.9 < time.monotonic() - started < 2.5 and restless["elapsedMs"] >= 900


async def test_wait_for_stable_probes_a_static_page_twice(
    browser: BrowserDriver, site: Site, sid: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page that does not move is probed when the wait starts and when quietMs has passed, not every POLL_S."""
    probes: list[float] = []
    real_probe = stability._probe

    async def counting(tab: Tab, key: str) -> dict[str, Any] | None:
        probes.append(time.monotonic())
        return await real_probe(tab, key)

    monkeypatch.setattr(stability, "_probe", counting)
    await browser.call("browser.goto", sessionId=sid, url=site.url("/article"))
    await asyncio.sleep(0.4)  # the load's own requests are over: only the DOM window is left to wait out
    stable = await browser.call("browser.wait_for_stable", sessionId=sid, quietMs=300, timeoutMs=5000)
    assert stable["stable"] is True
    assert len(probes) == 2 and probes[1] - probes[0] >= 0.3


def test_next_probe_waits_for_the_later_window() -> None:
    next_probe = stability._next_probe_s
    assert next_probe(0.0, True, 0, 0.5, 0.3) == pytest.approx(0.3)  # DOM just observed: its whole window
    assert next_probe(250.0, True, 0, 0.1, 0.3) == pytest.approx(0.2)  # the network window ends later
    assert next_probe(290.0, True, 0, 1.0, 0.3) == stability.POLL_S  # never sooner than POLL_S
    assert next_probe(None, True, 0, 1.0, 0.3) == stability.POLL_S  # mid-navigation
    assert next_probe(0.0, False, 0, 1.0, 0.3) == stability.POLL_S  # still loading
    assert next_probe(0.0, True, 2, 1.0, 0.3) == stability.POLL_S  # requests open


async def test_page_info_shapes(browser: BrowserDriver, site: Site, sid: str) -> None:
    await browser.call("browser.goto", sessionId=sid, url=site.url("/login"))
    login = PageInfoResult.model_validate(await browser.call("browser.page_info", sessionId=sid))
    assert login.page.type == "login" and "login" in login.intents and "submit" in login.intents
    assert login.page.title == "Login" and login.page.summary.startswith("login page 'Login'")
    by_name = {e.name: e for e in login.elements}
    assert by_name["Help"].disabled and by_name["Email"].value == "" and by_name["Home"].region == "navigation"
    assert {r.role for r in login.regions} >= {"banner", "navigation", "main"}
    snap = await browser.call("browser.snapshot", sessionId=sid)
    assert f"[{by_name['Email'].ref}] textbox" in snap["elements"]  # one ref registry for both

    await browser.call("browser.goto", sessionId=sid, url=site.url("/article"))
    article = PageInfoResult.model_validate(await browser.call("browser.page_info", sessionId=sid))
    assert article.page.type == "article" and "read" in article.intents

    await browser.call("browser.goto", sessionId=sid, url=site.url("/missing"))
    missing = PageInfoResult.model_validate(await browser.call("browser.page_info", sessionId=sid))
    assert missing.page.type == "error"


async def test_page_content_sections(browser: BrowserDriver, site: Site, sid: str) -> None:
    await browser.call("browser.goto", sessionId=sid, url=site.url("/article"))
    content = PageContentResult.model_validate(await browser.call("browser.page_content", sessionId=sid))
    assert [(s.heading, s.level) for s in content.sections] == [("The headline", 1), ("Part one", 2), ("Part two", 2)]
    assert content.sections[2].text == "Last words." and "Footer text" not in content.model_dump_json()
    assert content.totalLength == sum(len(s.heading) + len(s.text) for s in content.sections)
    assert not content.truncated
    capped = PageContentResult.model_validate(await browser.call("browser.page_content", sessionId=sid, maxLength=300))
    assert capped.truncated and capped.totalLength == content.totalLength
    assert sum(len(s.heading) + len(s.text) for s in capped.sections) == 300


async def test_evaluate(browser: BrowserDriver, site: Site, sid: str) -> None:
    await browser.call("browser.goto", sessionId=sid, url=site.url("/article"))

    async def value(expression: str) -> tuple[object, str]:
        result = await browser.call("browser.evaluate", sessionId=sid, expression=expression)
        return result["value"], result["type"]

    assert await value("document.title") == ("An article", "string")
    assert await value("[1, 2].map(x => x * 2)") == ([2, 4], "array")
    assert await value("() => ({a: 1, b: [true, null]})") == ({"a": 1, "b": [True, None]}, "object")
    assert await value("const n = 2; return n + 1") == (3, "number")
    assert await value("await Promise.resolve('later')") == ("later", "string")
    assert await value("undefined") == (None, "undefined")
    assert await value("new Date(0)") == ("1970-01-01T00:00:00+00:00", "date")
    for bad in ("document.body", "() => () => 1", "NaN", "(() => { const a = {}; a.a = a; return a })()"):
        error = await browser.error("browser.evaluate", sessionId=sid, expression=bad)
        assert error.code is ErrorCode.EXECUTION_ERROR and "JSON" in error.message, bad
    thrown = await browser.error("browser.evaluate", sessionId=sid, expression="throw new Error('boom')")
    assert thrown.code is ErrorCode.EXECUTION_ERROR and thrown.message == "the script failed: boom"
    slow = await browser.error("browser.evaluate", sessionId=sid, expression="new Promise(() => {})", timeoutMs=300)
    assert slow.code is ErrorCode.OPERATION_TIMEOUT
    # A script that never returns is stopped at its timeout: the same tab answers the next calls at once.
    stuck = await browser.error("browser.evaluate", sessionId=sid, expression="while (true) {}", timeoutMs=500)
    assert stuck.code is ErrorCode.OPERATION_TIMEOUT and stuck.details["scriptStopped"] is True, stuck
    assert await value("document.title") == ("An article", "string")
    await browser.call("browser.snapshot", sessionId=sid, timeoutMs=3000)
    again = await browser.call("browser.goto", sessionId=sid, url=site.url("/"), timeoutMs=5000)
    assert again["title"] == "Index"


async def test_scroll_hover_keys_and_history(browser: BrowserDriver, site: Site, sid: str) -> None:
    await browser.call("browser.goto", sessionId=sid, url=site.url("/many"))
    down = await browser.call("browser.scroll", sessionId=sid)
    assert down["scrollY"] == 720 and not down["atTop"] and not down["atBottom"]
    up = await browser.call("browser.scroll", sessionId=sid, direction="up", amount=100)
    assert up["scrollY"] == 620
    into_view = await browser.call("browser.scroll", sessionId=sid, selector="a[href='/p/4999']")
    assert into_view["atBottom"]
    await browser.call("browser.hover", sessionId=sid, selector="a[href='/p/4999']")
    key = await browser.call("browser.press_key", sessionId=sid, key="Home")
    assert key["navigated"] is False
    unknown = await browser.error("browser.press_key", sessionId=sid, key="NoSuchKey")
    assert unknown.code is ErrorCode.INVALID_PARAMETER

    await browser.call("browser.goto", sessionId=sid, url=site.url("/"))
    nothing = await browser.call("browser.forward", sessionId=sid)
    assert nothing["navigated"] is False
    back = await browser.call("browser.back", sessionId=sid)
    assert back["navigated"] is True and back["url"] == site.url("/many")
    forward = await browser.call("browser.forward", sessionId=sid)
    assert forward["navigated"] is True and forward["title"] == "Index"
    pressed = await browser.call("browser.press_key", sessionId=sid, key="Enter", selector="a[href='/article']")
    assert pressed["navigated"] is True and pressed["title"] == "An article"


async def test_a_session_state_too_large_for_a_profile_is_not_exported(
    browser: BrowserDriver, site: Site, sid: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page can fill its storage on many origins; such a state never leaves the sandbox for a profile."""
    monkeypatch.setattr(state_module, "MAX_STATE_BYTES", 50_000)  # the real 16 MiB needs two full origins
    await browser.call("browser.goto", sessionId=sid, url=site.url("/article"))
    small = await browser.call("browser.state_export", sessionId=sid)
    assert small["fromContext"] is True
    await browser.call("browser.evaluate", sessionId=sid, expression="localStorage.setItem('big', 'x'.repeat(60000))")
    refused = await browser.error("browser.state_export", sessionId=sid)
    assert refused.code is ErrorCode.PAYLOAD_TOO_LARGE, refused
    assert refused.details["maxStateBytes"] == 50_000 and refused.details["stateBytes"] > 60_000
    assert "x" * 100 not in str(refused.to_body())
