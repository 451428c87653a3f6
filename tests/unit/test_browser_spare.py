"""The spare context and tab a prelaunched browser opens for the first session (issue 12: the first browser
call of a prewarmed pooled sandbox only navigates), against the real Chromium: the first session takes it
and looks exactly like a cold one; a first session with other options (a login profile) closes it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from sandbox_image import browser as browser_feature
from sandbox_image.config import SandboxSettings
from sandbox_image.dispatcher import Dispatcher
from tests.unit.browser_harness import CHROMIUM, BrowserDriver, Site

pytestmark = pytest.mark.chromium  # launches the host's Chromium


async def prelaunched() -> BrowserDriver:
    dispatcher = Dispatcher("agent")
    service = browser_feature.register(dispatcher, SandboxSettings(chromium=CHROMIUM, browser_prelaunch=True))
    await service.on_startup(web.Application())
    return BrowserDriver(service, dispatcher)


@pytest.fixture(name="warm")
async def warm_fixture() -> AsyncIterator[BrowserDriver]:
    """A browser service as a pooled sandbox's agent starts it, with the spare opened and waiting."""
    driver = await prelaunched()
    await driver.service.engine.spare.wait_opened()
    yield driver
    await driver.service.on_cleanup(web.Application())


async def test_the_spare_is_open_but_invisible(warm: BrowserDriver) -> None:
    engine = warm.service.engine
    assert engine.connected
    browser = await engine.browser()
    assert len(browser.contexts) == 1 and len(browser.contexts[0].pages) == 1  # it is really there
    listed = await warm.call("browser.sessions", action="list")
    assert listed["sessions"] == []  # ... and shown nowhere, as in a cold sandbox
    assert (listed["browserContexts"], listed["browserPages"]) == (0, 0)


async def test_the_first_session_takes_the_spare_and_looks_cold(warm: BrowserDriver, site: Site) -> None:
    spare_context = (await warm.service.engine.browser()).contexts[0]
    tabs = await warm.call("browser.tabs")
    assert tabs["tabs"] == []  # like a cold sandbox: no tab before the first call that needs one
    answer = await warm.call("browser.goto", url=site.url("/"))
    assert answer["tabId"] == "tab_1" and answer["status"] == 200
    session = warm.service.sessions.get(None)
    assert session.context is spare_context  # taken, not a second context made beside it
    page = session.tab("tab_1").page
    assert page is not None
    # Its history is a cold tab's (nothing was loaded in it before): compare with a session of its own.
    await warm.call("browser.sessions", action="create", sessionId="cold")
    await warm.call("browser.goto", sessionId="cold", url=site.url("/"))
    cold_history = await warm.call("browser.evaluate", sessionId="cold", expression="history.length")
    assert await page.evaluate("history.length") == cold_history["value"]
    await warm.call("browser.sessions", action="close", sessionId="cold")
    assert await page.evaluate("() => [window.innerWidth, window.innerHeight]") == [1280, 720]  # the viewport
    assert [c["name"] for c in await spare_context.cookies()] == []
    tabs = await warm.call("browser.tabs")
    assert [(t["tabId"], t["url"], t["active"]) for t in tabs["tabs"]] == [("tab_1", site.url("/"), True)]
    listed = await warm.call("browser.sessions", action="list")
    assert [s["sessionId"] for s in listed["sessions"]] == ["default"]
    assert (listed["browserContexts"], listed["browserPages"]) == (1, 1)
    assert warm.service.engine.spare.is_spare(spare_context) is False


async def test_a_first_session_with_a_login_profile_closes_the_spare(warm: BrowserDriver, site: Site) -> None:
    browser = await warm.service.engine.browser()
    spare_context = browser.contexts[0]
    cookie = {"name": "flavour", "value": "lemon", "domain": "127.0.0.1", "path": "/", "expires": -1}
    cookie |= {"httpOnly": False, "secure": False, "sameSite": "Lax"}
    state = {"cookies": [cookie], "origins": []}
    await warm.call("browser.state_load", sessionId="alice", storageState=state)
    await warm.call("browser.goto", sessionId="alice", url=site.url("/show-cookie"))
    shown = await warm.call("browser.evaluate", sessionId="alice", expression="document.cookie")
    assert shown["value"] == "flavour=lemon"  # the profile's context, made with its storageState
    assert spare_context not in browser.contexts  # closed, not left beside the real session
    assert warm.service.sessions.get("alice").context is not spare_context
    listed = await warm.call("browser.sessions", action="list")
    assert (listed["browserContexts"], listed["browserPages"]) == (1, 1)
    # The default session made later gets a fresh context of its own (there is no spare any more).
    await warm.call("browser.goto", url="about:blank")
    assert len(browser.contexts) == 2


async def test_the_spare_survives_nothing_of_a_dead_browser(warm: BrowserDriver, site: Site) -> None:
    engine = warm.service.engine
    browser = await engine.browser()
    await browser.close()  # as if Chromium died: the spare goes with it
    answer = await warm.call("browser.goto", url=site.url("/"))  # a new browser, a fresh context
    assert answer["tabId"] == "tab_1" and answer["status"] == 200
    listed = await warm.call("browser.sessions", action="list")
    assert (listed["browserContexts"], listed["browserPages"]) == (1, 1)


async def test_a_first_call_during_the_prewarm_waits_for_the_spare_and_owns_it(site: Site) -> None:
    driver = await prelaunched()  # no waiting: the call comes while Chromium and the spare are still opening
    try:
        answer = await driver.call("browser.goto", url=site.url("/"))
        assert answer["tabId"] == "tab_1" and answer["status"] == 200
        browser = await driver.service.engine.browser()
        assert browser.contexts == [driver.service.sessions.get(None).context]  # the spare, not a second one
        listed = await driver.call("browser.sessions", action="list")
        assert (listed["browserContexts"], listed["browserPages"]) == (1, 1)  # counted as the session's now
    finally:
        await driver.service.on_cleanup(web.Application())
