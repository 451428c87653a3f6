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

Every sandbox start waits for that handshake while the agent boots on the same busy cores, so this
module gets there on the standard library alone: the two settings it needs (runner user and socket)
are read from the environment as rpc.envvars names them; pydantic, the settings object and what serves
code.run (sandbox_image.code.serving) are loaded after the hello, while the start is already done.
Requests that arrive meanwhile wait in the socket.
"""

from __future__ import annotations

import sys

# No OpenSSL in the runner, as in the agent (sandbox_image/__main__.py): it speaks only to the agent's Unix
# socket, and asyncio loads `ssl` when it can. Set before asyncio is imported, and only when run as the daemon.
if __name__ == "__main__" and "ssl" not in sys.modules:
    sys.modules["ssl"] = None  # type: ignore[assignment]  # the import system's "no such module" marker

import contextlib
import ctypes
import os
import pwd
import signal
import socket
import time
from typing import TYPE_CHECKING

from rpc.envvars import env_value
from sandbox_image.code.channel import FATAL, RUNNER_SOCKET, RUNNER_USER, NoAgent, handshake, line

if TYPE_CHECKING:
    from sandbox_image.code.serving import RunnerDaemon

READY_LINE = b"ready\n"
ACCEPTED_LINE = b"ok\n"
TAKE_OVER_PASSES = 50
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
USAGE = "usage: python3 -m sandbox_image.code.daemon [--take-over]"


class StartRefused(Exception):
    """The daemon cannot start safely here (printed on stderr, exit 2)."""


# -- taking over (only in the real daemon process, never in tests) -----------------------------
def take_over(runner_user: str) -> tuple[str, int | None]:
    """Become the only, untraceable process of the runner user, then read the secret from stdin.
    Returns the secret and an open fd on this process's oom_score_adj (procs.Children.keep_oom_score)."""
    me = pwd.getpwuid(os.getuid()).pw_name
    if os.getuid() == 0 or me != runner_user:
        raise StartRefused(f"--take-over runs only as the runner user {runner_user!r}, not {me!r}")
    # Before becoming non-dumpable, which makes our /proc files root's.
    oom_score_fd: int | None = None
    with contextlib.suppress(OSError):
        oom_score_fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY | os.O_CLOEXEC)
    libc = ctypes.CDLL(None, use_errno=True)
    for option, value in ((PR_SET_DUMPABLE, 0), (PR_SET_CHILD_SUBREAPER, 1)):
        if libc.prctl(option, value, 0, 0, 0) != 0:
            raise StartRefused(f"prctl({option}, {value}) failed: {os.strerror(ctypes.get_errno())}")
    for _ in range(TAKE_OVER_PASSES):
        others = [pid for pid in _pids_of(os.getuid()) if pid != os.getpid()]
        if not others:
            break
        for pid in others:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
    else:
        raise StartRefused("other processes of the runner user keep appearing; refusing to start")
    if _tracer() != 0:
        raise StartRefused("this process is being traced; refusing to start")
    sys.stdout.buffer.write(READY_LINE)
    sys.stdout.flush()
    secret = sys.stdin.buffer.readline(4096).strip().decode("ascii", "replace")
    if not secret:
        raise StartRefused("no secret on stdin")
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
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["--take-over"]):
        print(USAGE, file=sys.stderr)
        return 2
    taking_over = bool(args)
    runner_user, runner_socket = env_value("runner_user", RUNNER_USER), env_value("runner_socket", RUNNER_SOCKET)
    try:
        secret, oom_score_fd = take_over(runner_user) if taking_over else (sys.stdin.readline().strip(), None)
        sock = handshake(secret, runner_socket, confirm=confirm_connected if taking_over else None)
    except (StartRefused, NoAgent, OSError) as exc:
        print(f"boxwright runner: {exc}", file=sys.stderr)
        return 2
    return serve(sock, (runner_user, runner_socket), oom_score_fd, subreaper=taking_over)


def serve(sock: socket.socket, handshake: tuple[str, str], oom_score_fd: int | None, *, subreaper: bool) -> int:
    """Load the settings and the serving side (the start no longer waits) and answer until the agent hangs up.
    A failure to load goes to the agent's log (channel.FATAL): this process's stderr ended with the handshake."""
    import asyncio

    try:
        daemon = _load(handshake, subreaper=subreaper)
    except Exception as exc:
        with contextlib.suppress(OSError):
            sock.sendall(line({FATAL: f"{type(exc).__name__}: {exc}"[:1000]}))
        sock.close()
        return 2
    daemon.runner.children.keep_oom_score(oom_score_fd)

    async def run() -> None:
        serving = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            if serving is not None:
                loop.add_signal_handler(sig, serving.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await daemon.serve_admitted(sock)

    asyncio.run(run())
    return 0


def _load(handshake: tuple[str, str], *, subreaper: bool) -> RunnerDaemon:
    from sandbox_image import AGENT_VERSION
    from sandbox_image.code.serving import RunnerDaemon
    from sandbox_image.config import SandboxSettings
    from sandbox_image.logs import setup_logging

    settings = SandboxSettings.load()
    if (settings.runner_user, settings.runner_socket) != handshake:  # e.g. a variable named in other case
        raise StartRefused(f"the settings disagree with the handshake's {handshake}")
    log = setup_logging("runner", settings.log_level)
    log.info("code runner %s (uid %d) admitted at %s", AGENT_VERSION, os.getuid(), settings.runner_socket)
    return RunnerDaemon(settings, subreaper=subreaper)


if __name__ == "__main__":
    sys.exit(main())
