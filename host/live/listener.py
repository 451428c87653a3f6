"""A loopback-only HTTP listener for the live view where no HTTP server runs: the stdio server and
`boxwright login`. Started on first use (the first live view link), on 127.0.0.1 and
`live_view_port` (0: any free port), and stopped with the process's services."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Iterator

import anyio
import uvicorn
from anyio.abc import TaskGroup, TaskStatus
from starlette.applications import Starlette
from starlette.routing import BaseRoute

from host.mcp.hosts import CanonicalHost

log = logging.getLogger("boxwright.live")

HOST = "127.0.0.1"
STOP_GRACE_S = 5.0


class _Server(uvicorn.Server):
    """Signals belong to the process (the stdio server's handler), not to this listener."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class LoopbackListener:
    def __init__(self, port: int) -> None:
        self.port = port
        self.base_url: str | None = None
        self._server: _Server | None = None
        self._tg: TaskGroup | None = None
        self._lock = anyio.Lock()
        self._stopped = anyio.Event()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield
            finally:
                self._tg = None
                if self._server is not None:
                    self._server.should_exit = True
                    with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_GRACE_S):
                        await self._stopped.wait()
                tg.cancel_scope.cancel()

    async def ensure(self, routes: list[BaseRoute]) -> str:
        """The listener's base URL, starting it on first use."""
        async with self._lock:
            if self.base_url is None:
                if self._tg is None:
                    raise RuntimeError("the live view listener is used outside Services.running()")
                self.base_url = await self._tg.start(self._serve, routes)
            return self.base_url

    async def _serve(self, routes: list[BaseRoute], *, task_status: TaskStatus[str]) -> None:
        app = Starlette(routes=routes)
        app.add_middleware(CanonicalHost)
        config = uvicorn.Config(
            app, host=HOST, port=self.port, log_level="warning", lifespan="off", ws="websockets-sansio"
        )
        server = self._server = _Server(config)
        async with anyio.create_task_group() as tg:

            async def serve() -> None:
                try:
                    await server.serve()
                except SystemExit:  # uvicorn's answer to a port it cannot bind
                    log.error("the live view listener could not bind %s:%d", HOST, self.port)
                finally:
                    self._stopped.set()

            tg.start_soon(serve)
            while not server.started:
                if self._stopped.is_set():
                    raise OSError(f"the live view listener could not start on {HOST}:{self.port}")
                await anyio.sleep(0.01)
            port = server.servers[0].sockets[0].getsockname()[1]
            log.info("live view listener on http://%s:%d", HOST, port)
            task_status.started(f"http://{HOST}:{port}")
