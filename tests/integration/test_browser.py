"""Issue #3 acceptance: a real Chromium in a real sandbox, driven through the MCP tools, browsing
pages served from inside the sandbox itself."""

from __future__ import annotations

import base64
import re
import struct
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.integration.conftest import HttpServer
from tests.integration.mcp_helpers import Session, http_session, stdio_session

SITE = (Path(__file__).parent / "assets" / "site.py").read_text()
PORT = 8000
BASE = f"http://127.0.0.1:{PORT}"


@asynccontextmanager
async def browsing(s: Session) -> AsyncIterator[str]:
    """A sandbox serving the test site on localhost:8000."""
    sid = (await s.ok("sandbox_create"))["sandboxId"]
    try:
        await s.ok("file_write", {"path": "site.py", "content": SITE})
        await s.ok("code_run", {"language": "bash", "code": f"python3 site.py {PORT}", "background": True})
        wait = f"for i in $(seq 100); do curl -s -o /dev/null {BASE}/ && exit 0; sleep 0.1; done; exit 1"
        assert (await s.ok("code_run", {"language": "bash", "code": wait}))["exitCode"] == 0
        yield sid
    finally:
        await s.call("sandbox_destroy", {"sandboxId": sid})


def ref_of(elements: str, pattern: str) -> str:
    for line in elements.splitlines():
        if re.search(pattern, line):
            return line.split("]", 1)[0].lstrip("[")
    raise AssertionError(f"no element matching {pattern!r} in:\n{elements}")


async def test_login_by_refs_and_by_css(http_server: HttpServer, tokens: dict) -> None:
    async with http_session(http_server.url, tokens["alice"]) as s, browsing(s):
        page = await s.ok("browser_goto", {"url": f"{BASE}/"})
        assert page["title"] == "Sign in" and page["status"] == 200
        snap = await s.ok("browser_snapshot")
        assert "Please sign in" in snap["text"]
        assert re.search(r"^\[ref_\d+\] button \"Sign in\"", snap["elements"], re.M), snap["elements"]
        await s.ok("browser_type", {"selector": ref_of(snap["elements"], r'textbox "Username"'), "text": "alice"})
        await s.ok("browser_type", {"selector": ref_of(snap["elements"], r'textbox "Password"'), "text": "pw"})
        await s.ok("browser_select_option", {"selector": ref_of(snap["elements"], "combobox"), "values": ["Pro"]})
        clicked = await s.ok("browser_click", {"selector": ref_of(snap["elements"], r'button "Sign in"')})
        assert clicked["navigated"] is True
        after = await s.ok("browser_snapshot")
        assert "Welcome, alice!" in after["text"] and "pro plan" in after["text"]

        await s.ok("browser_goto", {"url": f"{BASE}/"})
        await s.ok("browser_type", {"selector": "#username", "text": "bob"})
        await s.ok("browser_type", {"selector": "#password", "text": "pw", "submit": True})
        await s.ok("browser_wait_for_stable")
        assert "Welcome, bob!" in (await s.ok("browser_snapshot"))["text"]


async def test_refs_are_stable_then_stale(http_server: HttpServer, tokens: dict) -> None:
    async with http_session(http_server.url, tokens["alice"]) as s, browsing(s):
        await s.ok("browser_goto", {"url": f"{BASE}/"})
        first = await s.ok("browser_snapshot")
        second = await s.ok("browser_snapshot")
        assert first["elements"] == second["elements"]

        doomed = ref_of(first["elements"], r'button "Remove me"')
        await s.ok("browser_click", {"selector": doomed})  # removes its own container
        gone = await s.error("browser_click", {"selector": doomed})
        assert gone.code == "STALE_REF" and "snapshot" in gone.data["recoverHint"]

        inner = ref_of(first["elements"], r'button "Inner"')  # inside the iframe
        await s.ok("browser_click", {"selector": inner})
        assert "inner clicked" in (await s.ok("browser_snapshot"))["text"]

        username = ref_of(first["elements"], r'textbox "Username"')
        await s.ok("browser_goto", {"url": f"{BASE}/p/1"})
        stale = await s.error("browser_type", {"selector": username, "text": "x"})
        assert stale.code == "STALE_REF"
        unknown = await s.error("browser_click", {"selector": "ref_999999"})
        assert unknown.code in ("ELEMENT_NOT_FOUND", "STALE_REF")
        missing = await s.error("browser_click", {"selector": "#does-not-exist", "timeoutMs": 500})
        assert missing.code == "ELEMENT_NOT_FOUND"


async def test_huge_page_is_capped(http_server: HttpServer, tokens: dict) -> None:
    async with http_session(http_server.url, tokens["alice"]) as s, browsing(s):
        await s.ok("browser_goto", {"url": f"{BASE}/links?n=5000"})
        snap = await s.ok("browser_snapshot", {"maxElements": 50, "maxTextLen": 2000})
        assert snap["truncated"] is True
        assert len(snap["elements"].splitlines()) == 50
        assert snap["elementCount"] >= 5000
        assert len(snap["text"]) <= 2000
        link = ref_of(snap["elements"], r'link "Link number 3"')
        await s.ok("browser_click", {"selector": link})
        assert (await s.ok("browser_snapshot"))["title"] == "Page 3"


async def test_tabs_by_id_without_touching_the_active_one(http_server: HttpServer, tokens: dict) -> None:
    async with http_session(http_server.url, tokens["alice"]) as s, browsing(s):
        await s.ok("browser_goto", {"url": f"{BASE}/p/0"})
        tabs = [(await s.ok("browser_tabs", {"action": "list"}))["activeTabId"]]
        for i in (1, 2):
            opened = await s.ok("browser_tabs", {"action": "new", "url": f"{BASE}/p/{i}", "activate": False})
            tabs.append(opened["tabId"])
        listing = await s.ok("browser_tabs", {"action": "list"})
        assert [t["tabId"] for t in listing["tabs"]] == tabs and listing["activeTabId"] == tabs[0]

        other = await s.ok("browser_snapshot", {"tabId": tabs[2]})
        assert other["title"] == "Page 2" and other["tabId"] == tabs[2]
        await s.ok("browser_goto", {"tabId": tabs[1], "url": f"{BASE}/p/11"})
        assert (await s.ok("browser_snapshot"))["title"] == "Page 0"  # the active tab is untouched

        await s.ok("browser_tabs", {"action": "close", "tabId": tabs[1]})
        assert (await s.error("browser_snapshot", {"tabId": tabs[1]})).code == "TAB_NOT_FOUND"
        while len((await s.ok("browser_tabs", {"action": "list"}))["tabs"]) < 20:
            await s.ok("browser_tabs", {"action": "new", "activate": False})
        assert (await s.error("browser_tabs", {"action": "new"})).code == "TAB_LIMIT_REACHED"


async def test_navigation_failures(http_server: HttpServer, tokens: dict) -> None:
    async with http_session(http_server.url, tokens["alice"]) as s, browsing(s):
        started = time.monotonic()
        refused = await s.error("browser_goto", {"url": "http://127.0.0.1:9/", "timeoutMs": 20000})
        assert refused.code == "NAVIGATION_FAILED" and time.monotonic() - started < 15  # not its 20 s timeout

        started = time.monotonic()
        slow = await s.error("browser_goto", {"url": f"{BASE}/slow", "timeoutMs": 2000})
        elapsed = time.monotonic() - started
        assert slow.code == "NAVIGATION_TIMEOUT" and 1.5 < elapsed < 15, elapsed  # ends at its deadline, not later

        notfound = await s.ok("browser_goto", {"url": f"{BASE}/missing"})
        assert notfound["status"] == 404
        bad = await s.error("browser_goto", {"url": "file:///etc/passwd"})
        assert bad.code == "INVALID_PARAMETER"
        assert (await s.error("browser_snapshot", {"sessionId": "nope"})).code == "SESSION_NOT_FOUND"


async def test_the_browsers_own_pages_are_refused(http_server: HttpServer, tokens: dict) -> None:
    """chrome://hang wedged a tab for good and chrome://crash crashed it: the browser's own pages are
    refused before the browser is asked, and the tab goes on (a renderer that does crash is replaced:
    tests/unit/test_browser_tabs.py crashes one through DevTools)."""
    async with http_session(http_server.url, tokens["alice"]) as s, browsing(s):
        await s.ok("browser_goto", {"url": f"{BASE}/p/5"})
        for url in ("chrome://crash", "chrome://hang", "devtools://devtools/bundled/inspector.html"):
            refused = await s.error("browser_goto", {"url": url})
            assert refused.code == "INVALID_PARAMETER" and "the browser's own" in refused.data["recoverHint"], url
        page = await s.ok("browser_goto", {"url": f"{BASE}/p/6"})
        assert page["title"] == "Page 6"


async def test_screenshot_is_png_image_content(http_server: HttpServer, tokens: dict) -> None:
    async with http_session(http_server.url, tokens["alice"]) as s, browsing(s):
        await s.ok("browser_goto", {"url": f"{BASE}/"})
        r = await s.client.call_tool("browser_screenshot", {})
        assert not r.is_error
        images = [c for c in r.content if c.type == "image"]
        assert len(images) == 1 and images[0].mime_type == "image/png"
        png = base64.b64decode(images[0].data)
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = struct.unpack(">II", png[16:24])
        info = r.structured_content
        assert (width, height) == (info["width"], info["height"]) and info["sizeBytes"] == len(png)
        assert "data" not in info  # the bytes travel once, as image content
        full = await s.client.call_tool("browser_screenshot", {"fullPage": True})
        assert full.structured_content["height"] >= height


async def test_a_session_shown_as_a_phone_in_german(http_server: HttpServer, tokens: dict) -> None:
    async with http_session(http_server.url, tokens["alice"]) as s, browsing(s):
        phone = {"action": "create", "sessionId": "phone", "mobile": True, "locale": "de-DE"}
        made = await s.ok("browser_sessions", phone)
        listed = next(x for x in made["sessions"] if x["sessionId"] == "phone")
        assert (listed["mobile"], listed["locale"]) == (True, "de-DE")
        await s.ok("browser_goto", {"sessionId": "phone", "url": f"{BASE}/"})
        r = await s.client.call_tool("browser_screenshot", {"sessionId": "phone"})
        assert (r.structured_content["width"], r.structured_content["height"]) == (412, 839)
        # From a login profile too (`master`: other modules list the profiles they make and leave it out).
        german = {"action": "create", "sessionId": "p", "profileId": "master", "locale": "de-DE"}
        profiled = await s.ok("browser_sessions", german)
        assert next(x for x in profiled["sessions"] if x["sessionId"] == "p")["locale"] == "de-DE"
        late = await s.error("browser_sessions", {"action": "list", "mobile": True})
        assert late.code == "INVALID_PARAMETER", late.data


async def test_evaluate_is_local_only(server_env: dict, http_server: HttpServer, tokens: dict) -> None:
    async with http_session(http_server.url, tokens["alice"]) as remote:
        sid = (await remote.ok("sandbox_create"))["sandboxId"]
        try:
            refused = await remote.error("browser_evaluate", {"expression": "1 + 1"})
            assert refused.code == "TRUST_LEVEL_NOT_ALLOWED"
        finally:
            await remote.ok("sandbox_destroy", {"sandboxId": sid})
    async with stdio_session(server_env) as local:
        await local.ok("sandbox_create")
        await local.ok("browser_goto", {"url": "data:text/html,<title>t</title><p id=x>hi</p>"})
        got = await local.ok("browser_evaluate", {"expression": "document.getElementById('x').textContent"})
        assert got["value"] == "hi"
        await local.ok("sandbox_destroy")
