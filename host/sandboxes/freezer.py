"""Pause and resume: the engine's freezer stops every process of a sandbox (no CPU; memory, files,
browser tabs and background processes kept) and thaws them later exactly where they were.

A sandbox is paused by sandbox_pause or, with BOXWRIGHT_IDLE_ACTION=pause, when it goes idle; any
call to it resumes it first (the tool's summary says so). Its TTL keeps running while paused — the
TTL is the hard limit — and the idle timeout never removes a paused sandbox, so one is never lost
silently. The engine remembers the state, so a restarted server adopts a paused sandbox as paused.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import anyio
import anyio.to_thread

from host.backends.base import SandboxBackend
from host.sandboxes.models import SandboxRecord, SandboxStatus
from host.sandboxes.readiness import Readiness
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode

log = logging.getLogger(__name__)

RESUME_READY_S = 10.0  # a thawed agent answers at once; this bounds a sick one


class Freezer:
    def __init__(self, backend: SandboxBackend, readiness: Readiness) -> None:
        self.backend = backend
        self.readiness = readiness
        self._locks: dict[str, anyio.Lock] = {}

    def _lock(self, rec: SandboxRecord) -> anyio.Lock:
        return self._locks.setdefault(rec.id, anyio.Lock())

    def forget(self, rec: SandboxRecord) -> None:
        self._locks.pop(rec.id, None)

    async def pause(self, rec: SandboxRecord, reason: str) -> bool:
        """Freeze a running sandbox; False when it already was paused."""
        async with self._lock(rec):
            if rec.status is SandboxStatus.PAUSED:
                return False
            if rec.status is not SandboxStatus.RUNNING or rec.container_id is None:
                raise BoxwrightError(
                    ErrorCode.SANDBOX_NOT_RUNNING,
                    f"sandbox {rec.id} is {rec.status.value}: only a running sandbox can be paused",
                    details={"sandboxId": rec.id, "status": rec.status.value},
                )
            await anyio.to_thread.run_sync(self.backend.freeze, rec.container_id)
            rec.status = SandboxStatus.PAUSED
            rec.paused_at = datetime.now(UTC)
        log.info("sandbox %s paused (%s)", rec.id, reason)
        return True

    async def resume(self, rec: SandboxRecord, deadline: Deadline | None = None) -> bool:
        """Thaw a paused sandbox and wait until its agent answers; False when it was not paused."""
        async with self._lock(rec):
            if rec.status is not SandboxStatus.PAUSED:
                return False
            assert rec.container_id is not None
            await anyio.to_thread.run_sync(self.backend.thaw, rec.container_id)
            rec.status = SandboxStatus.RUNNING
            rec.paused_at = None
            rec.last_used = datetime.now(UTC)
            # The agent answers at once when thawed; a code runner that died meanwhile is started again.
            await self.readiness.ensure_runner(rec, deadline or Deadline.after(RESUME_READY_S))
        log.info("sandbox %s resumed", rec.id)
        return True
