"""The agent's side of the code runner: it listens for the daemon, admits only the genuine one
(sandbox_image.code.channel says how), and forwards code.run / process.* to it.

The agent (uid agent) cannot start processes as uid runner, so these methods are validated here and
answered by the daemon. A call made while no daemon is connected never reaches one: that is
CODE_RUNNER_UNAVAILABLE, which the host answers by starting a daemon and retrying. A call whose daemon
goes away after the request was handed over may have run, partly or fully: that is
RUN_OUTCOME_UNKNOWN, which is never retried (a code run must not execute twice).
"""

from __future__ import annotations

import asyncio
import contextlib
import grp
import hmac
import itertools
import json
import logging
import os
import stat
from dataclasses import dataclass, field
from typing import Any

from rpc.auth import token_sha256
from rpc.deadline import Deadline
from rpc.envelope import UnreadableResponse, decode_response, encode_request
from rpc.errors import BoxwrightError, ErrorCode
from rpc.methods import BY_NAME, RUNNER_METHODS, Method
from rpc.models.base import Params, Result
from rpc.settings import SettingsError
from sandbox_image.code.channel import (
    FATAL,
    HELLO_TIMEOUT_S,
    MAX_LINE_BYTES,
    cancel_line,
    peer_credentials,
    read_hello,
)
from sandbox_image.dispatcher import Dispatcher, Handler

SOCKET_MODE = 0o660
MAX_KNOCKING = 8  # connections waiting for their hello at once; more are hung up on (runner code may flood)
log = logging.getLogger("boxwright.agent.runner")


def _unavailable(why: str, socket_path: str) -> BoxwrightError:
    return BoxwrightError(
        ErrorCode.CODE_RUNNER_UNAVAILABLE,
        f"the code runner is not available: {why}",
        details={"socket": socket_path, "sent": False},
    )


def _lost(method: Method[Any, Any]) -> BoxwrightError:
    return BoxwrightError(
        ErrorCode.RUN_OUTCOME_UNKNOWN,
        f"the code runner stopped while handling {method.name}: whether it ran, and how far, is unknown",
        details={"method": method.name},
    )


@dataclass(eq=False)
class _Connection:
    """The admitted daemon: its stream, and the calls waiting for an answer (by request id)."""

    pid: int
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    pending: dict[int, tuple[Method[Any, Any], asyncio.Future[bytes]]] = field(default_factory=dict)
    open: bool = True
    task: asyncio.Task[None] | None = None


class RunnerLink:
    """Listens on `socket_path`; admits a connection only from a process of `runner_uid` presenting the
    secret whose SHA-256 is `secret_sha256`; forwards calls over the admitted one (the newest wins)."""

    def __init__(
        self, socket_path: str, *, runner_uid: int | None, secret_sha256: str | None, group: str | None = None
    ) -> None:
        self.socket_path = socket_path
        self.runner_uid = runner_uid
        self.secret_sha256 = secret_sha256
        self.group = group
        self._server: asyncio.Server | None = None
        self._conn: _Connection | None = None
        self._ids = itertools.count(1)
        self.refused = 0  # connections that failed the checks (for tests and logs)
        self._knocking = 0

    @property
    def ready(self) -> bool:
        """A genuine daemon is connected."""
        return self._conn is not None and self._conn.open

    async def start(self) -> None:
        # The socket appears under its name only once its mode and group let the runner in: the daemon
        # may be connecting already, and a socket it cannot open yet (EACCES) would end it for good.
        staging = f"{self.socket_path}.new"
        remove_stale_socket(staging)
        remove_stale_socket(self.socket_path)
        self._server = await asyncio.start_unix_server(self._admit, staging, limit=MAX_LINE_BYTES)
        os.chmod(staging, SOCKET_MODE)
        share_socket(staging, self.group)
        os.rename(staging, self.socket_path)
        if self.runner_uid is None or self.secret_sha256 is None:
            log.warning("no runner user or secret configured: no code runner will be admitted")

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._conn is not None:
            await self._drop(self._conn)
        with contextlib.suppress(OSError):
            os.unlink(self.socket_path)

    # -- admission --------------------------------------------------------------------------
    async def _admit(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        pid, uid, _gid = peer_credentials(writer.get_extra_info("socket"))
        why = self._refusal(uid)
        if why is None and self._knocking >= MAX_KNOCKING:
            why = "too many connections waiting"
        if why is None:
            self._knocking += 1
            try:
                raw = await asyncio.wait_for(reader.readline(), HELLO_TIMEOUT_S)
            except (TimeoutError, ValueError, ConnectionError):
                raw = b""
            finally:
                self._knocking -= 1
            secret = read_hello(raw)
            if secret is None or not hmac.compare_digest(token_sha256(secret), self.secret_sha256 or ""):
                why = "wrong or missing secret"
        if why is not None:
            self.refused += 1
            log.warning("refused a connection as the code runner from pid %d (uid %d): %s", pid, uid, why)
            writer.close()
            return
        conn = _Connection(pid, reader, writer)
        old, self._conn = self._conn, conn
        conn.task = asyncio.create_task(self._read(conn), name=f"runner {pid}")
        log.info("code runner connected (pid %d)", pid)
        if old is not None:
            await self._drop(old)

    def _refusal(self, uid: int) -> str | None:
        if self.runner_uid is None or self.secret_sha256 is None:
            return "no runner is expected"
        if uid != self.runner_uid:
            return f"not the runner user (uid {self.runner_uid})"
        return None

    # -- calls ------------------------------------------------------------------------------
    async def call(self, method: Method[Any, Any], params: Params, deadline: Deadline) -> Result:
        """Forward one call with what is left of the deadline; the daemon's errors are re-raised as-is."""
        conn = self._conn
        if conn is not None and conn.open and _stopped(conn.pid):
            # Code it ran can stop it (kill -STOP: same user): it would take every call until its timeout,
            # for good. Dropped, the host starts a new daemon (which ends the old one) and calls again.
            log.warning("code runner (pid %d) is stopped (SIGSTOP): dropped for a new one", conn.pid)
            await self._drop(conn)
            raise _unavailable(f"the code runner (pid {conn.pid}) was stopped by a signal", self.socket_path)
        if conn is None or not conn.open or conn.writer.is_closing():
            raise _unavailable("no code runner is connected", self.socket_path)
        request_id = next(self._ids)
        body = encode_request(method, params, deadline_ms=deadline.remaining_ms(), request_id=request_id)
        answer: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        conn.pending[request_id] = (method, answer)
        try:
            # From here on the request may reach the daemon: a failure is "outcome unknown", never "not sent".
            try:
                conn.writer.write(body + b"\n")
                await conn.writer.drain()
            except (ConnectionError, OSError):
                await self._drop(conn)
            raw = await answer
        except asyncio.CancelledError:
            # The host gave up on the call (cancelled, or its connection went): the daemon stops it too.
            if conn.open and not conn.writer.is_closing():
                conn.writer.write(cancel_line(request_id))
            raise
        finally:
            conn.pending.pop(request_id, None)
        try:
            return decode_response(method, raw)
        except UnreadableResponse:
            raise BoxwrightError(ErrorCode.INTERNAL_ERROR, "the code runner sent an unreadable answer") from None

    async def _read(self, conn: _Connection) -> None:
        try:
            while raw := await conn.reader.readline():
                try:
                    message = json.loads(raw)
                    request_id = message.get("id")
                except (ValueError, AttributeError):
                    log.warning("the code runner sent an unreadable line; dropping it")
                    break
                if FATAL in message:
                    log.error("the code runner (pid %d) cannot serve: %s", conn.pid, str(message[FATAL])[:1000])
                    break
                _method, waiting = conn.pending.get(request_id, (None, None))
                if waiting is not None and not waiting.done():
                    waiting.set_result(raw)
        except (ConnectionError, ValueError, asyncio.IncompleteReadError):  # ValueError: an over-long line
            pass
        finally:
            conn.open = False
            if self._conn is conn:
                self._conn = None
                log.warning("code runner (pid %d) disconnected", conn.pid)
            for method, waiting in list(conn.pending.values()):
                if not waiting.done():
                    waiting.set_exception(_lost(method))
            conn.writer.close()

    async def _drop(self, conn: _Connection) -> None:
        conn.open = False
        conn.writer.close()
        if conn.task is not None and conn.task is not asyncio.current_task():
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(conn.task), 2.0)


def _stopped(pid: int) -> bool:
    """Whether the process is stopped by a signal (state T in /proc/<pid>/stat)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            state = stat_file.read().rsplit(b")", 1)[1].split()[0]  # after the command name, which may hold ')'
    except (OSError, IndexError):
        return False
    return state == b"T"


def remove_stale_socket(path: str) -> None:
    """A socket left by an earlier agent blocks bind(); anything that is not a socket is not ours to delete."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise SettingsError(f"{path} exists and is not a socket; refusing to replace it")
    os.unlink(path)


def share_socket(path: str, group: str | None) -> None:
    """Give the socket to the group the runner is in (changing to a group we belong to needs no
    capability); the directory stays the agent's alone."""
    if not group:
        return
    try:
        gid = grp.getgrnam(group).gr_gid
    except KeyError:
        log.warning("group %r does not exist; the socket keeps group %d", group, os.stat(path).st_gid)
        return
    os.chown(path, -1, gid)


def _forwarder(link: RunnerLink, method: Method[Any, Any]) -> Handler[Any, Any]:
    async def forward(params: Params, deadline: Deadline) -> Result:
        return await link.call(method, params, deadline)

    return forward


def register(dispatcher: Dispatcher, link: RunnerLink) -> None:
    """Serve the runner's methods in the agent by forwarding them."""
    for name in sorted(RUNNER_METHODS):
        method = BY_NAME[name]
        dispatcher.register(method, _forwarder(link, method))
