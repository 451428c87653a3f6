"""The live view's HTTP routes, on the MCP server's own HTTP app (`serve --http`) or on the loopback
listener (stdio, `boxwright login`):

    GET  /live/<viewId>            the viewer page (static: no secret in it)
    POST /live/<viewId>/session    spends the link's one-time token, sets the view's cookie
    WS   /live/<viewId>/ws         the relay (cookie required)
    GET  /live/static/<file>       the page's script and style

Every request passes the MCP endpoint's Host/Origin checks (the SDK's TransportSecurityMiddleware,
same settings, against DNS rebinding). The POST and the WebSocket also need an Origin equal to this
server's own: the cookie is SameSite=Strict, but "same site" ignores ports, so a page on another
local port must be kept out by its origin.
"""

from __future__ import annotations

import contextlib
import json
import logging
from importlib import resources
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from host.live.relay import relay
from host.live.views import NEW_LINK_HINT
from host.live.views import refused as link_refused
from host.sandboxes.models import Caller
from rpc.errors import BoxwrightError, ErrorCode

if TYPE_CHECKING:
    from host.live.service import LiveViewService

log = logging.getLogger("boxwright.live")

COOKIE = "bw_live"
MAX_TOKEN_BODY = 4096
NO_VIEW = "this live view link is not valid (expired, or its view ended)"
PAGE_HINT = "open the live view link as it was given: its page sends the token itself"
STATIC = {"live.js": "text/javascript", "live.css": "text/css"}
SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
}


def _static(name: str) -> bytes:
    return resources.files("host.live").joinpath("static", name).read_bytes()


async def _capped_body(request: Request) -> bytes | None:
    """The body, read no further than MAX_TOKEN_BODY (None past it): a declared Content-Length is refused
    before this, a chunked body only here."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_TOKEN_BODY:
            return None
    return bytes(body)


def _error(status: int, exc: BoxwrightError) -> JSONResponse:
    return JSONResponse(exc.to_body().model_dump(mode="json"), status_code=status, headers=SECURITY_HEADERS)


def live_routes(service: LiveViewService) -> list[BaseRoute]:
    guard = TransportSecurityMiddleware(service.security)

    async def host_refused(conn: HTTPConnection) -> Response | None:
        """The MCP endpoint's Host/Origin checks (the SDK's), for a request or a WebSocket handshake."""
        return await guard.validate_request(Request({**conn.scope, "type": "http"}))

    def own_origin(conn: HTTPConnection) -> str:
        if service.base_url_setting:
            parts = urlsplit(service.base_url_setting)
            return f"{parts.scheme}://{parts.netloc}"
        scheme = "https" if conn.url.scheme in ("https", "wss") else "http"
        return f"{scheme}://{conn.headers.get('host', '')}"

    def same_origin(conn: HTTPConnection) -> bool:
        return conn.headers.get("origin") == own_origin(conn)

    async def page(request: Request) -> Response:
        refused = await host_refused(request)
        if refused is not None:
            return refused
        return Response(_static("live.html"), media_type="text/html; charset=utf-8", headers=SECURITY_HEADERS)

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return Response(status_code=404)
        refused = await host_refused(request)
        if refused is not None:
            return refused
        return Response(_static(name), media_type=STATIC[name], headers=SECURITY_HEADERS)

    async def session(request: Request) -> Response:
        """Spend the one-time token for the view's cookie (or, with the cookie already, say who we are)."""
        refused = await host_refused(request)
        if refused is not None:
            return refused
        if not same_origin(request):
            return _error(403, BoxwrightError(ErrorCode.UNAUTHORIZED, "cross-origin request refused"))
        view_id = request.path_params["view_id"]
        if service.views.get(view_id) is None:  # before reading a byte: this route needs no credentials
            return _error(403, link_refused(NO_VIEW, NEW_LINK_HINT))
        body = await _capped_body(request)
        if body is None:
            return _error(
                413, BoxwrightError(ErrorCode.PAYLOAD_TOO_LARGE, f"over {MAX_TOKEN_BODY} bytes", hint=PAGE_HINT)
            )
        token = ""
        if body:
            try:
                data = json.loads(body)
                token = str(data.get("token") or "") if isinstance(data, dict) else ""
            except ValueError:
                return _error(400, BoxwrightError(ErrorCode.INVALID_REQUEST, 'send {"token": "…"}', hint=PAGE_HINT))
        secret = None
        view = service.views.by_cookie(view_id, request.cookies.get(COOKIE))
        if view is None:
            try:
                view, secret = service.views.redeem(view_id, token)
            except BoxwrightError as exc:
                log.info("live view %s: refused a link (%s)", view_id[:8], exc.message)
                return _error(403, exc)
        response = JSONResponse(
            {
                "sandboxId": view.sandbox_id,
                "sessionId": view.session_id,
                "doneButton": view.done_button,
                "title": view.title,
            },
            headers=SECURITY_HEADERS,
        )
        if secret is not None:
            response.set_cookie(
                COOKIE,
                secret,
                path=f"/live/{view.view_id}",
                httponly=True,
                samesite="strict",
                secure=own_origin(request).startswith("https:"),
            )
            log.info("live view %s of %s/%s opened by its link", view.view_id[:8], view.sandbox_id, view.session_id)
        return response

    async def websocket(ws: WebSocket) -> None:
        if await host_refused(ws) is not None or not same_origin(ws):
            await ws.close(code=1008)
            return
        view = service.views.by_cookie(ws.path_params["view_id"], ws.cookies.get(COOKIE))
        if view is None:
            await ws.close(code=1008)
            return
        try:
            rec = service.manager.resolve(Caller(owner=view.owner), view.sandbox_id)
        except BoxwrightError:
            rec = None
        if rec is None or rec.endpoint is None:
            service.views.end(view)
            await ws.close(code=1011)
            return
        await ws.accept()
        await relay(
            ws,
            view,
            rec.endpoint,
            service.activity,
            on_input=lambda: service.person_acted(view),
            session_gone=lambda: service.views.end(view),
        )
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):  # the page may have closed it already
            await ws.close()

    return [
        Route("/live/static/{name}", static, methods=["GET"]),
        Route("/live/{view_id}", page, methods=["GET"]),
        Route("/live/{view_id}/session", session, methods=["POST"]),
        WebSocketRoute("/live/{view_id}/ws", websocket),
    ]
