"""MCP over stdio without worker threads: the SDK's framing (one JSON-RPC message per line, UTF-8) read and
written through the event loop's non-blocking pipes.

The SDK's `stdio_server` reads each line and writes (and flushes) each answer through anyio worker
threads: three thread hand-offs per tool call, ~0.35 ms of the server's CPU (measured on a no-op tool:
1.40 → 1.04 ms per call) and as many wake-ups on the critical path. This transport feeds the same
lowlevel server the same messages; everything above it (sessions, dispatch, validation) is the SDK's.

Like the SDK, it takes fds 0 and 1 over for the wire while serving: fd 0 then reads the null device and
fd 1 goes to stderr, so a stray print or a child process cannot corrupt the protocol; both are put back
on exit. It serves only pipes, sockets and character devices (what `connect_read_pipe` accepts); for
anything else (a regular file on stdin, say), or an SDK without `MCPServer._lowlevel_server` (the
server the SDK's own `run_stdio_async` serves; it has no public name), `serve` falls back to the SDK's
own transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.shared.message import SessionMessage

log = logging.getLogger(__name__)

# A line longer than this is refused as unreadable, not buffered on: the biggest legitimate request
# (file_write's 2 MiB as base64 in JSON) is well under it.
MAX_LINE_BYTES = 32 * 1024 * 1024


def _streamable(fd: int) -> bool:
    """What the loop's pipe transports accept: a pipe, a socket or a character device."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


class _Claim:
    """Private duplicates of fds 0 and 1 for the wire; 0 → /dev/null and 1 → stderr meanwhile."""

    def __init__(self) -> None:
        self.wire_in = os.dup(0)
        self.wire_out = os.dup(1)
        self._saved = (os.dup(0), os.dup(1))
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
        os.dup2(2, 1)

    def restore(self) -> None:
        for fd, saved in zip((0, 1), self._saved, strict=True):
            with contextlib.suppress(OSError):
                os.dup2(saved, fd)
            os.close(saved)


async def _read_lines(reader: asyncio.StreamReader, sink: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
    """One message per line, decoded as the SDK does (UTF-8, undecodable bytes replaced)."""
    async with sink:
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:  # EOF: a last line without its newline still counts
                line = exc.partial
                if not line.strip():
                    return
            except asyncio.LimitOverrunError:
                await _skip_line(reader)
                await sink.send(ValueError(f"a message longer than {MAX_LINE_BYTES} bytes was dropped"))
                continue
            if not line.strip():
                continue
            try:
                message = types.jsonrpc_message_adapter.validate_json(
                    line.decode("utf-8", errors="replace"), by_name=False
                )
            except Exception as exc:  # the SDK's stdio transport hands these on too
                await sink.send(exc)
                continue
            await sink.send(SessionMessage(message))


async def _forward(reader: asyncio.StreamReader, sink: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):  # the server stopped reading
        await _read_lines(reader, sink)


async def _skip_line(reader: asyncio.StreamReader) -> None:
    """Drop buffered bytes up to and including the next newline (or to EOF)."""
    while True:
        try:
            await reader.readuntil(b"\n")
            return
        except asyncio.LimitOverrunError as exc:
            await reader.readexactly(exc.consumed)
        except asyncio.IncompleteReadError:
            return


async def _write_lines(source: MemoryObjectReceiveStream[SessionMessage], writer: asyncio.StreamWriter) -> None:
    """Each message as one line; ends when the server closes its side or the client stops reading."""
    async with source:
        try:
            async for item in source:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                writer.write(data.encode("utf-8") + b"\n")
                await writer.drain()
        except (BrokenPipeError, ConnectionResetError):
            log.info("the client closed its end of stdout")


async def serve(server: MCPServer) -> None:
    """Serve `server` over this process's stdin/stdout until the client closes stdin."""
    lowlevel = getattr(server, "_lowlevel_server", None)  # what the SDK's run_stdio_async serves; no public name
    if lowlevel is None or not (_streamable(0) and _streamable(1)):
        await server.run_stdio_async()
        return
    loop = asyncio.get_running_loop()
    claim = _Claim()
    try:
        reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(claim.wire_in, "rb", buffering=0)
        )
        write_transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(claim.wire_out, "wb", buffering=0)
        )
        writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
        incoming_in, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        outgoing, outgoing_out = anyio.create_memory_object_stream[SessionMessage](0)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_forward, reader, incoming_in)
                tg.start_soon(_write_lines, outgoing_out, writer)
                try:
                    await lowlevel.run(incoming, outgoing, lowlevel.create_initialization_options())
                finally:
                    outgoing.close()  # the writer sends what is queued, then ends
                    incoming.close()
        finally:
            read_transport.close()
            write_transport.close()
    finally:
        claim.restore()
