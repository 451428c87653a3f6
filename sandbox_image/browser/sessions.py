"""Sessions (isolated BrowserContexts: own cookies and storage) and their tabs.

The default session exists on demand; named ones are created with browser.sessions. A session's
context is made on its first tab, so creating a session costs nothing until it is used. Tabs get
ids `tab_1`, `tab_2`… never reused within the session; pages the site opens (window.open,
target=_blank) become tabs too, and count toward MAX_TABS_PER_SESSION (extras are closed).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.browser import MAX_SESSIONS, MAX_TABS_PER_SESSION, ContextOptions
from sandbox_image.browser.background import close_when_done, quietly, spawn
from sandbox_image.browser.blocking import Blocked
from sandbox_image.browser.consent import Consent
from sandbox_image.browser.engine import Engine
from sandbox_image.browser.tab import Tab

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page

log = logging.getLogger("boxwright.agent.browser")

DEFAULT_SESSION = "default"


def _tab_limit(session_id: str) -> BoxwrightError:
    return BoxwrightError(
        ErrorCode.TAB_LIMIT_REACHED,
        f"session {session_id!r} already has {MAX_TABS_PER_SESSION} tabs",
        details={"sessionId": session_id, "maxTabs": MAX_TABS_PER_SESSION},
    )


class Session:
    def __init__(
        self,
        session_id: str,
        engine: Engine,
        *,
        storage_state: dict[str, Any] | None = None,
        profile_id: str | None = None,
        options: ContextOptions | None = None,
    ) -> None:
        self.id = session_id
        self.engine = engine
        # A phone's view, a language, certificates not checked (scrape's or browser_sessions' own).
        self.options = options or ContextOptions()
        # A login profile's storageState, loaded into the context when it is made (never logged).
        self.storage_state = storage_state
        self.profile_id = profile_id
        self.tabs: dict[str, Tab] = {}
        self.active_id: str | None = None
        self.closed = False
        self._next_tab = 1
        self._context: BrowserContext | None = None
        self._first_page: Page | None = None  # opened with the context (the spare's), not yet a tab
        self._context_task: asyncio.Task[BrowserContext] | None = None
        self._blocked: Blocked | None = None  # when the options block requests (browser.blocking)
        self._open_lock = asyncio.Lock()  # the tab limit check and the page creation, together

    @property
    def is_default(self) -> bool:
        return self.id == DEFAULT_SESSION

    # -- context and pages -------------------------------------------------------------------
    async def _new_context(self) -> BrowserContext:
        context, self._first_page, self._blocked = await self.engine.new_context(self.storage_state, self.options)
        if self.closed:
            await quietly(context.close())
            raise BoxwrightError(ErrorCode.SESSION_NOT_FOUND, f"session {self.id!r} was closed")
        self._context = context
        return context

    async def new_page(self) -> Page:
        """A page in this session's context (created, with the browser, if need be)."""
        context = self._context
        if context is None:
            if self._context_task is None or self._context_task.done():
                self._context_task = asyncio.get_running_loop().create_task(self._new_context())
            context = await asyncio.shield(self._context_task)
        page, self._first_page = self._first_page, None
        if page is not None and not page.is_closed():  # the spare's page (engine.new_context)
            return page
        task = asyncio.get_running_loop().create_task(context.new_page())
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(close_when_done)
            raise

    @property
    def blocked_requests(self) -> int:
        """Requests its context did not make (blockAds, blockResources)."""
        return self._blocked.count if self._blocked is not None else 0

    @property
    def consent(self) -> Consent | None:
        """What its consent script did (blockCookieBanners), once its context is made."""
        return self._blocked.consent if self._blocked is not None else None

    @property
    def context(self) -> BrowserContext | None:
        """The session's context, once its first page made it."""
        return self._context

    # -- tabs --------------------------------------------------------------------------------
    def _add(self, page: Page) -> Tab:
        tab = Tab(f"tab_{self._next_tab}", self, page)
        self._next_tab += 1
        self.tabs[tab.id] = tab
        return tab

    async def _open_locked(self) -> Tab:
        if len(self.tabs) >= MAX_TABS_PER_SESSION:
            raise _tab_limit(self.id)
        page = await self.new_page()
        if self.closed or len(self.tabs) >= MAX_TABS_PER_SESSION:  # popups took the last slots meanwhile
            spawn(quietly(page.close()))
            if self.closed:
                raise BoxwrightError(ErrorCode.SESSION_NOT_FOUND, f"session {self.id!r} was closed")
            raise _tab_limit(self.id)
        return self._add(page)

    async def open_tab(self, *, activate: bool) -> Tab:
        async with self._open_lock:
            tab = await self._open_locked()
        if activate:
            self.active_id = tab.id
        return tab

    async def active_tab(self) -> Tab:
        """The active tab, opened on demand when there is none."""
        async with self._open_lock:
            tab = self.tabs.get(self.active_id) if self.active_id else None
            if tab is None:
                tab = await self._open_locked()
                self.active_id = tab.id
            return tab

    def tab(self, tab_id: str) -> Tab:
        tab = self.tabs.get(tab_id)
        if tab is None:
            raise BoxwrightError(
                ErrorCode.TAB_NOT_FOUND,
                f"no tab {tab_id!r} in session {self.id!r}",
                details={"sessionId": self.id, "tabId": tab_id, "openTabs": list(self.tabs)},
            )
        return tab

    def adopt_popup(self, page: Page) -> None:
        """A page the site opened becomes a tab, unless the session is full (then it is closed)."""
        if self.closed or len(self.tabs) >= MAX_TABS_PER_SESSION:
            log.info("closing a popup in session %s: already %d tabs", self.id, len(self.tabs))
            spawn(quietly(page.close()))
            return
        tab = self._add(page)
        log.info("popup opened as %s/%s", self.id, tab.id)

    def forget(self, tab: Tab) -> None:
        """Drop a tab from the session (closed by us or by its page)."""
        tab.mark_closed()
        self.tabs.pop(tab.id, None)
        if self.active_id == tab.id:
            self.active_id = next(reversed(self.tabs), None)

    async def close_tab(self, tab: Tab) -> None:
        page = tab.page
        self.forget(tab)
        if page is not None:
            await quietly(page.close())

    def select(self, tab_id: str) -> Tab:
        tab = self.tab(tab_id)
        self.active_id = tab.id
        return tab

    # -- lifecycle ---------------------------------------------------------------------------
    def browser_lost(self) -> None:
        self._context = None
        self._first_page = None
        self._context_task = None
        for tab in self.tabs.values():
            tab.mark_crashed()

    async def close(self) -> None:
        self.closed = True
        for tab in list(self.tabs.values()):
            self.forget(tab)
        context, self._context = self._context, None
        if context is not None:
            await quietly(context.close())


class SessionManager:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        engine.on_disconnect = self._browser_lost
        self.sessions: dict[str, Session] = {}
        self._next_session = 1

    def get(self, session_id: str | None) -> Session:
        """The named session, or the default one (created on demand) when session_id is None."""
        session_id = session_id or DEFAULT_SESSION
        session = self.sessions.get(session_id)
        if session is not None:
            return session
        if session_id == DEFAULT_SESSION:
            session = self.sessions[DEFAULT_SESSION] = Session(DEFAULT_SESSION, self.engine)
            return session
        raise BoxwrightError(
            ErrorCode.SESSION_NOT_FOUND,
            f"no browser session {session_id!r}",
            details={"sessionId": session_id, "sessions": list(self.sessions)},
        )

    def create(
        self,
        session_id: str | None,
        *,
        storage_state: dict[str, Any] | None = None,
        profile_id: str | None = None,
        options: ContextOptions | None = None,
    ) -> Session:
        """A new named session; at most MAX_SESSIONS open at once (the default one counts too). With a
        storage_state (a login profile's snapshot), its context starts with those cookies and storage; `options`
        as for scrape (a phone's view, a language, certificates not checked)."""
        if session_id is not None and session_id in self.sessions:
            raise BoxwrightError(
                ErrorCode.INVALID_PARAMETER,
                f"session {session_id!r} already exists",
                hint="pick another sessionId, or use the existing session",
                details={"sessionId": session_id},
            )
        if len(self.sessions) >= MAX_SESSIONS:
            raise BoxwrightError(
                ErrorCode.SESSION_LIMIT_REACHED,
                f"{len(self.sessions)} browser sessions are open (at most {MAX_SESSIONS})",
                details={"maxSessions": MAX_SESSIONS, "sessions": list(self.sessions)},
            )
        while session_id is None:
            candidate = f"session_{self._next_session}"
            self._next_session += 1
            if candidate not in self.sessions:
                session_id = candidate
        session = Session(session_id, self.engine, storage_state=storage_state, profile_id=profile_id, options=options)
        self.sessions[session_id] = session
        log.info("browser session %s created%s", session_id, " from a login profile" if storage_state else "")
        return session

    async def close(self, session_id: str) -> None:
        session = self.sessions.pop(session_id, None)
        if session is None:
            raise BoxwrightError(
                ErrorCode.SESSION_NOT_FOUND,
                f"no browser session {session_id!r}",
                details={"sessionId": session_id, "sessions": list(self.sessions)},
            )
        await session.close()
        log.info("browser session %s closed", session_id)

    def _browser_lost(self) -> None:
        for session in self.sessions.values():
            session.browser_lost()
