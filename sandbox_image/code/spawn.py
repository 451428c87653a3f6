"""Starting user code: clean environment, private script file, own pipes, own session.

Output goes through pipes we create ourselves rather than asyncio's PIPE: asyncio's
`Process.wait()` also waits for its pipes to close, so an orphan holding stdout open would make
the run hang. With our own pipes, `wait()` returns when the main process exits.
"""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rpc.errors import BoxwrightError, ErrorCode, invalid_parameter, out_of_processes, process_limit
from rpc.models.code import CodeRunParams
from sandbox_image.code.procs import RUN_ID_VAR, Children

# What user code sees: never the daemon's own environment (no BOXWRIGHT_*, no venv).
BASE_ENV: dict[str, str] = {
    "HOME": "/home/runner",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONUNBUFFERED": "1",
    "TMPDIR": "/tmp",
}
# Group-writable so the agent (group sandbox) can read and edit what code creates in the workspace.
USER_UMASK = 0o002
_SUFFIX = {"python": ".py", "bash": ".sh"}


def _bad_env(message: str) -> BoxwrightError:
    return invalid_parameter("env", message)


def user_env(extra: Mapping[str, str], run_id: str | None = None) -> dict[str, str]:
    """BASE_ENV (with the run's id) plus the caller's variables (which may override it)."""
    env = dict(BASE_ENV)
    if run_id:
        env[RUN_ID_VAR] = run_id
    for key, value in extra.items():
        if not key or "=" in key or "\x00" in key:
            raise _bad_env("variable names must be non-empty and contain neither '=' nor NUL")
        if "\x00" in value:
            raise _bad_env("values must not contain NUL bytes")
        env[key] = value
    return env


@dataclass
class Script:
    """A private directory holding the code (so tracebacks have line numbers) and the stdin text."""

    directory: str
    path: str
    stdin_path: str | None

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def write_script(params: CodeRunParams, scratch_dir: str | None) -> Script:
    directory = tempfile.mkdtemp(prefix="boxwright-run-", dir=scratch_dir)  # 0700, unguessable name
    try:
        # Not "code.py": the script's directory is sys.path[0] and must not shadow a stdlib module.
        path = os.path.join(directory, "snippet" + _SUFFIX[params.language])
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(params.code)
        stdin_path = None
        if params.stdin is not None:
            stdin_path = os.path.join(directory, "stdin")
            with open(stdin_path, "w", encoding="utf-8", errors="surrogatepass") as f:
                f.write(params.stdin)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return Script(directory, path, stdin_path)


class PipeReader(asyncio.Protocol):
    """Hands every chunk to `sink`; `done` resolves at EOF (or when the transport is closed)."""

    def __init__(self, sink: Callable[[bytes], None]) -> None:
        self.sink = sink
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        self.sink(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def open_reader(fd: int, sink: Callable[[bytes], None]) -> tuple[asyncio.ReadTransport, PipeReader]:
    """Read the pipe end `fd` on the event loop; the transport owns (and closes) the fd."""
    loop = asyncio.get_running_loop()
    try:
        pipe = os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise
    try:
        transport, protocol = await loop.connect_read_pipe(lambda: PipeReader(sink), pipe)
    except BaseException:
        pipe.close()
        raise
    return transport, protocol


async def spawn(
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    stdin_path: str | None,
    stdout_fd: int,
    stderr_fd: int,
    children: Children | None = None,
) -> asyncio.subprocess.Process:
    """Start `argv` in a new session with the user umask; the caller closes its copies of the fds.
    The process is recorded in `children` (its owner forgets it once it has been waited for)."""
    # A file rather than a pipe: nothing to feed concurrently, no broken pipe if the code ignores stdin.
    stdin_fd = os.open(stdin_path, os.O_RDONLY | os.O_CLOEXEC) if stdin_path else None
    children = children if children is not None else Children()
    try:
        with children.spawn():
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=stdin_fd if stdin_fd is not None else subprocess.DEVNULL,
                stdout=stdout_fd,
                stderr=stderr_fd,
                cwd=cwd,
                env=env,
                start_new_session=True,
                umask=USER_UMASK,
                close_fds=True,
            )
            children.started.add(proc.pid)
            return proc
    except (OSError, RuntimeError) as exc:
        if out_of_processes(exc):
            raise process_limit(f"could not start {os.path.basename(argv[0])}") from None
        if isinstance(exc, RuntimeError):
            raise
        if exc.errno == errno.E2BIG:  # the caller's env (or arguments) is too big to exec: not a broken image
            raise invalid_parameter(
                "env",
                "too large to start a program",
                message=f"could not start {os.path.basename(argv[0])}: the environment and arguments are too large",
                hint="shorten env (each NAME=value at most 128 KiB, all of them together well under 1 MiB); "
                "pass large data in a file or stdin instead",
            ) from None
        raise BoxwrightError(
            ErrorCode.EXECUTION_ERROR,
            f"could not start {os.path.basename(argv[0])}: {exc.strerror}",
            hint="the sandbox image may be broken; recreate the sandbox",
        ) from None
    finally:
        if stdin_fd is not None:
            os.close(stdin_fd)  # the child has its own copy
