"""The code runner daemon's work once it is admitted: its dispatcher, runs and background processes,
and its one connection to the agent (the process, its take-over and handshake: sandbox_image.code.daemon)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from functools import partial

from sandbox_image.code import handlers
from sandbox_image.code.background import ProcessManager
from sandbox_image.code.channel import (
    CONNECT_TIMEOUT_S,
    MAX_LINE_BYTES,
    cancelled_id,
    handshake,
    line,
    request_id_of,
)
from sandbox_image.code.runner import CodeRunner
from sandbox_image.config import SandboxSettings
from sandbox_image.dispatcher import Dispatcher

ZOMBIE_SWEEP_S = 5.0
log = logging.getLogger("boxwright.runner")


def _forget(answering: dict[int, asyncio.Task[None]], request_id: int, _task: asyncio.Task[None]) -> None:
    answering.pop(request_id, None)


class RunnerDaemon:
    """The daemon's work: its dispatcher, runs and background processes, and one connection to the agent."""

    def __init__(self, settings: SandboxSettings, *, subreaper: bool = False) -> None:
        self.settings = settings
        self.dispatcher = Dispatcher("runner")
        self.runner = CodeRunner(settings)
        self.runner.children.subreaper = subreaper
        self.processes = ProcessManager(self.runner)
        handlers.register(self.dispatcher, self.runner, self.processes)
        self._writer: asyncio.StreamWriter | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def serve(self, secret: str, *, connect_within_s: float = CONNECT_TIMEOUT_S) -> None:
        """Connect, say hello, answer requests until the agent hangs up (or this task is cancelled): the
        daemon's handshake and serving in one, for a daemon run in-process (tests, FakeBackend)."""
        sock = await asyncio.to_thread(handshake, secret, self.settings.runner_socket, within_s=connect_within_s)
        log.info("connected to the agent at %s", self.settings.runner_socket)
        await self.serve_admitted(sock)

    async def serve_admitted(self, sock: socket.socket) -> None:
        """Answer requests on `sock`, a connection that has said its hello already (the daemon's handshake)."""
        reader, writer = await asyncio.open_unix_connection(sock=sock, limit=MAX_LINE_BYTES)
        await self._answer(reader, writer)

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        lock = asyncio.Lock()

        async def answer(raw: bytes) -> None:
            response = await self.dispatcher.dispatch_bytes(raw)
            async with lock:
                with contextlib.suppress(ConnectionError):
                    writer.write(line(response))
                    await writer.drain()

        reaping = asyncio.create_task(self._reap_zombies())
        answering: dict[int, asyncio.Task[None]] = {}  # by request id, for a cancel line
        try:
            while raw := await reader.readline():
                cancelled = cancelled_id(raw)
                if cancelled is not None:
                    if (running := answering.get(cancelled)) is not None:
                        running.cancel()
                    continue
                task = asyncio.create_task(answer(raw))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
                if (request_id := request_id_of(raw)) is not None:
                    answering[request_id] = task
                    task.add_done_callback(partial(_forget, answering, request_id))
        except (ConnectionError, ValueError):  # ValueError: an over-long line
            pass
        finally:
            reaping.cancel()
            await self.close()

    async def _reap_zombies(self) -> None:
        while True:
            await asyncio.sleep(ZOMBIE_SWEEP_S)
            self.runner.children.reap_zombies()

    async def close(self) -> None:
        """Stop answering and kill every background process (the daemon is going away)."""
        for task in list(self._tasks):
            task.cancel()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        await self.processes.shutdown()
