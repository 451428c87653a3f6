"""The dialogs of a page being left by goto: answered at once, while those of the page gone to stop it.

A page that alerts in a loop (setInterval) opens the next alert as soon as one is answered, and may do so
while the navigation is under way; before, every call including goto failed DIALOG_PENDING and only closing
the tab got out. So while goto leaves a page, its dialogs are answered as a user leaving it would, and the
first dialog of the new document ends goto as DIALOG_PENDING (its load event waits for the answer).

Which document a dialog belongs to is not in Playwright's event, and its order is no guide: under load
Playwright reports an alert the old document opened just before the commit *after* the new document's
framenavigated (seen about 1 goto in 20 on two busy cores). Chromium's own event (a DevTools session of
ours) names the frame's URL, so when the page being left has shown dialogs, each dialog after the commit is
paired with its DevTools twin: one from the page left is dropped (Chromium closes it with its document),
anything else is the caller's. Without a twin (the session could not be opened in time: Page.enable waits
for a renderer that a page alerting in a loop keeps busy; or the page began alerting only during goto), the
page itself is asked: a dialog that holds the new document blocks its scripts, so a script that answers at
once says the dialog was the page left's. A page left that never showed a dialog is not asked about: a
dialog after the commit is the new page's, as before this module."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import TYPE_CHECKING, Any

from sandbox_image.browser.background import consume, quietly, spawn
from sandbox_image.browser.errors import PlaywrightError
from sandbox_image.browser.tab import Tab

if TYPE_CHECKING:
    from playwright.async_api import CDPSession, Dialog, Frame, Page, Response

    from rpc.models.browser import WaitUntil

# How long a dialog after the commit waits for Chromium's twin event (normally it is there already).
TWIN_S = 1.0
# How long a script in the page may take to answer before a dialog without a twin counts as holding it.
HELD_S = 1.0

_Key = tuple[str, str]  # (type, message): what a Playwright dialog and its DevTools twin share


class Twins:
    """Pairs Playwright's dialog events with Chromium's (same order on both sessions; matched by type and
    message, so one missed at the start does not shift the rest) to learn each dialog's frame URL."""

    def __init__(self) -> None:
        self.unclaimed: deque[tuple[_Key, str]] = deque()  # DevTools events no Playwright dialog has taken
        self.owed: deque[tuple[_Key, asyncio.Future[str]]] = deque()  # Playwright dialogs waiting for theirs

    def chromium_saw(self, key: _Key, url: str) -> None:
        for i, (wanted, future) in enumerate(self.owed):
            if wanted == key:
                del self.owed[i]
                if not future.done():
                    future.set_result(url)
                return
        self.unclaimed.append((key, url))

    def playwright_saw(self, key: _Key) -> asyncio.Future[str]:
        """The URL of the frame that opened the dialog, once Chromium's event for it is in."""
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        for i, (seen, url) in enumerate(self.unclaimed):
            if seen == key:
                del self.unclaimed[i]
                future.set_result(url)
                return future
        self.owed.append((key, future))
        return future


class Leaving:
    """For the length of one goto (async with): see the module docstring."""

    def __init__(self, tab: Tab, page: Page, url: str) -> None:
        self.tab = tab
        self.page = page
        self.url = url
        self.left_url = page.url  # the document being left
        self.answered: set[str] = set()  # addresses of the main frame's navigation answers since the start
        self.committed = False  # the main frame shows the new document: its dialogs are the caller's
        self.committed_url = ""
        self.new_dialog = asyncio.Event()
        self.twins: Twins | None = None  # only when the page being left has shown dialogs
        self.left_alerts = bool(tab.document_dialogs)  # the page being left has shown dialogs (before or during goto)
        self.cdp: CDPSession | None = None
        self.deciding: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Leaving:
        self.page.on("response", self._on_response)
        self.page.on("framenavigated", self._on_navigated)
        self.page.on("dialog", self._on_dialog)
        # Page.enable waits for the renderer, which an open dialog blocks: the dialogs go first.
        watching = asyncio.ensure_future(self._watch_chromium()) if self.tab.document_dialogs else None
        try:
            await self.tab.leave_dialogs()
            if watching is not None:
                await watching
        except BaseException:  # the call's deadline: nothing of ours stays on the page
            if watching is not None:
                watching.cancel()
            await self.__aexit__()
            raise
        return self

    async def __aexit__(self, *_exc: object) -> None:
        if self.deciding:  # a dialog of the page left, reported late, is dropped before the next call
            await asyncio.wait(self.deciding, timeout=TWIN_S * 2)
        self.page.remove_listener("response", self._on_response)
        self.page.remove_listener("framenavigated", self._on_navigated)
        self.page.remove_listener("dialog", self._on_dialog)
        if self.cdp is not None:  # in the background: detaching waits for the renderer, a new dialog blocks it
            spawn(quietly(self.cdp.detach()))

    async def _watch_chromium(self) -> None:
        """A DevTools session of our own for Chromium's dialog events (they carry the frame's URL). Events
        count from Page.enable's answer on: those sent before it reached Playwright before the answer did.
        Given up after TWIN_S (a page that alerts faster than it is answered): dialogs then count as before."""
        with contextlib.suppress(PlaywrightError, TimeoutError):
            async with asyncio.timeout(TWIN_S):
                self.cdp = await self.page.context.new_cdp_session(self.page)
                self.cdp.on("Page.javascriptDialogOpening", self._on_chromium_dialog)
                await self.cdp.send("Page.enable")
                self.twins = Twins()

    def _on_chromium_dialog(self, event: dict[str, Any]) -> None:
        if self.twins is not None:
            self.twins.chromium_saw((event.get("type", ""), event.get("message", "")), event.get("url", ""))

    def _on_response(self, response: Response) -> None:
        with contextlib.suppress(PlaywrightError):  # a service worker's request has no frame
            if response.request.is_navigation_request() and response.request.frame is self.page.main_frame:
                self.answered.add(response.url)

    def _on_navigated(self, frame: Frame) -> None:
        # Only this navigation's document: the commit of an earlier one (a goto that ended at its page's
        # alert) may be reported after this one started, and that page's alerts are still the page left's.
        if frame is self.page.main_frame and (frame.url in self.answered or frame.url == self.url):
            self.committed = True
            self.committed_url = frame.url

    def _on_dialog(self, dialog: Dialog) -> None:
        if not any(p.dialog is dialog for p in self.tab.dialogs):  # a scrape tab answers every dialog itself
            return
        twin = self.twins.playwright_saw((dialog.type, dialog.message)) if self.twins is not None else None
        if not self.committed:
            self.left_alerts = True
            self.tab.leave_dialog(dialog)
        elif twin is None and not self.left_alerts:
            self.new_dialog.set()
        else:
            task = asyncio.get_running_loop().create_task(self._decide(dialog, twin))
            self.deciding.add(task)
            task.add_done_callback(self.deciding.discard)

    async def _decide(self, dialog: Dialog, twin: asyncio.Future[str] | None) -> None:
        url = ""
        if twin is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TWIN_S):
                    url = await twin
        # Chromium named its document, or the page says whether a dialog holds it.
        stale = (url == self.left_url and url != self.committed_url) if url else not await self._held()
        if stale:
            self.tab.drop_dialog(dialog)  # Chromium closes it with its document: answering could hit the new page's
        else:
            self.new_dialog.set()

    async def _held(self) -> bool:
        """Whether a dialog holds the page now: a document under a dialog runs no script until it is answered.
        Every frame is asked (a frame from another site runs in a renderer of its own, and its dialog blocks
        only that one); a subframe gone meanwhile holds nothing, a main frame that cannot answer counts as held."""

        async def answers(frame: Frame) -> None:
            try:
                await frame.evaluate("0")
            except PlaywrightError:
                if frame is self.page.main_frame:
                    raise

        try:
            async with asyncio.timeout(HELD_S):
                await asyncio.gather(*(answers(frame) for frame in self.page.frames))
        except (TimeoutError, PlaywrightError):  # no answer: taken as held, the behaviour before this module
            return True
        return False

    async def goto(self, url: str, wait_until: WaitUntil, timeout_ms: float) -> Response | None:
        """page.goto, ended by the first dialog of the new page (DIALOG_PENDING) as Tab.guard would end it."""
        task = asyncio.ensure_future(self.page.goto(url, wait_until=wait_until, timeout=timeout_ms))
        waiter = asyncio.ensure_future(self.new_dialog.wait())
        try:
            await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            if not task.done():
                task.cancel()
                task.add_done_callback(consume)
        if not task.done():
            if self.deciding:  # an earlier dialog of the page left, not yet dropped, is not the one to report
                await asyncio.wait(self.deciding, timeout=TWIN_S)
            raise self.tab.dialog_error()
        return task.result()
