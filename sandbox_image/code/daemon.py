"""The code runner daemon, started by the host as user runner with its secret on stdin:

    docker exec -i --user runner <container> python3 -m sandbox_image.code.daemon --take-over

It connects to the agent's socket (default /run/boxwright/runner.sock), proves itself with the secret
(sandbox_image.code.channel explains why nothing else can) and serves code.run and process.* with the
same dispatcher as the agent, one JSON line per request and answer, concurrently.

`--take-over` is what makes a fresh daemon trustworthy next to hostile code of the same user: before it
reads its secret it becomes non-dumpable, kills every other process of its user (a previous daemon,
its orphans, whatever runner code left running), checks that nothing traces it, and only then says
`ready` on stdout. The host writes the secret after that line; the daemon answers `ok` once it has
connected to the agent and said hello (`confirm_connected`), which ends the host's handshake.
`take_over` refuses to run as root or as any user but the configured runner user. It also makes the
daemon a child subreaper (processes a run leaves behind are reparented to it, so it can end them:
procs.Children) and the OOM killer's second choice, after code processes (which spawn makes the first).
"""

from __future__ import annotations

import sys

# No OpenSSL in the runner, as in the agent (sandbox_image/__main__.py): it speaks only to the agent's Unix
# socket, and asyncio loads `ssl` when it can. Set before asyncio is imported, and only when run as the daemon.
if __name__ == "__main__" and "ssl" not in sys.modules:
    sys.modules["ssl"] = None  # type: ignore[assignment]  # the import system's "no such module" marker

import argparse
import asyncio
import contextlib
import ctypes
import logging
import os
import pwd
import signal
import time
from collections.abc import Callable

from rpc.settings import SettingsError
from sandbox_image import AGENT_VERSION
from sandbox_image.code import handlers
from sandbox_image.code.background import ProcessManager
from sandbox_image.code.channel import MAX_LINE_BYTES, hello, line
from sandbox_image.code.procs import DAEMON_OOM_SCORE_ADJ
from sandbox_image.code.runner import CodeRunner
from sandbox_image.config import SandboxSettings, load_or_exit
from sandbox_image.dispatcher import Dispatcher
from sandbox_image.logs import setup_logging

READY_LINE = b"ready\n"
ACCEPTED_LINE = b"ok\n"
CONNECT_TIMEOUT_S = 60.0  # the agent may still be starting: its socket appears when it listens
SECRET_TIMEOUT_S = 30.0
TAKE_OVER_PASSES = 50
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
ZOMBIE_SWEEP_S = 5.0
log = logging.getLogger("boxwright.runner")


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
        self.on_connected: Callable[[], None] | None = None  # called once the hello is sent

    async def serve(self, secret: str, *, connect_within_s: float = CONNECT_TIMEOUT_S) -> None:
        """Connect, say hello, answer requests until the agent hangs up (or this task is cancelled)."""
        reader, writer = await self._connect(connect_within_s)
        self._writer = writer
        lock = asyncio.Lock()

        async def answer(raw: bytes) -> None:
            response = await self.dispatcher.dispatch_bytes(raw)
            async with lock:
                with contextlib.suppress(ConnectionError):
                    writer.write(line(response))
                    await writer.drain()

        reaping = asyncio.create_task(self._reap_zombies())
        try:
            writer.write(hello(secret))
            await writer.drain()
            log.info("connected to the agent at %s", self.settings.runner_socket)
            if self.on_connected is not None:
                self.on_connected()
            while raw := await reader.readline():
                task = asyncio.create_task(answer(raw))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        except (ConnectionError, ValueError):  # ValueError: an over-long line
            pass
        finally:
            reaping.cancel()
            await self.close()

    async def _reap_zombies(self) -> None:
        while True:
            await asyncio.sleep(ZOMBIE_SWEEP_S)
            self.runner.children.reap_zombies()

    async def _connect(self, within_s: float) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        deadline = time.monotonic() + within_s
        while True:
            try:
                return await asyncio.open_unix_connection(self.settings.runner_socket, limit=MAX_LINE_BYTES)
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > deadline:
                    raise SettingsError(f"no agent listens on {self.settings.runner_socket}") from None
                await asyncio.sleep(0.02)

    async def close(self) -> None:
        """Stop answering and kill every background process (the daemon is going away)."""
        for task in list(self._tasks):
            task.cancel()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        await self.processes.shutdown()


# -- taking over (only in the real daemon process, never in tests) -----------------------------
def take_over(settings: SandboxSettings) -> tuple[str, int | None]:
    """Become the only, untraceable process of the runner user, then read the secret from stdin.
    Returns the secret and an open fd on this process's oom_score_adj (procs.Children.oom_score_fd)."""
    me = pwd.getpwuid(os.getuid()).pw_name
    if os.getuid() == 0 or me != settings.runner_user:
        raise SettingsError(f"--take-over runs only as the runner user {settings.runner_user!r}, not {me!r}")
    # Before becoming non-dumpable, which makes our /proc files root's.
    oom_score_fd: int | None = None
    with contextlib.suppress(OSError):
        oom_score_fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY | os.O_CLOEXEC)
        os.write(oom_score_fd, str(DAEMON_OOM_SCORE_ADJ).encode())
    libc = ctypes.CDLL(None, use_errno=True)
    for option, value in ((PR_SET_DUMPABLE, 0), (PR_SET_CHILD_SUBREAPER, 1)):
        if libc.prctl(option, value, 0, 0, 0) != 0:
            raise SettingsError(f"prctl({option}, {value}) failed: {os.strerror(ctypes.get_errno())}")
    for _ in range(TAKE_OVER_PASSES):
        others = [pid for pid in _pids_of(os.getuid()) if pid != os.getpid()]
        if not others:
            break
        for pid in others:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
    else:
        raise SettingsError("other processes of the runner user keep appearing; refusing to start")
    if _tracer() != 0:
        raise SettingsError("this process is being traced; refusing to start")
    sys.stdout.buffer.write(READY_LINE)
    sys.stdout.flush()
    secret = sys.stdin.buffer.readline(4096).strip().decode("ascii", "replace")
    if not secret:
        raise SettingsError("no secret on stdin")
    return secret, oom_score_fd


def confirm_connected() -> None:
    """Tell the host (on the exec's stdout) that the daemon reached the agent and said hello.

    Said only once connected, so a daemon that dies or cannot reach the agent shows up at once as the
    host's failed handshake, with its last words on stderr, instead of a start-up timeout.
    """
    sys.stdout.buffer.write(ACCEPTED_LINE)
    sys.stdout.flush()
    # The host hangs up on the exec's streams now: nothing more is said on them (logs included).
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


def _pids_of(uid: int) -> list[int]:
    """Live processes whose real uid is `uid` (zombies need no killing)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                status = dict(row.split(":", 1) for row in f.read().splitlines() if ":" in row)
        except OSError:
            continue
        if int(status.get("Uid", "-1").split()[0]) == uid and not status.get("State", "").strip().startswith("Z"):
            found.append(int(name))
    return found


def _tracer() -> int:
    with open("/proc/self/status") as f:
        for row in f:
            if row.startswith("TracerPid:"):
                return int(row.split()[1])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m sandbox_image.code.daemon")
    parser.add_argument("--take-over", action="store_true", help="the sandbox's runner (see the module doc)")
    args = parser.parse_args(argv)
    settings = load_or_exit("runner")
    setup_logging("runner", settings.log_level)
    try:
        secret, oom_score_fd = take_over(settings) if args.take_over else (sys.stdin.readline().strip(), None)
        log.info("code runner %s (uid %d) connecting to %s", AGENT_VERSION, os.getuid(), settings.runner_socket)
        daemon = RunnerDaemon(settings, subreaper=args.take_over)
        daemon.runner.children.oom_score_fd = oom_score_fd
        if args.take_over:
            daemon.on_connected = confirm_connected
        asyncio.run(_run(daemon, secret))
    except SettingsError as exc:
        print(f"boxwright runner: {exc}", file=sys.stderr)
        return 2
    return 0


async def _run(daemon: RunnerDaemon, secret: str) -> None:
    serving = asyncio.current_task()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        if serving is not None:
            loop.add_signal_handler(sig, serving.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await daemon.serve(secret)


if __name__ == "__main__":
    sys.exit(main())
