"""MCP over stdio without worker threads: the SDK's framing (one JSON-RPC message per line, UTF-8) read and
written through the event loop's non-blocking pipes.

The SDK's `stdio_server` reads each line and writes (and flushes) each answer through anyio worker
threads: three thread hand-offs per tool call, ~0.35 ms of the server's CPU (measured on a no-op tool:
1.40 → 1.04 ms per call) and as many wake-ups on the critical path. This transport feeds the same
lowlevel server the same messages; everything above it (sessions, dispatch, validation) is the SDK's.

Like the SDK, it takes fds 0 and 1 over for the wire while serving: fd 0 then reads the null device and
fd 1 goes to stderr, so a stray print or a child process cannot corrupt the protocol; both are put back
on exit. It serves only pipes, sockets and character devices the loop can poll (what `connect_read_pipe`
accepts); for anything else (a regular file or /dev/null on stdin, say: read to its end at once), or an
SDK without `MCPServer._lowlevel_server` (the server the SDK's own `run_stdio_async` serves; it has no
public name), `serve` falls back to the SDK's own transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import selectors
import stat
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

log = logging.getLogger(__name__)

# A line longer than this is refused as unreadable, not buffered on: the biggest legitimate request
# (file_write's 2 MiB as base64 in JSON) is well under it.
MAX_LINE_BYTES = 32 * 1024 * 1024


def _streamable(fd: int) -> bool:
    """What the loop's pipe transports accept: a pipe, a socket or a character device the loop's selector
    can watch. epoll refuses some character devices (/dev/null, /dev/zero) with EPERM, and the pipe
    transport only finds out in a callback — the server then waits for ever on a reader never registered."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return True
    return stat.S_ISCHR(mode) and _pollable(fd)


def _pollable(fd: int) -> bool:
    """Whether the event loop's selector accepts `fd` (tried on a selector of its own, not the loop's)."""
    with selectors.DefaultSelector() as selector:
        try:
            selector.register(fd, selectors.EVENT_READ | selectors.EVENT_WRITE)
        except (OSError, ValueError):
            return False
    return True


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


class _TooLong:
    """A number past Python's digit limit: no usable id (an id of 0 would be another request's)."""


def _lenient_int(digits: str) -> int | _TooLong:
    return int(digits) if len(digits) <= 4000 else _TooLong()


def bad_id_answer(text: str) -> types.JSONRPCError | None:
    """The SDK takes a request whose id is neither a string nor an integer (null, 1.5, true, an object)
    for a notification and answers nothing, so its client waits forever; MCP says such an id is not
    allowed, and JSON-RPC answers an invalid request with an error of id null."""
    try:
        parsed: Any = json.loads(text, parse_int=_lenient_int)
    except (ValueError, RecursionError):
        return None
    if not isinstance(parsed, dict) or "id" not in parsed:
        return None
    kind = "null" if parsed["id"] is None else type(parsed["id"]).__name__.lstrip("_")
    return _error(None, types.INVALID_REQUEST, f"a request's id must be a string or an integer, not {kind}")


def unreadable_answer(text: str, exc: Exception) -> types.JSONRPCError | None:
    """What a line that is not a valid JSON-RPC message is owed: an error carrying its request's id when a
    lenient parse finds one, so the client is not left waiting for an answer that never comes (the SDK's
    session answers such lines with nothing); a parse error without id when no id can be read; nothing
    for a notification. Lenient means Python's json: it reads what the strict parser refuses (a lone
    surrogate escape, a number of thousands of digits), though not nesting past its recursion limit."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    reason = errors[0]["msg"] if errors else str(exc)
    if "hex escape" in reason or "surrogate" in reason:
        reason += " (a \\uD800-\\uDFFF escape without its pair: a string cut inside a character)"
    try:
        parsed: Any = json.loads(text, parse_int=_lenient_int)
    except (ValueError, RecursionError):
        return _error(None, types.PARSE_ERROR, reason)
    if not isinstance(parsed, dict):
        return _error(None, types.INVALID_REQUEST, reason)
    if "result" in parsed or "error" in parsed or ("method" in parsed and "id" not in parsed):
        return None  # a response or a notification: nobody waits for an answer to it
    rid = parsed.get("id")
    if isinstance(rid, bool) or not isinstance(rid, int | str):
        rid = None
    text_level = bool(errors) and errors[0]["type"] == "json_invalid"
    return _error(rid, types.PARSE_ERROR if text_level else types.INVALID_REQUEST, f"unreadable message: {reason}")


def _error(rid: types.RequestId | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=message[:500]))


async def _read_lines(
    reader: asyncio.StreamReader,
    sink: MemoryObjectSendStream[SessionMessage | Exception],
    answers: MemoryObjectSendStream[SessionMessage],
) -> None:
    """One message per line, decoded as the SDK does (UTF-8, undecodable bytes replaced); a line that is
    no message is answered here (`unreadable_answer`)."""
    async with sink, answers:
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:  # EOF: a last line without its newline still counts
                line = exc.partial
                if not line.strip():
                    return
            except asyncio.LimitOverrunError:
                await _skip_line(reader)
                too_long = _error(None, types.PARSE_ERROR, f"a message longer than {MAX_LINE_BYTES} bytes was dropped")
                log.warning("unreadable message on stdin: %s", too_long.error.message)
                await answers.send(SessionMessage(too_long))
                continue
            if not line.strip():
                continue
            text = line.decode("utf-8", errors="replace")
            try:
                message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
            except Exception as exc:
                answer = unreadable_answer(text, exc)
                log.warning("unreadable message on stdin: %s", answer.error.message if answer else exc)
                if answer is not None:
                    await answers.send(SessionMessage(answer))
                continue
            if isinstance(message, types.JSONRPCNotification) and '"id"' in text:
                answer = bad_id_answer(text)
                if answer is not None:
                    log.warning("unreadable message on stdin: %s", answer.error.message)
                    await answers.send(SessionMessage(answer))
                    continue
            await sink.send(SessionMessage(message))


async def _forward(
    reader: asyncio.StreamReader,
    sink: MemoryObjectSendStream[SessionMessage | Exception],
    answers: MemoryObjectSendStream[SessionMessage],
) -> None:
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):  # the server stopped reading
        await _read_lines(reader, sink, answers)


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
                tg.start_soon(_forward, reader, incoming_in, outgoing.clone())
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
