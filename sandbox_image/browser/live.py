"""GET /live?sessionId=…: a WebSocket that shows a session's active tab and takes a person's input.

Frames come from Chromium's screencast over a CDP session on the tab's page (Page.startScreencast /
Page.screencastFrame / Page.screencastFrameAck); a frame is acknowledged only once it has been sent,
so a slow viewer slows the stream instead of queueing frames. Input goes back through the same CDP
session (Input.dispatchMouseEvent / dispatchKeyEvent / insertText), one event at a time and in order;
navigation, history and tab switches use the browser operations the tools use. The view follows the
session's active tab, whoever changes it (the person, the agent, a popup). Messages: rpc.models.live.

A viewer's CDP session must be detached however the viewer goes: the agent runs with aiohttp's
handler_cancellation, which cancels this handler as soon as the host's TCP connection drops — usually
while the teardown is under way — and a screencast left attached holds ~7 MiB of the browser and GPU
processes until the page closes (a few hundred reconnects took a 2 GiB sandbox's Chromium down). So the
teardown runs shielded, and a CDP session whose creation was cancelled is detached when it arrives.
The host relays one viewer per view; MAX_STREAMS_PER_SESSION is the agent's own backstop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import TYPE_CHECKING, Any, Literal

from aiohttp import WSMsgType, web
from pydantic import ValidationError

from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, unauthorized
from rpc.models.browser import GotoParams, HandleDialogParams, HistoryParams
from rpc.models.live import (
    AGENT_INPUT,
    SESSION_CLOSED_CODE,
    AgentInput,
    DialogInput,
    HistoryInput,
    KeyInput,
    LiveTab,
    MouseInput,
    NavigateInput,
    NoticeMessage,
    StatusMessage,
    TabInput,
    TextInput,
    WheelInput,
)
from sandbox_image.auth import TokenAuth
from sandbox_image.browser import dialogs, navigation
from sandbox_image.browser.background import quietly, spawn
from sandbox_image.browser.errors import PlaywrightError, clean_message
from sandbox_image.browser.launch import VIEWPORT
from sandbox_image.browser.service import BrowserService
from sandbox_image.browser.sessions import Session
from sandbox_image.browser.tab import Tab
from sandbox_image.browser.timeouts import Budget

if TYPE_CHECKING:
    from playwright.async_api import CDPSession, Page

log = logging.getLogger("boxwright.agent.live")

STATUS_INTERVAL_S = 0.4
INPUT_TIMEOUT_S = 5.0
NAVIGATION_TIMEOUT_MS = 30_000
MAX_INPUT_MESSAGE = 64 * 1024
INPUT_QUEUE = 256
SCREENCAST = {"format": "jpeg", "quality": 70, "everyNthFrame": 1}
TEARDOWN_STEP_S = 5.0  # stopScreencast / detach of a page stuck in a script: give up, the page's close frees it
# Viewers of one session at once (each its own screencast): beyond it, the oldest is closed. The host already
# replaces a view's viewer; this bounds many views of one session (each browser_live_view makes one).
MAX_STREAMS_PER_SESSION = 4


def screencast_of(page: Page) -> dict[str, Any]:
    """The screencast at the page's own size: a phone session's 412×839 is not squeezed into 1280×720."""
    size = page.viewport_size or VIEWPORT
    return {**SCREENCAST, "maxWidth": size["width"], "maxHeight": size["height"]}


class LiveStream:
    """One viewer of one session: screencast out, input in, status whenever it changes."""

    def __init__(self, service: BrowserService, session: Session, ws: web.WebSocketResponse) -> None:
        self.service = service
        self.session = session
        self.ws = ws
        self._tab: Tab | None = None
        self._page: Page | None = None
        self._cdp: CDPSession | None = None
        self._inputs: asyncio.Queue[AgentInput] = asyncio.Queue(INPUT_QUEUE)
        self._last_status = ""
        self._closing = False

    # -- sending -----------------------------------------------------------------------------
    async def _send(self, message: dict[str, Any] | str) -> bool:
        if self.ws.closed:
            return False
        try:
            await self.ws.send_str(message if isinstance(message, str) else json.dumps(message))
            return True
        except (ConnectionError, RuntimeError):
            return False

    async def notice(self, message: str, *, level: Literal["info", "error"] = "info", final: bool = False) -> None:
        await self._send(NoticeMessage(message=message, level=level, final=final).model_dump())

    # -- the screencast ----------------------------------------------------------------------
    def _on_frame(self, cdp: CDPSession, tab_id: str, params: dict[str, Any]) -> None:
        spawn(self._forward_frame(cdp, tab_id, params))

    async def _forward_frame(self, cdp: CDPSession, tab_id: str, params: dict[str, Any]) -> None:
        meta = params.get("metadata") or {}
        width, height = float(meta.get("deviceWidth", 0)), float(meta.get("deviceHeight", 0))
        # Built by hand: the base64 JPEG is copied once instead of being re-escaped by a JSON encoder.
        head = f'{{"type":"frame","tabId":{json.dumps(tab_id)},"width":{width},"height":{height},"data":"'
        frame = head + params["data"] + '"}'
        sent = await self._send(frame)
        if sent and cdp is self._cdp:
            await quietly(cdp.send("Page.screencastFrameAck", {"sessionId": params["sessionId"]}))

    async def _detach(self) -> None:
        cdp, self._cdp, self._page, self._tab = self._cdp, None, None, None
        if cdp is not None:
            await _end_screencast(cdp)

    async def _attach(self, tab: Tab) -> None:
        await self._detach()
        try:
            page = await tab.ensure_page()
            creating = asyncio.ensure_future(page.context.new_cdp_session(page))
            try:
                cdp = await asyncio.shield(creating)
            except asyncio.CancelledError:  # Chromium attaches it anyway: detach it once it is there
                creating.add_done_callback(_detach_when_done)
                raise
        except (BoxwrightError, PlaywrightError) as exc:
            log.info("live view cannot show %s/%s yet: %s", self.session.id, tab.id, type(exc).__name__)
            return
        self._tab, self._page, self._cdp = tab, page, cdp
        cdp.on("Page.screencastFrame", lambda params: self._on_frame(cdp, tab.id, params))
        try:
            await cdp.send("Page.startScreencast", screencast_of(page))
        except PlaywrightError as exc:
            log.info("screencast of %s/%s failed to start: %s", self.session.id, tab.id, clean_message(exc))
            await self._detach()

    async def _follow_active_tab(self) -> None:
        """Show the session's active tab (and its current page, which a crash may have replaced)."""
        active = self.session.tabs.get(self.session.active_id) if self.session.active_id else None
        if active is None:
            if self._tab is not None:
                await self._detach()
            return
        if active is not self._tab or active.page is not self._page:
            await self._attach(active)

    # -- status ------------------------------------------------------------------------------
    async def _status(self) -> StatusMessage:
        tabs = list(self.session.tabs.values())
        titles = await asyncio.gather(*(tab.title() for tab in tabs))
        active = self.session.tabs.get(self.session.active_id) if self.session.active_id else None
        dialog = None
        if active is not None and active.dialogs:
            info = active.dialogs[0].info
            dialog = f"{info.type}: {info.message}"
        return StatusMessage(
            sessionId=self.session.id,
            tabs=[
                LiveTab(tabId=t.id, url=t.url, title=title, active=t is active)
                for t, title in zip(tabs, titles, strict=True)
            ],
            activeTabId=active.id if active else None,
            url=active.url if active else "",
            title=titles[tabs.index(active)] if active else "",
            dialog=dialog,
        )

    async def _watch(self) -> None:
        """Follow the active tab and report status changes, until the session closes."""
        while not self.ws.closed:
            if self.session.closed:
                await self.notice(f"session {self.session.id} was closed", final=True)
                await self.ws.close(code=SESSION_CLOSED_CODE)
                return
            await self._follow_active_tab()
            status = (await self._status()).model_dump_json()
            if status != self._last_status and await self._send(status):
                self._last_status = status
            await asyncio.sleep(STATUS_INTERVAL_S)

    # -- input -------------------------------------------------------------------------------
    async def _cdp_send(self, method: str, params: dict[str, Any]) -> None:
        cdp = self._cdp
        if cdp is None:
            return
        try:
            async with asyncio.timeout(INPUT_TIMEOUT_S):  # a page stuck on a dialog must not stall the queue
                await cdp.send(method, params)
        except (TimeoutError, PlaywrightError) as exc:
            log.debug("live input %s dropped: %s", method, type(exc).__name__)

    def _active(self) -> Tab | None:
        return self.session.tabs.get(self.session.active_id) if self.session.active_id else None

    async def _perform(self, name: str, operation: Any, params: Any) -> None:
        """A navigation through the same path as the tools (tab lock, clean errors), reported as a notice."""
        tab = self._active()
        if tab is None:
            await self.notice("no tab is open: open one first", level="error")
            return
        try:
            await self.service.perform(name, tab, operation, params, Deadline.after(NAVIGATION_TIMEOUT_MS / 1000 + 1))
        except BoxwrightError as exc:
            await self.notice(exc.message, level="error")

    async def _reload(self) -> None:
        tab = self._active()
        if tab is None or tab.page is None:
            return
        try:
            await tab.guard(tab.page.reload(timeout=NAVIGATION_TIMEOUT_MS))
        except (BoxwrightError, PlaywrightError) as exc:
            await self.notice(f"reload failed: {type(exc).__name__}", level="error")

    async def _handle(self, message: AgentInput) -> None:
        if isinstance(message, MouseInput):
            await self._cdp_send(
                "Input.dispatchMouseEvent",
                message.model_dump(include={"x", "y", "button", "buttons", "clickCount", "modifiers"})
                | {"type": message.event},
            )
        elif isinstance(message, WheelInput):
            await self._cdp_send(
                "Input.dispatchMouseEvent",
                message.model_dump(include={"x", "y", "deltaX", "deltaY", "modifiers"}) | {"type": "mouseWheel"},
            )
        elif isinstance(message, KeyInput):
            await self._cdp_send("Input.dispatchKeyEvent", key_event(message))
        elif isinstance(message, TextInput):
            await self._cdp_send("Input.insertText", {"text": message.text})
        elif isinstance(message, NavigateInput):
            spawn(self._perform("live.navigate", navigation.goto, GotoParams(url=message.url, waitUntil="commit")))
        elif isinstance(message, HistoryInput):
            if message.action == "reload":
                spawn(self._reload())
            else:
                move = navigation.back if message.action == "back" else navigation.forward
                spawn(self._perform(f"live.{message.action}", move, HistoryParams()))
        elif isinstance(message, TabInput):
            await self._tab_action(message)
        elif isinstance(message, DialogInput):
            tab = self._active()
            if tab is not None and tab.dialogs:
                answer = HandleDialogParams(accept=message.accept, promptText=message.promptText)
                await dialogs.handle_dialog(tab, answer, Budget.of(Deadline.after(INPUT_TIMEOUT_S), None))

    async def _tab_action(self, message: TabInput) -> None:
        try:
            if message.action == "new":
                await self.session.open_tab(activate=True)
            elif message.tabId is None:
                await self.notice(f"tab {message.action} needs a tabId", level="error")
            elif message.action == "select":
                self.session.select(message.tabId)
            else:
                await self.session.close_tab(self.session.tab(message.tabId))
        except BoxwrightError as exc:
            await self.notice(exc.message, level="error")
        await self._follow_active_tab()

    async def _consume_inputs(self) -> None:
        while True:
            message = await self._inputs.get()
            try:
                await self._handle(message)
            except Exception:  # one bad event must not end the view
                log.exception("live input %s failed", message.type)

    async def _receive(self) -> None:
        async for msg in self.ws:
            if msg.type != WSMsgType.TEXT:
                continue
            try:
                message = AGENT_INPUT.validate_json(msg.data)
            except ValidationError:
                await self.notice("an input message was refused (not a valid live view message)", level="error")
                continue
            try:
                self._inputs.put_nowait(message)
            except asyncio.QueueFull:
                log.warning("live view of %s: input queue full, event dropped", self.session.id)

    # -- the whole view ----------------------------------------------------------------------
    async def run(self) -> None:
        tasks: list[asyncio.Task[None]] = []
        try:
            if self.session.active_id is None or self.session.active_id not in self.session.tabs:
                await self.session.active_tab()  # something to show
            await self._follow_active_tab()  # attached before the first input is taken
            tasks = [spawn(self._watch()), spawn(self._consume_inputs())]
            await self._receive()
        finally:
            # Shielded: a cancellation (the connection dropped) must not leave the screencast attached.
            await asyncio.shield(spawn(self._teardown(tasks)))

    async def _teardown(self, tasks: list[asyncio.Task[None]]) -> None:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)  # no attach of theirs runs past this
        await self._detach()

    async def replaced(self) -> None:
        """Closed for a newer viewer of the session (the oldest goes past MAX_STREAMS_PER_SESSION)."""
        await self.notice("this live view was closed: the session is shown in too many other views", final=True)
        await self.ws.close()


async def _end_screencast(cdp: CDPSession) -> None:
    for step in (lambda: cdp.send("Page.stopScreencast"), cdp.detach):
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(TEARDOWN_STEP_S):
                await quietly(step())


def _detach_when_done(creating: asyncio.Future[CDPSession]) -> None:
    if not creating.cancelled() and creating.exception() is None:
        spawn(_end_screencast(creating.result()))


def key_event(message: KeyInput) -> dict[str, Any]:
    """A DOM key event as CDP's Input.dispatchKeyEvent wants it (a key that types is a keyDown with text)."""
    text = message.text or ("\r" if message.key == "Enter" else "")
    kind = "keyUp" if message.event == "up" else "keyDown" if text else "rawKeyDown"
    event: dict[str, Any] = {
        "type": kind,
        "key": message.key,
        "code": message.code,
        "windowsVirtualKeyCode": message.keyCode,
        "nativeVirtualKeyCode": message.keyCode,
        "location": message.location,
        "modifiers": message.modifiers,
    }
    if text and kind == "keyDown":
        event["text"] = event["unmodifiedText"] = text
    return event


def handler(service: BrowserService, auth: TokenAuth) -> Any:
    """The aiohttp handler of GET /live: the sandbox's bearer token, then the session, then the WebSocket."""

    streams: dict[Session, list[LiveStream]] = {}

    async def live(request: web.Request) -> web.StreamResponse:
        authorization = request.headers.get("Authorization")
        if not auth.check(authorization):
            body = unauthorized(authorization).to_body().model_dump(mode="json")
            return web.json_response(body, status=401, headers={"WWW-Authenticate": "Bearer"})
        try:
            session = service.sessions.get(request.query.get("sessionId") or None)
        except BoxwrightError as exc:
            return web.json_response(exc.to_body().model_dump(mode="json"), status=404)
        ws = web.WebSocketResponse(max_msg_size=MAX_INPUT_MESSAGE, heartbeat=20.0)
        await ws.prepare(request)
        log.info("live view of session %s opened", session.id)
        stream = LiveStream(service, session, ws)
        mine = streams.setdefault(session, [])
        mine.append(stream)
        for old in mine[:-MAX_STREAMS_PER_SESSION]:
            mine.remove(old)
            spawn(old.replaced())
        try:
            with contextlib.suppress(ConnectionError):
                await stream.run()
        finally:
            if stream in mine:
                mine.remove(stream)
            if not mine and streams.get(session) is mine:
                del streams[session]
        log.info("live view of session %s closed", session.id)
        return ws

    return live
