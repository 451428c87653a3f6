"""The two locks of a profile (seed 004 §2.5.1), as flock(2) locks on files in its directory, so they
work across processes without a daemon and vanish with a process that dies holding them.

- `login.lock`: held for a whole `boxwright login`; a second one fails at once, naming the holder.
- `publish.lock`: held for the few milliseconds of a compare-and-set publish; waited for up to
  `snapshot_publish_lock_timeout_ms`.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from rpc.errors import BoxwrightError, ErrorCode

POLL_S = 0.005


def _open(path: Path, mode: int) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, mode)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


@contextmanager
def publish_lock(path: Path, *, timeout_s: float, mode: int, profile_id: str) -> Iterator[None]:
    fd = _open(path, mode)
    try:
        deadline = time.monotonic() + timeout_s
        while not _try_lock(fd):
            if time.monotonic() >= deadline:
                raise BoxwrightError(
                    ErrorCode.PROFILE_BUSY,
                    f"profile {profile_id!r} is being written by someone else (publish.lock not free within "
                    f"{timeout_s * 1000:.0f} ms)",
                    details={"profileId": profile_id},
                )
            time.sleep(POLL_S)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class LoginLock:
    """login.lock of one profile. `acquire` fails fast with PROFILE_BUSY naming who holds it."""

    def __init__(self, path: Path, profile_id: str, mode: int) -> None:
        self.path = path
        self.profile_id = profile_id
        self.mode = mode
        self._fd: int | None = None

    def holder(self) -> str:
        """Who holds it, as its holder wrote it (pid, host, since when); '' if unknown."""
        try:
            info = json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return ""
        if not isinstance(info, dict) or "pid" not in info:
            return ""
        return f"pid {info.get('pid')} on {info.get('host', '?')} since {info.get('since', '?')}"

    def is_held(self) -> bool:
        """Whether some login holds it now (checked by taking it for an instant)."""
        if self._fd is not None:
            return True
        if not self.path.exists():
            return False
        fd = _open(self.path, self.mode)
        try:
            if _try_lock(fd):
                fcntl.flock(fd, fcntl.LOCK_UN)
                return False
            return True
        finally:
            os.close(fd)

    def acquire(self) -> None:
        fd = _open(self.path, self.mode)
        if not _try_lock(fd):
            os.close(fd)
            holder = self.holder()
            raise BoxwrightError(
                ErrorCode.PROFILE_BUSY,
                f"a login on profile {self.profile_id!r} is already running" + (f" ({holder})" if holder else ""),
                hint="finish that login first (Done in its live view, or Enter in its terminal), or use another one",
                details={"profileId": self.profile_id},
            )
        since = datetime.now(UTC).isoformat(timespec="seconds")
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": since}).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> LoginLock:
        self.acquire()
        return self

    def __exit__(self, *_: object) -> None:
        self.release()
