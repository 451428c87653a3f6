"""The sandbox browser: browser.* methods on one Playwright-driven Chromium.

Modules: launch (launch flags), engine (the Chromium process), spare (the first context and tab opened
ahead on a prewarmed sandbox), sessions (contexts and tabs),
tab (one page and its events), devtools (each page's own DevTools session: a stuck script stopped),
refs (ref_N registry), aria (snapshot parser), elements (refs and
landmarks from a snapshot), locate (selectors and their errors), navigation, leaving (the dialogs of the
page goto leaves), interaction, snapshot, screenshot, scripting, dialogs, stability, page_info, content,
service (shared plumbing), state (a login profile's storageState into and out of a session), live (the
live view's WebSocket).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from rpc import methods as m
from rpc.methods import Method
from sandbox_image.browser import (
    content,
    dialogs,
    interaction,
    navigation,
    page_info,
    screenshot,
    scripting,
    snapshot,
    stability,
    state,
)
from sandbox_image.browser.service import BrowserService, Operation
from sandbox_image.config import SandboxSettings
from sandbox_image.dispatcher import Dispatcher

__all__ = ["BrowserService", "register"]

TAB_OPERATIONS: tuple[tuple[Method[Any, Any], Operation[Any, Any]], ...] = (
    (m.BROWSER_GOTO, navigation.goto),
    (m.BROWSER_BACK, navigation.back),
    (m.BROWSER_FORWARD, navigation.forward),
    (m.BROWSER_CLICK, interaction.click),
    (m.BROWSER_TYPE, interaction.type_text),
    (m.BROWSER_PRESS_KEY, interaction.press_key),
    (m.BROWSER_HOVER, interaction.hover),
    (m.BROWSER_SELECT_OPTION, interaction.select_option),
    (m.BROWSER_SCROLL, interaction.scroll),
    (m.BROWSER_SNAPSHOT, snapshot.snapshot),
    (m.BROWSER_SCREENSHOT, screenshot.screenshot),
    (m.BROWSER_WAIT_FOR_STABLE, stability.wait_for_stable),
    (m.BROWSER_PAGE_INFO, page_info.page_info),
    (m.BROWSER_PAGE_CONTENT, content.page_content),
    (m.BROWSER_HANDLE_DIALOG, dialogs.handle_dialog),
    (m.BROWSER_EVALUATE, scripting.evaluate),
    (m.BROWSER_CONSOLE, dialogs.console),
)


def register(dispatcher: Dispatcher, settings: SandboxSettings) -> BrowserService:
    """Serve every browser.* method; the agent hooks the returned service's on_startup/on_cleanup."""
    service = BrowserService(settings)
    for method, operation in TAB_OPERATIONS:
        dispatcher.register(method, service.tab_handler(method, operation))
    dispatcher.register(m.BROWSER_TABS, service.tabs)
    dispatcher.register(m.BROWSER_SESSIONS, service.sessions_op)
    dispatcher.register(m.BROWSER_STATE_LOAD, partial(state.state_load, service))
    dispatcher.register(m.BROWSER_STATE_EXPORT, partial(state.state_export, service))
    return service
