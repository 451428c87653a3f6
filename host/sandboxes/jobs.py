"""Throw-away sandboxes for jobs: the one seam through which work that needs "a sandbox of its own for a
while" gets one (template runs today; scrape next; a warm pool may serve it later).

A job sandbox is created for one job id, owned by the caller and counted in their limits, but never
made their default and never picked when a tool call omits sandboxId. It is removed when the job ends
— unless the job keeps it (login_keep_session), after which it is an ordinary sandbox of its owner.
Its container carries the job id as a label, so a server restarted after a crash can remove the job
sandboxes of jobs that died with it (`sweep`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from host.sandboxes.limits import check_capacity
from host.sandboxes.manager import SandboxManager
from host.sandboxes.models import Caller, SandboxRecord
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError

log = logging.getLogger(__name__)


class JobSandboxes:
    def __init__(self, manager: SandboxManager) -> None:
        self.manager = manager

    def check_room(self, caller: Caller) -> None:
        """SANDBOX_LIMIT_REACHED now, if the caller could not get a job sandbox at the moment."""
        check_capacity(self.manager.settings, self.manager.registry, caller)

    async def acquire(self, caller: Caller, job_id: str, *, deadline: Deadline | None = None) -> SandboxRecord:
        return await self.manager.create(caller, job=job_id, deadline=deadline)

    async def release(self, rec: SandboxRecord, *, keep: bool = False, reason: str = "its job ended") -> None:
        """The job ended: remove its sandbox, or hand it to its owner as an ordinary sandbox."""
        if keep:
            log.info("sandbox %s kept for its owner after job %s", rec.id, rec.job)
            rec.job = None
            return
        try:
            await self.manager.destroy(Caller(owner=rec.owner), rec.id, reason=f"{reason} ({rec.job})")
        except BoxwrightError as exc:  # already gone (destroyed by its owner, TTL, crash): nothing to do
            log.info("job sandbox %s was already gone (%s)", rec.id, exc.code.value)

    async def sweep(self, kept: Callable[[str], bool]) -> None:
        """After a restart: the job sandboxes this server adopted whose job is not known to have kept
        them belonged to jobs that died with the previous server — remove them."""
        for rec in self.manager.registry:
            if rec.job is None:
                continue
            if kept(rec.job):
                rec.job = None
            else:
                await self.release(rec, reason="its job ended with the previous server")
