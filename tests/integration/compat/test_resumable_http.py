"""Item 4: a long tool call over streamable HTTP survives a dropped connection. A TCP proxy of our own
sits between the official SDK client and the server and cuts every open connection while a
code_run sleeps; the client must resume the SSE stream (priming event id + retry) and still get
the result."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.integration.conftest import HttpServer


class DroppingProxy:
    """Forwards loopback TCP to the server; `drop()` cuts every connection open at that moment."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = 0
        self.dropped = 0
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> DroppingProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        self.drop()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        self._writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        try:
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            self._writers -= {writer, up_writer}

    def drop(self) -> None:
        for w in list(self._writers):
            self.dropped += 1
            w.transport.abort()
        self._writers.clear()


@asynccontextmanager
async def session_via(url: str, token: str) -> AsyncIterator[ClientSession]:
    """ClientSession.initialize() negotiates 2025-11-25, the first protocol with resumable streams."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(120)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def test_long_call_survives_a_dropped_connection(http_server: HttpServer, tokens: dict[str, str]) -> None:
    port = urlsplit(http_server.url).port
    assert port is not None
    async with DroppingProxy(port) as proxy, session_via(f"http://127.0.0.1:{proxy.port}/mcp", tokens["bob"]) as s:
        created = await s.call_tool("sandbox_create", {})
        assert not created.is_error, created.content
        sid = created.structured_content["sandboxId"]
        try:
            call = asyncio.ensure_future(
                s.call_tool(
                    "code_run",
                    {"sandboxId": sid, "language": "bash", "code": "sleep 6; echo done", "timeoutMs": 30_000},
                )
            )
            await asyncio.sleep(2.5)
            assert not call.done()
            proxy.drop()
            assert proxy.dropped > 0
            result = await asyncio.wait_for(call, 40)
            assert not result.is_error, result.content
            assert result.structured_content["stdout"] == "done\n"
        finally:
            await s.call_tool("sandbox_destroy", {"sandboxId": sid})
