"""The host's half of a live view: the person's WebSocket ↔ the agent's `/live` WebSocket.

The agent is reached like every RPC — its loopback endpoint and the sandbox's bearer token, which
never leaves the host. Frames and status from the agent go to the page as they are. Input from the
page is checked against rpc.models.live before it goes on (anything else is refused with a notice);
`done` stays here (a login is finished). The relay adds what only the host knows: whether a tool
call is acting on the session (`agent` messages), and it tells the profile publisher when the person
acts, so a login made by hand in a profile session is published like a tool call's changes.

One viewer per view (views.LiveView.connected): a newer WebSocket for the view ends this one with a
final notice, and the page does not reconnect after it. No failure of one part leaves the relay: a
part that ends, however, ends the whole relay and both WebSockets.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal
from urllib.parse import quote

import anyio
from pydantic import ValidationError
from starlette.websockets import WebSocket, WebSocketDisconnect
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from host.agent_client import AgentEndpoint
from host.live.activity import Activity
from host.live.views import LiveView
from rpc.models.live import LIVE_PATH, SESSION_CLOSED_CODE, VIEWER_INPUT, AgentActivity, DoneInput, NoticeMessage

log = logging.getLogger("boxwright.live")

MAX_FRAME_BYTES = 16 * 1024 * 1024
OPEN_TIMEOUT_S = 10.0


def agent_url(endpoint: AgentEndpoint, session_id: str) -> str:
    base = endpoint.base_url.replace("https://", "wss://", 1).replace("http://", "ws://", 1)
    return f"{base}{LIVE_PATH}?sessionId={quote(session_id)}"


Level = Literal["info", "error"]


async def _notice(ws: WebSocket, message: str, *, level: Level = "info", final: bool = False) -> None:
    notice = NoticeMessage(message=message, level=level, final=final)
    await ws.send_text(notice.model_dump_json())


async def _agent_to_page(agent: ClientConnection, ws: WebSocket, session_gone: Callable[[], None]) -> None:
    async for message in agent:
        await ws.send_text(message if isinstance(message, str) else message.decode())
    if agent.close_code == SESSION_CLOSED_CODE:  # by a tool call, a run, or the browser's end
        session_gone()


async def _page_to_agent(ws: WebSocket, agent: ClientConnection, view: LiveView, on_input: Callable[[], None]) -> None:
    while True:
        received = await ws.receive()
        if received["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(received.get("code", 1000), received.get("reason"))
        raw = received.get("text")
        if raw is None:  # a binary frame: live view messages are JSON text
            await _notice(ws, "an input message was refused (binary frames are not live view messages)", level="error")
            continue
        try:
            message = VIEWER_INPUT.validate_json(raw)
        except ValidationError:
            await _notice(ws, "an input message was refused (not a valid live view message)", level="error")
            continue
        if isinstance(message, DoneInput):
            if view.done_button:
                view.done.set()
                await _notice(ws, "Done: saving the login and closing the sandbox…", final=True)
            continue
        await agent.send(message.model_dump_json())
        on_input()


async def _activity_to_page(ws: WebSocket, activity: Activity, view: LiveView) -> None:
    with activity.subscribe(view.sandbox_id, view.session_id) as changes:
        acting = activity.acting(view.sandbox_id, view.session_id)
        await ws.send_text(AgentActivity(acting=acting).model_dump_json())
        async for acting, tool in changes:
            await ws.send_text(AgentActivity(acting=acting, tool=tool).model_dump_json())


async def _until_ended(view: LiveView, ws: WebSocket) -> None:
    await view.ended.wait()
    await _notice(ws, "this live view has ended (its session or sandbox is gone)", final=True)


REPLACED = "this live view was opened in another window or tab, which shows it now (reload this page to show it here)"


async def _until_replaced(replaced: anyio.Event, ws: WebSocket) -> None:
    await replaced.wait()
    await _notice(ws, REPLACED, final=True)


async def relay(
    ws: WebSocket,
    view: LiveView,
    endpoint: AgentEndpoint,
    activity: Activity,
    on_input: Callable[[], None],
    session_gone: Callable[[], None],
) -> None:
    """Run one viewer's relay until either side closes (the page, the agent, or the view's end).
    `session_gone` is called when the agent says the session is closed (or not there): the view ends."""
    replaced = view.connected()
    try:
        try:
            agent = await connect(
                agent_url(endpoint, view.session_id),
                additional_headers={"Authorization": f"Bearer {endpoint.token}"},
                max_size=MAX_FRAME_BYTES,
                open_timeout=OPEN_TIMEOUT_S,
                proxy=None,
            )
        except InvalidStatus as exc:
            if exc.response.status_code == 404:  # the agent has no such session (any more)
                session_gone()
                await _notice(ws, "this live view has ended (its session was closed)", final=True)
                return
            log.warning(
                "live view %s: the sandbox's agent refused (HTTP %s)", view.sandbox_id, exc.response.status_code
            )
            await _notice(ws, "the sandbox's browser cannot be reached", level="error", final=True)
            return
        except (OSError, TimeoutError, WebSocketException) as exc:
            log.warning("live view %s: cannot reach the sandbox's agent (%s)", view.sandbox_id, type(exc).__name__)
            await _notice(ws, "the sandbox's browser cannot be reached (is the session still open?)", level="error",
                          final=True)  # fmt: skip
            return
        async with agent, anyio.create_task_group() as tg:

            async def until_one_ends(part: Callable[..., Awaitable[None]], *args: Any) -> None:
                try:
                    await part(*args)  # until one side goes away
                except (WebSocketDisconnect, ConnectionClosed, RuntimeError):
                    pass
                except Exception:  # a bug in one part: the relay ends, the server and other viewers go on
                    log.exception("live view %s: the relay failed", view.sandbox_id)
                tg.cancel_scope.cancel()

            tg.start_soon(until_one_ends, _agent_to_page, agent, ws, session_gone)
            tg.start_soon(until_one_ends, _page_to_agent, ws, agent, view, on_input)
            tg.start_soon(until_one_ends, _activity_to_page, ws, activity, view)
            tg.start_soon(until_one_ends, _until_ended, view, ws)
            tg.start_soon(until_one_ends, _until_replaced, replaced, ws)
    finally:
        view.disconnected()
