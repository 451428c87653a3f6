"""browser.scrape: the page a tab shows now, read by the scrape engine — on the real Chromium of this machine,
through the agent's dispatcher, on test_scrape_service's pages (the MCP side is in the integration tests)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from rpc.errors import BoxwrightError
from sandbox_image.scrape import reading
from tests.unit.browser_harness import BrowserDriver
from tests.unit.test_scrape_service import pages, scraper  # noqa: F401 (fixtures)

LIVE_MARKS = "() => document.querySelectorAll('[data-bw-box], [data-bw-hidden], [data-bw-include]').length"


async def read(driver: BrowserDriver, sid: str, **params: Any) -> dict[str, Any]:
    return await driver.call("browser.scrape", sessionId=sid, **params)


async def evaluate(driver: BrowserDriver, sid: str, expression: str) -> Any:
    return (await driver.call("browser.evaluate", sessionId=sid, expression=expression))["value"]


async def test_the_tab_is_read_as_it_is_after_a_click_and_left_as_it_was(
    scraper: BrowserDriver,  # noqa: F811
    pages: str,  # noqa: F811
    sid: str,
) -> None:
    await scraper.call("browser.goto", sessionId=sid, url=f"{pages}/more")
    before = await read(scraper, sid)
    assert before["format"] == "markdown" and before["title"] == "Fox listing" and before["contentType"] == "text/html"
    assert "# Foxes, part one" in before["markdown"] and "part two" not in before["markdown"]
    assert before["mainContent"] and "Footer words" not in before["markdown"]
    assert before["url"] == f"{pages}/more" and before["metadata"]["language"] == "en"

    # What the caller did in the tab is what is read: a click's content, a typed value; no reload.
    await evaluate(scraper, sid, "window.marker = 'still here'")
    await scraper.call("browser.click", sessionId=sid, selector="#more")
    await scraper.call("browser.type", sessionId=sid, selector="#note", text="My typed note")
    after = await read(scraper, sid, onlyMainContent=False)
    assert "## Foxes, part two" in after["markdown"] and "Later words about the red fox" in after["markdown"]
    assert "My typed note" in after["markdown"] and "Footer words" in after["markdown"]
    links = await read(scraper, sid, format="links")
    assert f"{pages}/fox/2" in links["links"] and links["markdown"] is None

    # The live page is the one the caller left: not reloaded, no marks, its state and tabs as they were.
    assert await evaluate(scraper, sid, "window.marker") == "still here"
    assert await evaluate(scraper, sid, LIVE_MARKS) == 0
    assert await evaluate(scraper, sid, "document.getElementById('note').value") == "My typed note"
    tabs = await scraper.call("browser.tabs", sessionId=sid)
    assert [t["url"] for t in tabs["tabs"]] == [f"{pages}/more"]


async def test_the_same_engine_as_scrape(scraper: BrowserDriver, pages: str, sid: str) -> None:  # noqa: F811
    fresh = await scraper.call("scrape.page", url=f"{pages}/article")
    await scraper.call("browser.goto", sessionId=sid, url=f"{pages}/article")
    tab = await read(scraper, sid)
    assert tab["markdown"] == fresh["markdown"] and tab["metadata"] == fresh["metadata"]
    html = await read(scraper, sid, format="html", onlyMainContent=False)
    assert "<h1>" in html["html"] and not html["mainContent"]


async def test_reading_options(scraper: BrowserDriver, pages: str, sid: str) -> None:  # noqa: F811
    await scraper.call("browser.goto", sessionId=sid, url=f"{pages}/more")
    await scraper.call("browser.click", sessionId=sid, selector="#more")
    only = await read(scraper, sid, includeTags=["#later"])
    assert only["markdown"].startswith("## Foxes, part two") and "part one" not in only["markdown"]
    assert not only["mainContent"]
    without = await read(scraper, sid, excludeTags=["#later"], onlyMainContent=False)
    assert "part two" not in without["markdown"] and "part one" in without["markdown"]
    whole = await read(scraper, sid)
    first = await read(scraper, sid, maxChars=200)
    assert first["truncated"] and first["totalChars"] == len(whole["markdown"]) and len(first["markdown"]) <= 200
    rest = await read(scraper, sid, offset=first["nextOffset"])
    assert first["markdown"] + rest["markdown"] == whole["markdown"] and rest["nextOffset"] is None

    # /framed has a frame that never loads: go on once its document is in, and read the frames as they come.
    await scraper.call("browser.goto", sessionId=sid, url=f"{pages}/framed", waitUntil="domcontentloaded")
    for _ in range(50):
        framed = await read(scraper, sid, includeIframes=True, onlyMainContent=False)
        if "Cross origin words" in framed["markdown"]:
            break
        await asyncio.sleep(0.1)
    assert framed["iframes"] >= 2 and "Cross origin words" in framed["markdown"]
    assert "Cross origin words" not in (await read(scraper, sid, onlyMainContent=False))["markdown"]


async def test_links_of_the_tab_include_open_shadow_roots(scraper: BrowserDriver, pages: str, sid: str) -> None:  # noqa: F811
    await scraper.call("browser.goto", sessionId=sid, url=f"{pages}/shadow-links")
    links = (await read(scraper, sid, format="links"))["links"]
    assert links == [f"{pages}/first", f"{pages}/shadow/one", f"{pages}/shadow/two", f"{pages}/last"]
    assert await evaluate(scraper, sid, LIVE_MARKS) == 0  # read from a clone: the live page has no marks


async def test_a_text_document_is_its_text(scraper: BrowserDriver, pages: str, sid: str) -> None:  # noqa: F811
    await scraper.call("browser.goto", sessionId=sid, url=f"{pages}/text")
    out = await read(scraper, sid)
    assert out["contentType"] == "text/plain" and out["markdown"] == "plain words\nsecond line"


async def test_what_cannot_be_read_says_why(scraper: BrowserDriver, pages: str, sid: str) -> None:  # noqa: F811
    await scraper.call("browser.goto", sessionId=sid, url=f"{pages}/more")
    bad = await scraper.error("browser.scrape", sessionId=sid, includeTags=["div["])
    assert bad.code == "INVALID_PARAMETER" and bad.details["errors"][0]["field"] == "includeTags"
    shot = await scraper.error("browser.scrape", sessionId=sid, format="screenshot")
    assert shot.code == "INVALID_PARAMETER"
    missing = await scraper.error("browser.scrape", sessionId=sid, tabId="tab_999")
    assert missing.code == "TAB_NOT_FOUND"

    await scraper.call("browser.goto", sessionId=sid, url=f"{pages}/pic.png")
    picture = await scraper.error("browser.scrape", sessionId=sid)
    assert picture.code == "UNSUPPORTED_CONTENT_TYPE" and picture.details["contentType"] == "image/png"

    await scraper.call("browser.goto", sessionId=sid, url=f"{pages}/big", timeoutMs=60_000)
    big = await scraper.error("browser.scrape", sessionId=sid)
    assert big.code == "PAGE_TOO_LARGE" and big.details["measured"] == "rendered document"

    with socket.socket() as s, pytest.raises(BoxwrightError):  # bound, never listening: Chromium's error page
        s.bind(("127.0.0.1", 0))
        await scraper.call("browser.goto", sessionId=sid, url=f"http://127.0.0.1:{s.getsockname()[1]}/")
    await scraper.call("browser.wait_for_stable", sessionId=sid)  # the error page comes in after goto's error
    failed = await scraper.error("browser.scrape", sessionId=sid)
    assert failed.code == "NAVIGATION_FAILED" and "browser_goto" in (failed.hint or "")


async def test_a_read_past_its_timeout_ends_cleanly_and_frees_the_tab(
    scraper: BrowserDriver,  # noqa: F811
    pages: str,  # noqa: F811
    sid: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await scraper.call("browser.goto", sessionId=sid, url=f"{pages}/article")

    async def stuck(*_args: Any, **_kwargs: Any) -> Any:
        await asyncio.sleep(3600)

    with monkeypatch.context() as patched:
        patched.setattr(reading, "extract_page", stuck)
        slow = await scraper.error("browser.scrape", sessionId=sid, timeoutMs=1000)
    assert slow.code == "OPERATION_TIMEOUT" and "timeoutMs" in (slow.hint or "")
    assert "Foxes and dogs" in (await read(scraper, sid))["markdown"]  # the tab's lock was let go
