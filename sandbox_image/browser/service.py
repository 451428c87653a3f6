"""The browser as the agent serves it: engine + sessions, and the plumbing every browser.* call shares.

A tab operation resolves its tab (default session and active tab unless told otherwise; an explicit
tabId never changes the active tab), holds the tab's lock for its whole duration, makes sure the tab
has a live page, and turns any Playwright failure that the operation did not translate itself into
a clean error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from aiohttp import web

from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode, invalid_parameter
from rpc.methods import Method
from rpc.models.base import Result
from rpc.models.browser import SessionInfo, SessionsParams, SessionsResult, TabInfo, TabParams, TabsParams, TabsResult
from sandbox_image.browser.engine import Engine
from sandbox_image.browser.errors import PlaywrightError, PlaywrightTimeoutError, execution_error
from sandbox_image.browser.navigation import open_url
from sandbox_image.browser.sessions import Session, SessionManager
from sandbox_image.browser.tab import Tab
from sandbox_image.browser.timeouts import Budget
from sandbox_image.browser.urls import check_url
from sandbox_image.config import SandboxSettings
from sandbox_image.dispatcher import Handler

P = TypeVar("P", bound=TabParams)
R = TypeVar("R", bound=Result)
# An operation that ends in one of these may have left a navigation waiting (Tab.stop_waiting_navigation).
TIMEOUT_CODES = frozenset({ErrorCode.NAVIGATION_TIMEOUT, ErrorCode.OPERATION_TIMEOUT})
Operation = Callable[[Tab, P, Budget], Awaitable[R]]
# What a timed-out call keeps of its deadline to send its answer after looking at the page.
ANSWER_S = 0.05
BUSY_PAGE_HINT = (
    "the page ran a script that never returned (a loop that does not end) and blocked everything else; the "
    "script was stopped and the tab answers again, but the page may start it again: go to another page, or "
    "close the tab (browser_tabs close)"
)


def _required(field: str, action: str) -> BoxwrightError:
    return invalid_parameter(field, f"required for action {action!r}", message=f"action {action!r} needs {field}")


async def _after_timeout(tab: Tab, timed_out: BoxwrightError, deadline: Deadline) -> BoxwrightError:
    """A timed-out operation leaves the tab usable: a navigation still waiting for its document is
    stopped, and a page stuck in a script of its own has that script stopped (the timeout says so)."""
    tab.stop_waiting_navigation()
    stopped = False
    if not timed_out.details.get("scriptStopped"):  # browser.evaluate stops its own script
        stopped = await tab.unstick(deadline.remaining() - ANSWER_S)
    if not stopped:
        return timed_out
    return BoxwrightError(
        timed_out.code,
        f"{timed_out.message}: the page was stuck in a script of its own, which was stopped",
        hint=BUSY_PAGE_HINT,
        details={**timed_out.details, "scriptStopped": True},
    )


class BrowserService:
    def __init__(self, settings: SandboxSettings) -> None:
        self.settings = settings
        self.engine = Engine(settings)
        self.sessions = SessionManager(self.engine)

    # -- agent lifecycle (aiohttp signals) ---------------------------------------------------
    async def on_startup(self, _app: web.Application) -> None:
        if self.settings.browser_prelaunch:
            self.engine.prelaunch()

    async def on_cleanup(self, _app: web.Application) -> None:
        await self.engine.close()

    # -- tab operations ----------------------------------------------------------------------
    async def _tab(self, params: TabParams) -> Tab:
        session = self.sessions.get(params.sessionId)
        return session.tab(params.tabId) if params.tabId else await session.active_tab()

    async def perform(self, name: str, tab: Tab, operation: Operation[P, R], params: P, deadline: Deadline) -> R:
        """Run one operation on a given tab: its lock, a live page, and Playwright failures as clean errors.

        The RPC handlers and the template runs (sandbox_image/tasks) both come through here.
        """
        budget = Budget.of(deadline, getattr(params, "timeoutMs", None))
        async with tab.lock:
            try:
                await tab.ensure_page()
                return await operation(tab, params, budget)
            except asyncio.CancelledError:  # the host gave up on the call: a navigation it began goes too
                tab.stop_waiting_navigation()
                raise
            except BoxwrightError as exc:
                if exc.code not in TIMEOUT_CODES:
                    raise
                raise await _after_timeout(tab, exc, deadline) from None
            except PlaywrightTimeoutError:
                timeout = BoxwrightError(
                    ErrorCode.OPERATION_TIMEOUT,
                    f"{name} did not finish within {budget.total_ms} ms",
                    details={"method": name, "timeoutMs": budget.total_ms},
                )
                raise await _after_timeout(tab, timeout, deadline) from None
            except PlaywrightError as exc:
                if not self.engine.connected:
                    raise BoxwrightError(
                        ErrorCode.PAGE_CRASHED,
                        "the browser died during the call; the next call starts a new one",
                        details={"tabId": tab.id},
                    ) from None
                raise execution_error(name, exc, tabId=tab.id) from None

    def tab_handler(self, method: Method[P, R], operation: Operation[P, R]) -> Handler[P, R]:
        async def handle(params: P, deadline: Deadline) -> R:
            return await self.perform(method.name, await self._tab(params), operation, params, deadline)

        return handle

    # -- tabs and sessions -------------------------------------------------------------------
    async def _tabs_result(self, session: Session, acted: str | None) -> TabsResult:
        tabs = list(session.tabs.values())
        titles = await asyncio.gather(*(tab.title() for tab in tabs))
        return TabsResult(
            sessionId=session.id,
            tabs=[
                TabInfo(tabId=tab.id, url=tab.url, title=title, active=tab.id == session.active_id)
                for tab, title in zip(tabs, titles, strict=True)
            ],
            activeTabId=session.active_id,
            tabId=acted,
        )

    async def tabs(self, params: TabsParams, deadline: Deadline) -> TabsResult:
        session = self.sessions.get(params.sessionId)
        acted: str | None = None
        if params.action == "new":
            url = check_url(params.url) if params.url else None
            tab = await session.open_tab(activate=params.activate)
            acted = tab.id
            if url is not None:
                async with tab.lock:
                    try:
                        await open_url(tab, url, "load", Budget.of(deadline, params.timeoutMs))
                    except BoxwrightError as exc:
                        raise BoxwrightError(
                            exc.code,
                            f"{exc.message} (the new tab {tab.id} stays open)",
                            hint=exc.hint,
                            details={**exc.details, "tabId": tab.id},
                        ) from None
        elif params.action == "close":
            if params.tabId:
                tab = session.tab(params.tabId)
            elif session.active_id:
                tab = session.tab(session.active_id)
            else:
                raise _required("tabId", "close")
            await session.close_tab(tab)
            acted = tab.id
        elif params.action == "select":
            if not params.tabId:
                raise _required("tabId", "select")
            acted = session.select(params.tabId).id
        return await self._tabs_result(session, acted)

    def sessions_result(self, acted: str | None) -> SessionsResult:
        return SessionsResult(
            sessions=[
                SessionInfo(
                    sessionId=s.id,
                    tabCount=len(s.tabs),
                    isDefault=s.is_default,
                    profileId=s.profile_id,
                    mobile=s.options.mobile,
                    locale=s.options.locale,
                    timezone=s.options.timezone,
                    geolocation=s.options.geolocation,
                    skipTlsVerification=s.options.skipTlsVerification,
                    userAgent=s.options.userAgent,
                    httpAuthOrigin=s.options.httpAuth.origin if s.options.httpAuth else None,
                    proxyServer=s.options.proxy.server if s.options.proxy else None,
                    headersOrigin=s.options.headersOrigin,
                    headerNames=list(s.options.headers) if s.options.headers else None,
                    blockAds=s.options.blockAds,
                    blockResources=s.options.blockResources,
                    blockedRequests=s.blocked_requests,
                    blockCookieBanners=s.options.blockCookieBanners,
                    cookieBanners=list(s.consent.refused) if s.consent is not None else [],
                )
                for s in self.sessions.sessions.values()
            ],
            sessionId=acted,
            browserContexts=self.engine.open_counts()[0],
            browserPages=self.engine.open_counts()[1],
        )

    async def sessions_op(self, params: SessionsParams, _deadline: Deadline) -> SessionsResult:
        acted: str | None = None
        if params.action != "create":  # how a session opens pages is set when it is made
            for field in params.changed():
                raise invalid_parameter(field, "only with action 'create'", hint=f"omit {field}, or use 'create'")
        if params.action == "create":
            acted = self.sessions.create(params.sessionId, options=params.context_only()).id
        elif params.action == "close":
            if not params.sessionId:
                raise _required("sessionId", "close")
            await self.sessions.close(params.sessionId)
            acted = params.sessionId
        return self.sessions_result(acted)
