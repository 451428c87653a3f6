"""Which live server manages which sandbox: one flock'ed file per sandbox in the state dir.

An flock dies with its process — SIGKILL included — so a sandbox whose lock can be taken has no
live manager and may be adopted or removed; one whose lock is held belongs to another server.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path


class OwnershipLocks:
    def __init__(self, state_dir: Path, namespace: str) -> None:
        self.dir = state_dir / "locks" / namespace
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._held: dict[str, int] = {}

    def try_acquire(self, sandbox_id: str) -> bool:
        if sandbox_id in self._held:
            return True
        fd = os.open(self.dir / f"{sandbox_id}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._held[sandbox_id] = fd
        return True

    def release(self, sandbox_id: str, *, forget: bool = True) -> None:
        """Drop the lock; `forget` also deletes the file (the sandbox is gone for good)."""
        fd = self._held.pop(sandbox_id, None)
        if fd is None:
            return
        if forget:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.dir / f"{sandbox_id}.lock")
        os.close(fd)
