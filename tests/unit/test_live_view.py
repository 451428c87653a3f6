"""The live view, driven as a person drives it: its page opened in this machine's Chromium (Playwright),
clicks and keys on the canvas, the URL bar and the tab buttons — against a session of a FakeBackend
sandbox (the real agent and its own Chromium). Served by the loopback listener, as under stdio."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from aiohttp import web
from playwright.async_api import Browser, Page, async_playwright

from host.config import Settings
from host.mcp.auth import TokenStore
from host.mcp.server import http_app
from host.sandboxes.models import Caller
from host.services import Services
from host.testing.fake_backend import FakeBackend
from sandbox_image.browser.launch import LAUNCH_ARGS
from tests import login_site
from tests.unit.browser_harness import CHROMIUM
from tests.unit.test_mcp_tools import serving

pytestmark = pytest.mark.chromium

# A backstop for a frame of the new page to reach the viewer after the agent navigates, not a measure: the
# issue's 1 s is checked by the acceptance test (tests/integration/test_profiles_live.py), which runs alone
# in CI; unit tests share the machine with everything else.
FRAME_AFTER_NAVIGATION_S = 10.0
SHOWS_RED = (
    "(() => { const c = document.getElementById('screen');"
    " const [r, g, b] = c.getContext('2d').getImageData(c.width / 2, c.height / 2, 1, 1).data;"
    " return r > 200 && g < 60 && b < 60; })()"
)


@pytest.fixture(scope="module")
async def site() -> AsyncIterator[str]:
    runner = web.AppRunner(login_site.make_app())
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


@pytest.fixture(scope="module")
async def viewer() -> AsyncIterator[Browser]:
    """The person's browser."""
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=list(LAUNCH_ARGS))
        yield browser
        await browser.close()


@pytest.fixture
def services(tmp_path: Path, fake: FakeBackend) -> Services:
    return Services(
        Settings(state_dir=tmp_path / "state", namespace="unit", image="boxwright-sandbox:unit"), backend=fake
    )


async def open_view(viewer: Browser, url: str) -> Page:
    page = await viewer.new_page(viewport={"width": 1400, "height": 950})
    await page.goto(url)
    return page


async def click_canvas(page: Page, x: float, y: float) -> None:
    """Click where (x, y) of the remote viewport is drawn on the canvas."""
    box = await page.locator("#screen").bounding_box()
    assert box is not None
    await page.mouse.click(box["x"] + x * box["width"] / 1280, box["y"] + y * box["height"] / 720)


async def state(page: Page) -> dict[str, Any]:
    return await page.evaluate("window.liveView")


async def until(page: Page, expression: str, timeout_s: float = 30.0) -> None:
    """Poll a JavaScript condition from outside the page (its CSP forbids the eval that
    Playwright's wait_for_function needs: script-src 'self')."""
    deadline = anyio.current_time() + timeout_s
    while not await page.evaluate(expression):
        assert anyio.current_time() < deadline, f"not within {timeout_s} s: {expression}"
        await anyio.sleep(0.02)


async def test_a_person_sees_the_session_and_drives_it(services: Services, site: str, viewer: Browser) -> None:
    async with serving(services) as mcp:
        box = (await mcp.ok("sandbox_create"))["sandboxId"]
        sid = (await mcp.ok("browser_sessions", {"action": "create"}))["sessionId"]
        await mcp.ok("browser_goto", {"sessionId": sid, "url": f"{site}/login"})
        assert not services.live.views.watched(box)
        link = await mcp.ok("browser_live_view", {"sessionId": sid})
        assert link["url"].startswith("http://127.0.0.1:") and "#token=" in link["url"]

        page = await open_view(viewer, link["url"])
        await until(page, "window.liveView.frames > 0 && window.liveView.status !== null")
        # A person on the view keeps the sandbox from counting as idle (no tool call while they log in).
        rec = services.manager.resolve(Caller(owner="local"), box)
        assert services.live.views.watched(box) and await services.manager.activity.busy(rec)
        assert "#token" not in page.url  # the token left the address bar
        assert (await page.input_value("#url")) == f"{site}/login"

        # The person logs in on the canvas: clicks into the fields and types.
        await click_canvas(page, *login_site.EMAIL_AT)
        await page.keyboard.type(login_site.USER)
        await click_canvas(page, *login_site.PASSWORD_AT)
        await page.keyboard.type(login_site.PASSWORD)
        await page.keyboard.press("Enter")
        await until(page, "window.liveView.status.url.endsWith('/account')")
        snap = await mcp.ok("browser_snapshot", {"sessionId": sid})
        assert snap["text"].startswith("Welcome alice"), snap["text"]

        # The agent navigates: a frame of the new page (all red) reaches the canvas, nobody asking for it.
        assert not await page.evaluate(SHOWS_RED)
        await mcp.ok("browser_goto", {"sessionId": sid, "url": f"{site}/red"})
        await until(page, SHOWS_RED, FRAME_AFTER_NAVIGATION_S)

        # While a tool call acts on the session, the page says so.
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                mcp.ok, "browser_evaluate", {"sessionId": sid, "expression": "new Promise(r => setTimeout(r, 1500))"}
            )
            await until(page, "window.liveView.acting === true")
            assert await page.is_visible("#banner")
            assert "browser_evaluate" in await page.inner_text("#banner")
        await until(page, "window.liveView.acting === false")
        assert not await page.is_visible("#banner")

        # The URL bar navigates; the tab buttons follow and switch tabs.
        await page.fill("#url", f"{site}/account")
        await page.press("#url", "Enter")
        await until(page, "window.liveView.status.url.endsWith('/account')")
        await mcp.ok("browser_tabs", {"sessionId": sid, "action": "new", "url": f"{site}/login"})
        await until(page, "window.liveView.status.tabs.length === 2")
        await page.click("#tabs button[data-tab-id='tab_1']")
        await until(page, "window.liveView.status.activeTabId === 'tab_1'")
        tabs = await mcp.ok("browser_tabs", {"sessionId": sid})
        assert tabs["activeTabId"] == "tab_1"

        # The link works once: a second browser (or a wrong token) is refused.
        again = await open_view(viewer, link["url"])
        await until(again, "window.liveView.refused !== null")
        assert "already used" in (await state(again))["refused"]
        forged = await open_view(viewer, link["url"].split("#token=")[0] + "#token=forged")
        await until(forged, "window.liveView.refused !== null")
        assert "not valid" in (await state(forged))["refused"]
        assert (await state(again))["frames"] == 0 and (await state(forged))["frames"] == 0

        # A reload of the first page keeps working (its cookie), until the session is closed.
        await page.reload()
        await until(page, "window.liveView.frames > 0")
        await mcp.ok("browser_sessions", {"action": "close", "sessionId": sid})
        await until(page, "window.liveView.ended === true")
        # The view ended with its session: a reload is refused at once (it reconnected to a 404 before).
        assert services.live.views.get(link["url"].split("/live/")[1].split("#")[0]) is None
        await page.reload()
        await until(page, "window.liveView.refused !== null")
        for p in (page, again, forged):
            await p.close()
        assert not services.live.views.watched(box)


PHONE_PAGE = (
    "data:text/html,<meta name=viewport content='width=device-width'><body style='margin:0'>"
    "<button style='position:fixed;left:0;top:0;width:100vw;height:50vh;background:red;border:0'"
    " onclick=\"document.title='top'\"></button>"
    "<button style='position:fixed;left:0;bottom:0;width:100vw;height:50vh;border:0'"
    " onclick=\"document.title='bottom'\"></button>"
)


async def test_a_phone_session_is_shown_at_its_own_size(services: Services, viewer: Browser) -> None:
    """A mobile session (412×839) streams at its own size, not squeezed into the desktop's 1280×720, and a
    click on the canvas lands where the person sees it."""
    async with serving(services) as mcp:
        await mcp.ok("sandbox_create")
        sid = (await mcp.ok("browser_sessions", {"action": "create", "mobile": True}))["sessionId"]
        await mcp.ok("browser_goto", {"sessionId": sid, "url": PHONE_PAGE})
        link = await mcp.ok("browser_live_view", {"sessionId": sid})
        page = await open_view(viewer, link["url"])
        await until(page, "window.liveView.frames > 0")
        size = await page.evaluate(
            "(() => { const c = document.getElementById('screen');"
            " return [c.width, c.height, ...window.liveView.frameSize]; })()"
        )
        assert size == [412, 839, 412, 839], size  # the canvas, and the frame's own pixels
        box = await page.locator("#screen").bounding_box()
        assert box is not None
        for y, title in ((0.85, "bottom"), (0.15, "top")):
            await page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] * y)
            await until(page, f"window.liveView.status.title === '{title}'")
        await page.close()


async def test_a_link_for_a_missing_session_or_another_owners_sandbox_is_refused(services: Services) -> None:
    async with serving(services) as mcp:
        await mcp.ok("sandbox_create")
        missing = await mcp.error("browser_live_view", {"sessionId": "nope"})
        assert missing.code == "SESSION_NOT_FOUND"
        other = await mcp.error("browser_live_view", {"sandboxId": "sbx_000000000000"})
        assert other.code == "SANDBOX_NOT_FOUND"


async def test_live_routes_on_the_http_server_check_origin_and_credentials(
    services: Services, fake: FakeBackend, tmp_path: Path
) -> None:
    """Under `serve --http` the routes sit behind the same Host/Origin checks as /mcp, and need no
    bearer token (a browser cannot send one) but the view's own credentials."""
    path = tmp_path / "tokens.json"
    TokenStore.add(path, "alice")
    app, _ = http_app(services, host="127.0.0.1", port=8765, tokens=TokenStore.load(path))
    base = "http://127.0.0.1:8765"
    async with services.running(), httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base) as http:
        alice = Caller(owner="alice", session="s", trust="remote")
        rec = await services.manager.create(alice)
        view, url = await services.live.link(alice, rec.id, "default")
        assert url.startswith(f"{base}/live/{view.view_id}#token=")
        token = url.split("#token=")[1]

        page = await http.get(f"/live/{view.view_id}")
        assert page.status_code == 200 and "canvas" in page.text
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert (await http.get(f"/live/{view.view_id}", headers={"Host": "evil.example"})).status_code == 421
        assert (await http.get(f"/live/{view.view_id}", headers={"Host": "LocalHost:8765"})).status_code == 200
        session_url = f"/live/{view.view_id}/session"
        cross = await http.post(session_url, json={"token": token}, headers={"Origin": "http://127.0.0.1:9999"})
        assert cross.status_code == 403  # another local port is another origin
        no_origin = await http.post(session_url, json={"token": token})
        assert no_origin.status_code == 403
        ok = await http.post(session_url, json={"token": token}, headers={"Origin": base})
        assert ok.status_code == 200 and ok.json()["sessionId"] == "default"
        cookie = ok.headers["set-cookie"]
        assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
        assert f"path=/live/{view.view_id}".lower() in cookie.lower()
        http.cookies.clear()
        reused = await http.post(session_url, json={"token": token}, headers={"Origin": base})
        assert reused.status_code == 403 and "already used" in reused.json()["error"]
        assert (await http.post("/mcp", json={})).status_code == 401  # /mcp still needs the bearer token

        # The route needs no credentials: what it reads of a body is bounded (a chunked one too), and a view
        # that does not exist is refused before a byte is read.
        sent = 0

        async def flood():
            nonlocal sent
            for _ in range(1024):
                sent += 64 * 1024
                yield b"x" * (64 * 1024)

        big = await http.post(session_url, content=flood(), headers={"Origin": base})
        assert big.status_code == 413 and big.json()["errorCode"] == "PAYLOAD_TOO_LARGE", big.text
        assert sent <= 2 * 64 * 1024 and "link as it was given" in big.json()["recoverHint"]
        sent = 0
        unknown = await http.post("/live/nope/session", content=flood(), headers={"Origin": base})
        assert unknown.status_code == 403 and sent <= 64 * 1024, (unknown.status_code, sent)
        garbled = await http.post(session_url, content=b"{not json", headers={"Origin": base})
        assert garbled.status_code == 400 and "link as it was given" in garbled.json()["recoverHint"]


async def test_the_websocket_refuses_foreign_origins_and_bad_messages(services: Services) -> None:
    """A program speaking the live view's WebSocket directly: the view's cookie and this server's own
    origin are required; a message that is not a live view message gets an error notice, not a crash."""
    import json

    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    local = Caller(owner="local", session="s", trust="local")
    async with services.running():
        rec = await services.manager.create(local)
        view, url = await services.live.link(local, rec.id, "default")
        base, token = url.split("/live/")[0], url.split("#token=")[1]
        async with httpx.AsyncClient(base_url=base, trust_env=False) as http:
            redeemed = await http.post(f"/live/{view.view_id}/session", json={"token": token}, headers={"Origin": base})
            assert redeemed.status_code == 200
            cookie = f"bw_live={redeemed.cookies['bw_live']}"
        ws_url = base.replace("http://", "ws://") + f"/live/{view.view_id}/ws"
        for headers in ({"Cookie": cookie, "Origin": "http://127.0.0.1:1"}, {"Origin": base}, {"Cookie": "bw_live=x"}):
            with pytest.raises(InvalidStatus) as refused:
                await connect(ws_url, additional_headers=headers, proxy=None)
            assert refused.value.response.status_code == 403
        async with connect(ws_url, additional_headers={"Cookie": cookie, "Origin": base}, proxy=None) as ws:
            kinds: set[str] = set()
            await ws.send('{"type": "mouse", "event": "explode", "x": 1, "y": 1}')
            await ws.send("not json")
            await ws.send('{"type": "done"}')  # not a login's view: ignored
            await ws.send('{"type": "navigate", "url": "data:text/html,<title>direct</title>"}')
            notices = []
            navigated = False
            with anyio.fail_after(20):
                while not (navigated and "frame" in kinds):  # a frame may come before or after the status
                    message = json.loads(await ws.recv())
                    kinds.add(message["type"])
                    if message["type"] == "notice":
                        notices.append(message)
                    if message["type"] == "status" and message["title"] == "direct":
                        navigated = True
            assert {"frame", "status", "agent", "notice"} <= kinds
            assert [n["level"] for n in notices] == ["error", "error"]
            assert all("refused" in n["message"] for n in notices)
            assert not view.done.is_set()
