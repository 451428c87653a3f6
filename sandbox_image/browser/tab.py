"""One tab: a Playwright page with a stable id, its ref registry, dialogs, console and network state.

Everything the page tells us arrives as events and is recorded here: navigations bump the ref epoch,
dialogs wait for browser.handle_dialog, a crash marks the tab so the call that meets it answers
PAGE_CRASHED and the next one gets a fresh page under the same tab id. `guard` awaits a Playwright
call but gives up as soon as the page crashes, closes, or opens a dialog, so no call hangs on a
page that can no longer answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urldefrag

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.browser import ConsoleMessage, DialogInfo, FailedRequest
from sandbox_image.browser.background import consume, quietly, spawn
from sandbox_image.browser.devtools import PageDevtools
from sandbox_image.browser.errors import PlaywrightError, clean_message, is_closed
from sandbox_image.browser.refs import RefRegistry
from sandbox_image.browser.urls import ERROR_PAGE

if TYPE_CHECKING:
    from playwright.async_api import ConsoleMessage as PlaywrightConsoleMessage
    from playwright.async_api import Dialog, Frame, Page, Request, Response

    from sandbox_image.browser.sessions import Session

log = logging.getLogger("boxwright.agent.browser")

T = TypeVar("T")

CONSOLE_BUFFER = 500
FAILED_REQUEST_BUFFER = 200
MAX_ENTRY_TEXT = 2000
MAX_TITLE = 500
# A page whose main thread is stuck never answers title(): bounded, but not so tightly that a loaded
# machine (a busy renderer answers in seconds) returns an empty title for a page that has one.
TITLE_TIMEOUT_S = 3.0
# Requests open longer than this (long polls, streams) do not keep a page from counting as quiet.
LONG_REQUEST_S = 10.0
MAX_TRACKED_REQUESTS = 2000
# How long a call that failed with "target closed/crashed" waits for the event that says which.
STATE_EVENT_GRACE_S = 0.5
# A page's "close" event also comes before a browser disconnect; wait this long before deciding which.
CLOSE_DECISION_S = 0.25
# Stopping a navigation that waits for its document (Tab.stop_waiting_navigation) answers at once.
STOP_S = 2.0


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def a_dialog(kind: str) -> str:
    """'an alert dialog', 'a confirm dialog', 'a beforeunload dialog'."""
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind} dialog"


def cap(text: str, limit: int = MAX_ENTRY_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class PendingDialog:
    dialog: Dialog
    info: DialogInfo


def _answer_as_leaving(pending: PendingDialog) -> Coroutine[Any, Any, None]:
    leave = pending.dialog.accept() if pending.info.type == "beforeunload" else pending.dialog.dismiss()
    return quietly(leave)


@dataclass(frozen=True)
class NavigationMark:
    """Where the tab stood before an action, to tell afterwards whether the action navigated."""

    epoch: int
    navigation_requests: int
    error_pages: int


def same_document(before: str, after: str) -> bool:
    """Whether a main-frame navigation from `before` to `after` stayed in its document: a move to another
    fragment of the same address is one (Chromium scrolls, nothing loads), so the dialogs the document
    has shown still count. Anything else counts as a new document (history.pushState is taken for one)."""
    return bool(before) and before != after and "#" in after and urldefrag(before).url == urldefrag(after).url


class Tab:
    def __init__(self, tab_id: str, session: Session, page: Page) -> None:
        self.id = tab_id
        self.session = session
        self.lock = asyncio.Lock()  # one operation at a time per tab; different tabs run in parallel
        self.refs = RefRegistry()
        self.page: Page | None = None
        self.closed = False
        self.crashed = False
        self.dialogs: deque[PendingDialog] = deque()
        self.console: deque[ConsoleMessage] = deque(maxlen=CONSOLE_BUFFER)
        self.failed_requests: deque[FailedRequest] = deque(maxlen=FAILED_REQUEST_BUFFER)
        self.inflight: dict[Request, float] = {}
        self.last_network_activity = time.monotonic()
        self.navigation_requests = 0
        self.navigating: Request | None = None  # the main frame's navigation while its answer has not come
        self.error_pages = 0  # Chromium error pages the main frame has shown (a failed navigation's)
        self.main_status: int | None = None  # HTTP status of the main document, when it came over HTTP
        self.dismiss_dialogs = False  # dismiss dialogs at once instead of waiting for browser.handle_dialog (scrape)
        self.document_dialogs = 0  # dialogs the main frame's current document has opened (see leaving)
        self._document_url = ""  # the main frame's address when it last navigated
        self._title = ""
        self._broken = asyncio.Event()  # crashed or closed
        self._dialog_opened = asyncio.Event()
        self._error_page = asyncio.Event()
        self._settling: set[asyncio.Task[Any]] = set()  # see stop_waiting_navigation and unstick
        self.devtools: PageDevtools | None = None
        self.stopped_scripts = 0  # scripts of the current document stopped by unstick
        self._attach(page)

    # -- the page and its events -------------------------------------------------------------
    def _attach(self, page: Page) -> None:
        self.page = page
        self.devtools = PageDevtools(page)
        page.on("framenavigated", partial(self._on_navigated, page))
        page.on("dialog", partial(self._on_dialog, page))
        page.on("crash", partial(self._on_crash, page))
        page.on("close", partial(self._on_close, page))
        page.on("popup", partial(self._on_popup, page))
        page.on("console", partial(self._on_console, page))
        page.on("pageerror", partial(self._on_pageerror, page))
        page.on("request", partial(self._on_request, page))
        page.on("requestfinished", partial(self._on_request_done, page))
        page.on("requestfailed", partial(self._on_request_failed, page))
        page.on("response", partial(self._on_response, page))

    def _on_navigated(self, page: Page, frame: Frame) -> None:
        if page is not self.page:
            return
        self.refs.advance()
        if frame is page.main_frame:
            self._title = ""
            if not same_document(self._document_url, frame.url):
                self.document_dialogs = 0
                self.stopped_scripts = 0
            self._document_url = frame.url
            if frame.url.startswith(ERROR_PAGE):
                self.error_pages += 1
                self._error_page.set()

    def _on_dialog(self, page: Page, dialog: Dialog) -> None:
        if page is not self.page or self.dismiss_dialogs:
            spawn(quietly(dialog.dismiss()))
            return
        info = DialogInfo(type=dialog.type, message=cap(dialog.message), defaultValue=cap(dialog.default_value) or None)
        self.dialogs.append(PendingDialog(dialog, info))
        self.document_dialogs += 1
        self._dialog_opened.set()

    def _on_crash(self, page: Page, _page: Page) -> None:
        if page is self.page:
            log.warning("the page of %s/%s crashed", self.session.id, self.id)
            self.mark_crashed()

    def _on_close(self, page: Page, _page: Page) -> None:
        if page is self.page and not self.closed:
            asyncio.get_running_loop().call_later(CLOSE_DECISION_S, self._page_gone, page)

    def _page_gone(self, page: Page) -> None:
        if page is not self.page or self.closed or self.crashed:
            return
        if not self.session.engine.connected:
            self.mark_crashed()
        else:  # window.close() by the page itself
            log.info("%s/%s was closed by its page", self.session.id, self.id)
            self.session.forget(self)

    def _on_popup(self, page: Page, popup: Page) -> None:
        if page is self.page:
            self.session.adopt_popup(popup)

    def _on_console(self, page: Page, message: PlaywrightConsoleMessage) -> None:
        if page is not self.page:
            return
        where = message.location
        location = cap(f"{where['url']}:{where.get('lineNumber', 0)}", 500) if where and where.get("url") else None
        self.console.append(
            ConsoleMessage(type=message.type, text=cap(message.text), location=location, time=now_iso())
        )

    def _on_pageerror(self, page: Page, error: PlaywrightError) -> None:
        if page is self.page:
            self.console.append(ConsoleMessage(type="pageerror", text=cap(clean_message(error)), time=now_iso()))

    def _on_request(self, page: Page, request: Request) -> None:
        if page is not self.page:
            return
        now = time.monotonic()
        if len(self.inflight) < MAX_TRACKED_REQUESTS:
            self.inflight[request] = now
        self.last_network_activity = now
        try:
            if request.is_navigation_request() and request.frame is page.main_frame:
                self.navigation_requests += 1
                self.navigating = request
        except PlaywrightError:  # service-worker requests have no frame
            pass

    def _on_request_done(self, page: Page, request: Request) -> None:
        if page is self.page:
            self.inflight.pop(request, None)
            self.last_network_activity = time.monotonic()
            if request is self.navigating:
                self.navigating = None

    def _on_request_failed(self, page: Page, request: Request) -> None:
        if page is not self.page:
            return
        self._on_request_done(page, request)
        failure = cap(request.failure or "failed", 300)
        self.failed_requests.append(
            FailedRequest(url=cap(request.url), method=request.method, failure=failure, time=now_iso())
        )

    def _on_response(self, page: Page, response: Response) -> None:
        if page is not self.page:
            return
        request = response.request
        if request is self.navigating:
            self.navigating = None
        try:
            if request.is_navigation_request() and request.frame is page.main_frame:
                self.main_status = response.status
        except PlaywrightError:
            pass
        if response.status >= 400:
            self.failed_requests.append(
                FailedRequest(
                    url=cap(response.url),
                    method=request.method,
                    failure=cap(f"HTTP {response.status} {response.status_text}".strip(), 300),
                    status=response.status,
                    time=now_iso(),
                )
            )

    # -- state -------------------------------------------------------------------------------
    def mark_crashed(self) -> None:
        """The page (or the whole browser) died: the next call on this tab reports PAGE_CRASHED."""
        if not self.closed:
            self.crashed = True
            self._broken.set()

    def mark_closed(self) -> None:
        self.closed = True
        self._broken.set()

    def _drop_page(self) -> None:
        """Drop the page (dead, or stuck for good); the tab keeps its id and gets a fresh page on its next call."""
        old, self.page = self.page, None
        self.devtools = None
        self.stopped_scripts = 0
        self.crashed = False
        self._broken.clear()
        self.dialogs.clear()
        self._dialog_opened.clear()
        self.inflight.clear()
        self.navigating = None
        self.main_status = None
        self._title = ""
        self.refs.advance()
        if old is not None:
            spawn(quietly(old.close()))

    def check(self, *, dialogs_ok: bool = False) -> Page:
        """The live page, or the error this tab's state calls for."""
        if self.closed:
            raise BoxwrightError(
                ErrorCode.TAB_NOT_FOUND,
                f"{self.id} was closed",
                details={"sessionId": self.session.id, "tabId": self.id},
            )
        if self.crashed:
            self._drop_page()
            raise BoxwrightError(
                ErrorCode.PAGE_CRASHED,
                f"the page in {self.id} crashed (or the browser died); the tab now holds a fresh blank page",
                details={"tabId": self.id},
            )
        if self.dialogs and not dialogs_ok:
            raise self.dialog_error()
        if self.page is None:
            raise BoxwrightError(ErrorCode.PAGE_CRASHED, f"{self.id} has no page", details={"tabId": self.id})
        return self.page

    async def ensure_page(self) -> Page:
        """Called first by every operation: reports a crash once, then gives the tab a fresh page."""
        if self._settling:  # a navigation or a script being stopped after a timeout: let that end
            settling, self._settling = self._settling, set()
            await asyncio.wait(settling, timeout=STOP_S)
        if self.page is None and not self.closed and not self.crashed:
            page = await self.session.new_page()
            if self.closed:  # closed while the page was being made
                spawn(quietly(page.close()))
            else:
                self._attach(page)
                self.refs.advance()
        return self.check(dialogs_ok=True)

    def dialog_error(self) -> BoxwrightError:
        info = self.dialogs[0].info
        return BoxwrightError(
            ErrorCode.DIALOG_PENDING,
            f"{a_dialog(info.type)} is open on {self.id}: {cap(info.message, 200)!r}",
            details={"tabId": self.id, "dialog": info.model_dump()},
        )

    def dialog_handled(self) -> None:
        if not self.dialogs:
            self._dialog_opened.clear()

    def _take_dialog(self, dialog: Dialog) -> PendingDialog | None:
        pending = next((p for p in self.dialogs if p.dialog is dialog), None)
        if pending is not None:
            self.dialogs.remove(pending)
            self.dialog_handled()
        return pending

    def leave_dialog(self, dialog: Dialog) -> bool:
        """Answer a pending dialog as a user leaving its page would (OK to a beforeunload — dismissed, it
        would cancel the navigation — dismiss to anything else), in the background; False when the tab
        does not hold it (a scrape tab answers every dialog itself)."""
        pending = self._take_dialog(dialog)
        if pending is not None:
            spawn(_answer_as_leaving(pending))
        return pending is not None

    def drop_dialog(self, dialog: Dialog) -> None:
        """Forget a dialog Chromium closes itself (its document is gone), without answering it."""
        self._take_dialog(dialog)

    async def leave_dialogs(self) -> None:
        """Answer every dialog open now, as the page is being left (see leave_dialog)."""
        while self.dialogs:
            pending = self.dialogs.popleft()
            self.dialog_handled()
            await _answer_as_leaving(pending)

    async def guard(self, aw: Awaitable[T], *, dialogs_ok: bool = False) -> T:
        """Await a Playwright call unless the page crashes, closes or (unless dialogs_ok) opens a dialog."""
        try:
            self.check(dialogs_ok=dialogs_ok)
        except BoxwrightError:
            if asyncio.iscoroutine(aw):
                aw.close()  # never started: spare asyncio's "never awaited" warning
            raise
        task = asyncio.ensure_future(aw)
        watched = [asyncio.ensure_future(self._broken.wait())]
        if not dialogs_ok:
            watched.append(asyncio.ensure_future(self._dialog_opened.wait()))
        try:
            await asyncio.wait([task, *watched], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in watched:
                waiter.cancel()
            if not task.done():
                task.cancel()
                task.add_done_callback(consume)
        if not task.done():  # interrupted: say by what
            self.check(dialogs_ok=dialogs_ok)
            raise BoxwrightError(ErrorCode.EXECUTION_ERROR, f"the operation on {self.id} was interrupted")
        try:
            return task.result()
        except PlaywrightError as exc:
            if "Target crashed" in str(exc):
                self.mark_crashed()
            if is_closed(exc):
                await self.await_state_event(STATE_EVENT_GRACE_S)
                self.check(dialogs_ok=True)
            raise

    def stop_waiting_navigation(self) -> None:
        """After a timeout: stop a navigation of the main frame still waiting for its document, as the
        browser's Stop button does. While one waits Playwright runs nothing on the page (every snapshot,
        script or screenshot waits for the new document), so a site that never answers left the tab
        stuck until it was closed; stopped, the tab shows the page it showed before. Done in the
        background — the timeout goes back to the caller at once, within its deadline — and the tab's
        next operation waits for it first (ensure_page)."""
        if self.navigating is None or self.devtools is None or self.closed or self.crashed:
            return
        self.navigating = None
        self._settling.add(spawn(self.devtools.stop_loading(STOP_S)))

    async def unstick(self, within_s: float) -> bool:
        """After a timeout (and stop_waiting_navigation, which it waits for: a page waiting for a new
        document does not answer scripts either): if the page is stuck in a script of its own, stop that
        script (see devtools), so the tab answers again instead of timing out on every call until it is
        closed. Whether one was stopped — when that is known within `within_s`; otherwise it goes on in
        the background and the tab's next operation waits for it (ensure_page)."""
        if self.devtools is None or self.closed or self.crashed or self.dialogs:  # a dialog holds the page itself
            return False
        task = spawn(self._unstick(self.devtools, set(self._settling)))
        done, _ = await asyncio.wait({task}, timeout=max(0.0, within_s))
        if task in done:
            return bool(task.result())
        self._settling.add(task)
        return False

    async def _unstick(self, devtools: PageDevtools, stopping: set[asyncio.Task[Any]]) -> bool:
        if stopping:
            await asyncio.wait(stopping, timeout=STOP_S)
        stopped = await devtools.unstick(STOP_S)
        if stopped and devtools is self.devtools:
            self.stopped_scripts += 1
        return stopped

    async def leave_if_stuck(self) -> None:
        """Before a navigation: a page whose script had to be stopped may start it again (from a timer) at
        any moment, and then it cannot run its side of the navigation, so goto would time out on it —
        whether it does is a race a probe cannot settle. Such a page is closed instead and the navigation
        opens in a fresh page of the same tab, as Chromium's "Page unresponsive — Exit page" does; the
        tab's history starts again there."""
        if not self.stopped_scripts or self.page is None:
            return
        log.info("leaving the page of %s/%s, whose script was stopped, for a fresh page", self.session.id, self.id)
        self._drop_page()
        await self.ensure_page()

    async def await_state_event(self, grace_s: float) -> None:
        """After a "target closed/aborted" error, give the crash/close/disconnect event time to land."""
        try:
            async with asyncio.timeout(grace_s):
                await self._broken.wait()
        except TimeoutError:
            if not self.session.engine.connected:
                self.mark_crashed()

    # -- reading state -----------------------------------------------------------------------
    def mark(self) -> NavigationMark:
        return NavigationMark(self.refs.epoch, self.navigation_requests, self.error_pages)

    async def error_page_since(self, mark: NavigationMark, timeout_s: float) -> None:
        """Wait (at most timeout_s) until the main frame shows an error page it did not show at `mark`.

        Chromium commits the error page of a failed navigation a moment after Playwright reports the
        failure; the next call on the tab, landing in that moment, finds its script's context destroyed
        or its own navigation interrupted."""
        if self.error_pages != mark.error_pages:
            return
        self._error_page.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._error_page.wait(), timeout_s)

    def navigated_since(self, mark: NavigationMark) -> bool:
        return self.refs.epoch != mark.epoch or self.navigation_requests != mark.navigation_requests

    def pending_requests(self) -> int:
        """In-flight requests, leaving out long-lived ones (long polls, event streams)."""
        cutoff = time.monotonic() - LONG_REQUEST_S
        return sum(1 for started in self.inflight.values() if started >= cutoff)

    @property
    def url(self) -> str:
        return self.page.url if self.page is not None else "about:blank"

    async def title(self) -> str:
        """The page title, or the last one known while the page cannot answer (dialog, crash)."""
        page = self.page
        if page is None or self.dialogs or self.crashed or self.closed:
            return self._title
        with contextlib.suppress(PlaywrightError, TimeoutError):
            self._title = cap(await asyncio.wait_for(page.title(), TITLE_TIMEOUT_S), MAX_TITLE)
        return self._title
