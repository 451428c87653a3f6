"""Drives one run in its sandbox, once it has left the queue (docs/tasks.md is the agent API it uses):
get the sandbox (the caller's, or a job sandbox made for the run), task.start, follow task.status by
long-poll until the run ends, copy its artifacts to the store, and release a job sandbox — removed,
unless login_keep_session succeeded and keeps it.

The agent enforces the run's deadline; the host keeps a backstop: if the agent has not ended the run
a little after its deadline (a frozen sandbox, an agent that lost it), the host gives up on it,
asks the agent to cancel, and ends it failed with RUN_TIMEOUT.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable
from typing import Any

import anyio

from host.profiles import ProfileSessions
from host.runs.live import LiveRun
from host.runs.store import RunStore
from host.sandboxes.jobs import JobSandboxes
from host.sandboxes.manager import SandboxManager
from host.sandboxes.models import SandboxRecord
from rpc import methods
from rpc.deadline import LADDER, Deadline
from rpc.errors import BoxwrightError, ErrorBody, ErrorCode
from rpc.methods import Method, P, R
from rpc.models.tasks import (
    MAX_AGENT_ARTIFACT_CHUNK_BYTES,
    TERMINAL_STATUSES,
    ArtifactRef,
    RunStatus,
    TaskArtifactReadParams,
    TaskCancelParams,
    TaskStartParams,
    TaskStatus,
    TaskStatusParams,
)
from rpc.templates import CATALOG, TemplateSpec

log = logging.getLogger(__name__)

# One long-poll of task.status waits this long for a change.
STATUS_WAIT_MS = 20_000
# The agent cuts a run off this long after its deadline (sandbox_image.tasks.service.RUN_GRACE_S) …
AGENT_GRACE_S = 5.0
# … and the host stops waiting for it this much later still.
BACKSTOP_S = 15.0
# After an unanswered task.status (RPC_TIMEOUT), the host asks again after this pause.
RETRY_PAUSE_S = 1.0
# When the backstop fires, this long is spent asking the agent to stop and for what it finished.
OVERRUN_WAIT_S = 10.0
# A sandbox being removed under a run is asked this long for what the run finished.
PARTIAL_WAIT_S = 5.0
# Copying a finished run's artifacts from its sandbox takes at most this long, and each at most this
# many bytes (the largest result 1000 pages can make is far below it).
COPY_TIMEOUT_S = 120
MAX_COPIED_ARTIFACT_BYTES = 512 * 1024 * 1024
# Progress alone is saved at most this often (a run that dies with its server still shows how far it got).
PROGRESS_SAVE_S = 1.0

Publish = Callable[[LiveRun, bool], None]  # (run, persist): a change others may wait for


def rpc_deadline(method: Method[Any, Any], params: object) -> Deadline:
    """A fresh RPC-layer deadline for a call the host makes on its own (not inside a tool call)."""
    return Deadline.after(LADDER.agent_budget_ms(method, params) / 1000 + LADDER.transport_s)


class RunDriver:
    def __init__(
        self,
        sandboxes: SandboxManager,
        jobs: JobSandboxes,
        store: RunStore,
        publish: Publish,
        catalog: dict[str, TemplateSpec] = CATALOG,
        *,
        profiles: ProfileSessions | None = None,
    ) -> None:
        self.sandboxes = sandboxes
        self.jobs = jobs
        self.store = store
        self.publish = publish
        self.catalog = catalog
        self.profiles = profiles

    async def execute(self, live: LiveRun) -> None:
        """Run it to a terminal state; every failure ends the run `failed` with the error that caused it.
        A job sandbox is released before the end is published: once a run shows as ended, nothing of it
        is still open."""
        rec = live.record
        status: RunStatus = "failed"
        try:
            status, error = await self._drive(live)
        except BoxwrightError as exc:
            live.inputs = None
            status, error = "failed", exc
        finally:
            with anyio.CancelScope(shield=True):
                await self._save_to_profiles(live, succeeded=status == "succeeded")
                if live.sandbox is not None and rec.sandbox_kind == "job":
                    await self.jobs.release(live.sandbox, keep=rec.kept)
        rec.finish(status, error)
        self.publish(live, True)

    async def _drive(self, live: LiveRun) -> tuple[RunStatus, BoxwrightError | None]:
        rec = live.record
        await self._sandbox(live)
        if rec.cancel_requested:  # canceled while its sandbox was being made: nothing was started
            live.inputs = None
            return "canceled", canceled_before_start(rec.run_id)
        if rec.profile_id is not None and self.profiles is not None:
            opened = await self.profiles.open(live.caller, rec.sandbox_id, rec.profile_id)
            live.profile, rec.session_id = opened.binding, opened.session_id
        status = await self._start(live)
        final = await self._follow(live, status)
        if final is None:
            return "failed", await self._overrun(live)
        refs = await self._copy_artifacts(live, final)
        return self._conclude(live, final, refs)

    async def cancel(self, live: LiveRun) -> bool:
        """Pass a cancel request on to the agent (the run ends `canceled` after its current steps);
        False if the agent had already ended the run."""
        answer = await self._call(live, methods.TASK_CANCEL, TaskCancelParams(runId=live.run_id))
        return answer.cancelRequested

    # -- the steps ---------------------------------------------------------------------------
    async def _sandbox(self, live: LiveRun) -> SandboxRecord:
        rec = live.record
        if rec.sandbox_kind == "job":
            live.sandbox = await self.jobs.acquire(live.caller, rec.run_id)
            rec.sandbox_id = live.sandbox.id
            self.publish(live, True)
            return live.sandbox
        return self.sandboxes.resolve(live.caller, rec.sandbox_id)

    async def _start(self, live: LiveRun) -> TaskStatus:
        rec = live.record
        params = TaskStartParams(
            runId=rec.run_id,
            templateId=rec.template_id,
            templateVersion=rec.template_version,
            sessionId=rec.session_id if rec.session_given or live.profile is not None else None,
            inputs=live.inputs or {},
            runTimeoutMs=rec.timeout_ms,
            trustLevel=rec.trust_level,
        )
        try:
            status = await self._call(live, methods.TASK_START, params)
        finally:
            live.inputs = None  # the agent has them (or refused them): nothing here holds a password longer
        live.agent_started = True
        if rec.cancel_requested and not status.cancelRequested:  # asked while task.start was on its way
            await self.cancel(live)
        self._apply(live, status)
        return status

    async def _follow(self, live: LiveRun, status: TaskStatus) -> TaskStatus | None:
        """Long-poll until the run ends; None when the host backstop ended it instead."""
        rec = live.record
        backstop = time.monotonic() + rec.timeout_ms / 1000 + AGENT_GRACE_S + BACKSTOP_S
        live.following = True
        try:
            return await self._poll(live, status, backstop)
        finally:
            live.following = False

    async def _poll(self, live: LiveRun, status: TaskStatus, backstop: float) -> TaskStatus | None:
        rec = live.record
        while status.status not in TERMINAL_STATUSES:
            remaining = backstop - time.monotonic()
            if remaining <= 0:
                return None
            params = TaskStatusParams(
                runId=rec.run_id, waitMs=int(min(STATUS_WAIT_MS, remaining * 1000)), afterVersion=status.version
            )
            try:
                status = await self._call(live, methods.TASK_STATUS, params, wake=False)
            except BoxwrightError as exc:
                if exc.code is not ErrorCode.RPC_TIMEOUT:
                    raise
                log.warning("run %s: task.status went unanswered; asking again", rec.run_id)
                await anyio.sleep(RETRY_PAUSE_S)
                continue
            self._apply(live, status)
        return status

    async def _overrun(self, live: LiveRun) -> BoxwrightError:
        """The backstop fired: ask the agent to stop, keep what it finished, and say why the run failed."""
        rec = live.record
        log.warning("run %s: the agent did not end it by its deadline; the host ends it", rec.run_id)
        with anyio.move_on_after(OVERRUN_WAIT_S):
            try:
                await self.cancel(live)
                await self.keep_partial(live)
            except BoxwrightError as exc:
                log.info("run %s: no partial result from the agent (%s)", rec.run_id, exc.code.value)
        return BoxwrightError(
            ErrorCode.RUN_TIMEOUT,
            f"run {rec.run_id} did not end within its timeout of {rec.timeout_ms} ms",
            details={"timeoutMs": rec.timeout_ms, "enforcedBy": "host"},
        )

    async def keep_partial(self, live: LiveRun, sandbox: SandboxRecord | None = None) -> None:
        """What the run finished so far, kept as its result (it is about to end without the agent's own).
        `sandbox`: ask its agent directly — it is being removed, so no tool call may reach it any more."""
        params = TaskStatusParams(runId=live.run_id, partial=True)
        if sandbox is None:
            partial = await self._call(live, methods.TASK_STATUS, params)
        else:
            assert sandbox.endpoint is not None
            partial = await self.sandboxes.agent.call(
                sandbox.endpoint, methods.TASK_STATUS, params, Deadline.after(PARTIAL_WAIT_S)
            )
        # Asked while the sandbox goes, the answer may come after the run ended by itself: its own result stays.
        if partial.result is not None and (sandbox is None or live.following):
            live.record.result = partial.result.model_dump(mode="json")

    async def _copy_artifacts(self, live: LiveRun, status: TaskStatus) -> list[ArtifactRef]:
        """Copy every artifact from the agent before the run is shown as ended, so get_artifact works as
        soon as get_task_run says it is over; one that cannot be copied is left out (and logged)."""
        copied = []
        # What the sandbox says is not trusted: a bound on time and bytes, whatever it announces or sends.
        with anyio.move_on_after(COPY_TIMEOUT_S) as scope:
            for ref in status.artifacts or []:
                try:
                    await self._copy(live, ref)
                    copied.append(ref)
                except (BoxwrightError, ValueError) as exc:
                    log.warning("run %s: artifact %s not copied: %s", live.run_id, ref.artifactId, exc)
        if scope.cancelled_caught:
            log.warning("run %s: artifacts not copied within %d s; %d of %d kept", live.run_id, COPY_TIMEOUT_S,
                        len(copied), len(status.artifacts or []))  # fmt: skip
        return copied

    async def _copy(self, live: LiveRun, ref: ArtifactRef) -> None:
        if ref.size > MAX_COPIED_ARTIFACT_BYTES:
            raise ValueError(f"{ref.artifactId}: {ref.size} bytes, over the {MAX_COPIED_ARTIFACT_BYTES} kept")
        offset = 0
        with self.store.write_artifact(live.run_id, ref.artifactId) as out:
            while True:
                params = TaskArtifactReadParams(
                    runId=live.run_id, artifactId=ref.artifactId, offset=offset, limit=MAX_AGENT_ARTIFACT_CHUNK_BYTES
                )
                chunk = await self._call(live, methods.TASK_ARTIFACT_READ, params)
                data = base64.b64decode(chunk.data)
                offset += len(data)
                if offset > ref.size:
                    raise ValueError(f"{ref.artifactId}: the agent sent more than the {ref.size} bytes it announced")
                out.write(data)
                if chunk.complete:
                    break
                if not data:
                    raise ValueError(f"the agent returned an empty chunk of {ref.artifactId} at {offset}")
        if offset != ref.size:
            raise ValueError(f"{ref.artifactId}: copied {offset} bytes, expected {ref.size}")

    async def _save_to_profiles(self, live: LiveRun, *, succeeded: bool) -> None:
        """What the run changed goes back to its login profile (compare-and-set on the version it was
        opened from), and a successful login_keep_session to publishToProfile (on the version when the
        run was accepted); then the profile's session is closed, unless login_keep_session keeps it."""
        rec = live.record
        if self.profiles is None:
            return
        if rec.publish_to is not None and succeeded and rec.sandbox_id and rec.session_id:
            try:
                outcome = await self.profiles.publish_session(
                    live.caller, rec.sandbox_id, rec.session_id, rec.publish_to, base_version=rec.publish_base_version
                )
            except BoxwrightError as exc:
                log.warning("run %s: the login was not saved to profile %s (%s)", rec.run_id, rec.publish_to,
                            exc.code.value)  # fmt: skip
            else:
                if outcome is not None and outcome.outcome != "stale":
                    rec.profile_version = outcome.version
        if live.profile is not None:
            saved_already = succeeded and rec.publish_to == rec.profile_id
            outcome = await self.profiles.close(live.profile, publish=not saved_already, close_session=not rec.kept)
            if outcome is not None and outcome.outcome != "stale":
                rec.profile_version = outcome.version
            live.profile = None

    # -- state -------------------------------------------------------------------------------
    def _apply(self, live: LiveRun, status: TaskStatus) -> None:
        """What a non-final task.status says: progress, the run's session, a cancel being honoured."""
        rec = live.record
        rec.progress = status.progress
        rec.elapsed_ms = max(rec.elapsed_ms, status.metrics.elapsedMs)
        rec.cancel_requested = rec.cancel_requested or bool(status.cancelRequested)
        if not rec.session_given and status.sessionId:
            rec.session_id = status.sessionId
        rec.touch()
        self.publish(live, time.monotonic() - live.saved_at >= PROGRESS_SAVE_S)

    def _conclude(
        self, live: LiveRun, status: TaskStatus, refs: list[ArtifactRef]
    ) -> tuple[RunStatus, BoxwrightError | None]:
        """The agent's end of the run, as the host will keep it."""
        rec = live.record
        self._apply(live, status)
        spec = self.catalog.get(rec.template_id)
        rec.result = status.result.model_dump(mode="json") if status.result is not None else None
        rec.artifacts = refs
        rec.kept = bool(spec and spec.keeps_session and status.status == "succeeded")
        if status.error is not None:
            rec.error = _with_run_id(status.error, rec.run_id)
        rec.elapsed_ms = status.metrics.elapsedMs
        return status.status, None

    async def _call(self, live: LiveRun, method: Method[P, R], params: P, *, wake: bool = True) -> R:
        _, result = await self.sandboxes.call(
            live.caller, live.record.sandbox_id, method, params, rpc_deadline(method, params), wake=wake
        )
        return result


def canceled_before_start(run_id: str) -> BoxwrightError:
    return BoxwrightError(
        ErrorCode.RUN_CANCELED, f"run {run_id} was canceled before it started", details={"runId": run_id}
    )


def _with_run_id(error: ErrorBody, run_id: str) -> ErrorBody:
    if "runId" in error.details:
        return error
    return error.model_copy(update={"details": {"runId": run_id, **error.details}})
