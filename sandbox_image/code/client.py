"""The agent's side of the runner daemon: forwards code.run / process.* over the Unix socket.

The agent (uid agent) cannot start processes as uid runner, so these methods are validated here
and answered by the daemon. An unreachable daemon is CODE_RUNNER_UNAVAILABLE; the host reacts by
restarting it (`docker exec --user runner python3 -m sandbox_image.code.daemon`).
"""

from __future__ import annotations

import itertools
from typing import Any

import aiohttp

from rpc.deadline import Deadline
from rpc.envelope import UnreadableResponse, decode_response, encode_request
from rpc.errors import BoxwrightError, ErrorCode
from rpc.methods import BY_NAME, RUNNER_METHODS, Method
from rpc.models.base import Params, Result
from sandbox_image.dispatcher import Dispatcher, Handler

READY_TIMEOUT_S = 0.5
_BASE_URL = "http://runner"  # the host part is ignored on a Unix socket


def _unavailable(why: str, socket_path: str) -> BoxwrightError:
    return BoxwrightError(
        ErrorCode.CODE_RUNNER_UNAVAILABLE,
        f"the code runner is not available: {why}",
        details={"socket": socket_path},
    )


class RunnerClient:
    """JSON-RPC over the runner daemon's Unix socket."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self._session: aiohttp.ClientSession | None = None
        self._ids = itertools.count(1)

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # A fresh connection per call: a restarted daemon never meets a stale pooled connection.
            connector = aiohttp.UnixConnector(path=self.socket_path, force_close=True)
            # No client-side total timeout: the dispatcher's deadline bounds every call.
            self._session = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None))
        return self._session

    async def call(self, method: Method[Any, Any], params: Params, deadline: Deadline) -> Result:
        """Forward one call with what is left of the deadline; the daemon's errors are re-raised as-is."""
        request = encode_request(method, params, deadline_ms=deadline.remaining_ms(), request_id=next(self._ids))
        headers = {"Content-Type": "application/json"}
        try:
            async with self._client().post(f"{_BASE_URL}/rpc", data=request, headers=headers) as response:
                body = await response.read()
        except aiohttp.ClientConnectorError:  # no socket, or nobody listening on it
            raise _unavailable("nothing answers on its socket", self.socket_path) from None
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError):  # the daemon died mid-call
            raise _unavailable("the connection to it was lost", self.socket_path) from None
        try:
            return decode_response(method, body)
        except UnreadableResponse:
            raise BoxwrightError(ErrorCode.INTERNAL_ERROR, "the code runner sent an unreadable answer") from None

    async def ready(self, within_s: float = READY_TIMEOUT_S) -> bool:
        """True when the daemon answers its health check within `within_s` seconds."""
        try:
            async with self._client().get(
                f"{_BASE_URL}/healthz", timeout=aiohttp.ClientTimeout(total=within_s)
            ) as response:
                return response.status == 200
        except (aiohttp.ClientError, TimeoutError, OSError):
            return False

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def _forwarder(client: RunnerClient, method: Method[Any, Any]) -> Handler[Any, Any]:
    async def forward(params: Params, deadline: Deadline) -> Result:
        return await client.call(method, params, deadline)

    return forward


def register(dispatcher: Dispatcher, client: RunnerClient) -> None:
    """Serve the runner's methods in the agent by forwarding them."""
    for name in sorted(RUNNER_METHODS):
        method = BY_NAME[name]
        dispatcher.register(method, _forwarder(client, method))
