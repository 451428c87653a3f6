"""The HTTP face of a dispatcher: POST /rpc and GET /healthz, for the agent and the runner daemon.

Only transport-level failures use non-200 statuses (401 auth, 405 HTTP method, 413 body size);
they still carry a JSON-RPC error body so every client sees `error.data.errorCode`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from rpc.envelope import encode_error
from rpc.errors import BoxwrightError, ErrorCode, unauthorized
from rpc.models.sandbox import Health
from sandbox_image.auth import TokenAuth
from sandbox_image.dispatcher import Dispatcher

HealthProvider = Callable[[], Awaitable[Health]]


def _error(status: int, exc: BoxwrightError, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(encode_error(exc), status=status, headers=headers)


def _too_large(limit: int) -> web.Response:
    return _error(
        413,
        BoxwrightError(
            ErrorCode.PAYLOAD_TOO_LARGE,
            f"request body exceeds the limit of {limit} bytes",
            details={"maxBodyBytes": limit},
        ),
    )


def build_app(
    dispatcher: Dispatcher,
    *,
    health: HealthProvider,
    auth: TokenAuth | None,
    max_body_bytes: int,
) -> web.Application:
    """An aiohttp app serving `dispatcher`; `auth=None` only for the runner's Unix socket."""
    app = web.Application(client_max_size=max_body_bytes)

    async def rpc(request: web.Request) -> web.Response:
        received_at = time.monotonic()
        if request.method != "POST":
            return _error(
                405,
                BoxwrightError(ErrorCode.INVALID_REQUEST, "use HTTP POST for /rpc", hint="send the request with POST"),
                headers={"Allow": "POST"},
            )
        if auth is not None and not auth.check(request.headers.get("Authorization")):
            refused = unauthorized(request.headers.get("Authorization"))
            return _error(401, refused, headers={"WWW-Authenticate": "Bearer"})
        if request.content_length is not None and request.content_length > max_body_bytes:
            return _too_large(max_body_bytes)
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _too_large(max_body_bytes)
        response: dict[str, Any] = await dispatcher.dispatch_bytes(body, received_at=received_at)
        return web.json_response(response)

    async def healthz(_request: web.Request) -> web.Response:
        report = await health()
        return web.json_response(report.model_dump(mode="json"))

    app.router.add_route("*", "/rpc", rpc)
    app.router.add_get("/healthz", healthz)
    return app
