"""RunManager (seed 000 §8.2): the host side of template runs, under the MCP tools.

- Owned: every run belongs to its caller's owner; another owner's run is answered RUN_NOT_FOUND,
  exactly like a missing one, and lists show only your own.
- Checked first: template, version, trust level, inputs and the sandbox/session asked for are all
  checked before anything is opened or queued.
- Queued: at most maxConcurrentRuns (5) execute at once, the rest wait (fair between owners, in order
  for one: host.runs.queue); a queued run that is canceled ends at once.
- Durable: records and artifacts live in the store (host.runs.store) for the retention time after a
  run ends, across sandbox removal and server restarts. The restart rule: a run that was not finished
  when its server died is ended `failed` (EXECUTION_ERROR, details.reason "server_stopped") when the
  next server starts, and the job sandbox it ran in is removed (host.sandboxes.jobs).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc

from host.config import Settings
from host.profiles import ProfileSessions
from host.runs.artifacts import ArtifactStore
from host.runs.driver import RunDriver, canceled_before_start, rpc_deadline
from host.runs.live import LiveRun
from host.runs.queue import RunSlots
from host.runs.records import RunRecord, now_ms, run_not_found
from host.runs.store import RunStore
from host.sandboxes.jobs import JobSandboxes
from host.sandboxes.manager import SandboxManager
from host.sandboxes.models import Caller, SandboxRecord
from rpc import methods
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode, invalid_parameter
from rpc.methods import Method
from rpc.models.browser import SessionsParams
from rpc.models.tasks import (
    MAX_CONCURRENT_RUNS,
    CancelTaskRunResponse,
    ListTaskRunsRequest,
    ListTaskRunsResponse,
    ListTaskTemplatesResponse,
    RunTaskTemplateRequest,
    TaskCancelParams,
    TaskRun,
)
from rpc.templates import CATALOG, TemplateSpec, check_run, effective_timeout_ms, resolve, resolve_mode

log = logging.getLogger(__name__)

# Seed 001 §6.2: a sync run without options.timeoutMs gets 120 s (async: the template's maximum).
SYNC_DEFAULT_TIMEOUT_MS = 120_000
# What a sync run_task_template may spend besides the run itself: waiting in the queue (up to the
# run's own timeout again), making a job sandbox, copying artifacts.
SYNC_FINISH_MARGIN_S = 60.0
# A sync call answers this long before its tool deadline, with the run's state, rather than time out.
SYNC_ANSWER_MARGIN_S = 2.0

Progress = Callable[[float, float | None, str], Awaitable[None]]  # (done, total, message)


class RunManager:
    def __init__(
        self,
        settings: Settings,
        sandboxes: SandboxManager,
        jobs: JobSandboxes | None = None,
        *,
        profiles: ProfileSessions | None = None,
        catalog: dict[str, TemplateSpec] = CATALOG,
    ) -> None:
        self.settings = settings
        self.sandboxes = sandboxes
        self.jobs = jobs or JobSandboxes(sandboxes)
        self.profiles = profiles
        self.catalog = catalog
        self.store = RunStore(settings.state_dir, settings.namespace)
        self.artifacts = ArtifactStore(self.store, settings.run_retention)
        self.slots = RunSlots(MAX_CONCURRENT_RUNS)
        self.driver = RunDriver(sandboxes, self.jobs, self.store, self._publish, catalog, profiles=profiles)
        self._records: dict[str, RunRecord] = {}
        self._live: dict[str, LiveRun] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        sandboxes.listeners.append(self)

    # -- SandboxManager listener -------------------------------------------------------------
    def call_started(self, rec: SandboxRecord, method: Method[Any, Any], params: Any) -> None:
        return None

    def call_ended(self, rec: SandboxRecord, method: Method[Any, Any], params: Any) -> None:
        return None

    async def sandbox_removing(self, rec: SandboxRecord, *, reachable: bool) -> None:
        """A sandbox going under a run (destroyed by its owner, its TTL, the idle timeout): what the run
        finished is taken from the agent while it still answers, so the run, failed, keeps it as its
        result. The run then ends with the call its driver had in flight (SANDBOX_NOT_FOUND, destroyed)."""
        if not reachable or rec.endpoint is None:
            return
        for live in [live for live in self._live.values() if live.following and live.record.sandbox_id == rec.id]:
            try:
                await self.driver.keep_partial(live, rec)
            except BoxwrightError as exc:
                log.info("run %s: no partial result from its sandbox going away (%s)", live.run_id, exc.code.value)

    # -- lifecycle ---------------------------------------------------------------------------
    def uses_sandbox(self, sandbox_id: str) -> bool:
        """Whether a run in flight (queued or running) works in that sandbox: the idle timeout keeps it."""
        return any(
            (live.sandbox is not None and live.sandbox.id == sandbox_id) or live.record.sandbox_id == sandbox_id
            for live in self._live.values()
        )

    async def start(self) -> None:
        """Load the store and apply the restart rule; call after the sandbox manager has started (it has
        adopted what the previous server left, job sandboxes included)."""
        for rec in self.store.load_all():
            self._records[rec.run_id] = rec
            if rec.terminal:
                self.artifacts.add_run(rec)
            elif self.store.hold(rec.run_id):  # not finished, and no live server holds it: its server died
                await self._end_orphan(rec)
        await self.jobs.sweep(kept=self._kept)
        self.sweep()

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Until cancelled: hold the runs' tasks and sweep expired runs every reap_interval. Runs still in
        flight when it is cancelled (server shutdown) end `failed`."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            try:
                while True:
                    await anyio.sleep(self.settings.reap_interval)
                    try:
                        self.sweep()
                    except Exception:
                        log.exception("run sweep failed")
            finally:
                self._tg = None

    def sweep(self) -> None:
        """Past its retention a run's result and artifacts are deleted and a tombstone stays (so its
        artifacts answer ARTIFACT_EXPIRED); past a second retention the tombstone goes too."""
        now = now_ms()
        retention_ms = int(self.settings.run_retention * 1000)
        for rec in list(self._records.values()):
            if not rec.terminal or rec.ended_at is None or now < rec.ended_at + retention_ms:
                continue
            if not rec.expired:
                self.store.delete_artifacts(rec)
                rec.result = None
                rec.expired = True
                self.store.save(rec)
                log.info("run %s expired: result and %d artifacts deleted", rec.run_id, len(rec.artifacts))
            elif now >= rec.ended_at + 2 * retention_ms:
                self.store.delete(rec.run_id)
                self.artifacts.drop_run(rec)
                del self._records[rec.run_id]

    # -- the tools' operations ---------------------------------------------------------------
    def templates(self) -> ListTaskTemplatesResponse:
        return ListTaskTemplatesResponse(templates=[spec.info() for spec in self.catalog.values()])

    async def submit(self, caller: Caller, req: RunTaskTemplateRequest) -> LiveRun:
        """Check everything, then queue the run. Nothing is opened for a request that is refused."""
        checked = check_run(
            req.templateId, req.templateVersion, req.inputs, req.options.timeoutMs, caller.trust, self.catalog
        )
        spec = checked.spec
        mode = resolve_mode(spec, req.options.mode, checked.inputs)
        timeout_ms = checked.timeout_ms
        if mode == "sync" and req.options.timeoutMs is None:
            timeout_ms = effective_timeout_ms(spec, SYNC_DEFAULT_TIMEOUT_MS)
        publish_to: str | None = getattr(checked.inputs, "publishToProfile", None)
        publish_base = await self._check_profiles(caller, req.profileId, publish_to)
        sandbox_id = await self._check_sandbox(caller, req)
        if self._tg is None:
            raise BoxwrightError(ErrorCode.INTERNAL_ERROR, "template runs are not being served (server stopping?)")
        self._check_unfinished(caller)  # here, after the last await: concurrent submits cannot all slip past it
        created = now_ms()
        rec = RunRecord(
            run_id=f"run_{secrets.token_hex(8)}",
            owner=caller.owner,
            template_id=spec.template_id,
            template_version=spec.version,
            mode=mode,
            trust_level=caller.trust,
            timeout_ms=timeout_ms,
            created_at=created,
            updated_at=created,
            sandbox_id=sandbox_id,
            sandbox_kind="job" if sandbox_id is None else "caller",
            session_id=req.sessionId,
            session_given=req.sessionId is not None,
            profile_id=req.profileId,
            publish_to=publish_to,
            publish_base_version=publish_base,
        )
        self.store.hold(rec.run_id)
        self.store.save(rec)
        self._records[rec.run_id] = rec
        live = LiveRun(rec, caller, inputs=dict(req.inputs))
        self._live[rec.run_id] = live
        self._tg.start_soon(self._run, live, name=f"run {rec.run_id}")
        log.info(
            "run %s (%s) queued for %s: mode %s, timeout %d ms, sandbox %s",
            rec.run_id,
            spec.template_id,
            caller.owner,
            mode,
            timeout_ms,
            sandbox_id or "(its own)",
        )
        return live

    async def wait(self, live: LiveRun, until: Deadline, progress: Progress | None = None) -> TaskRun:
        """Wait for the run to end (sync mode), reporting each step done; answers TOOL_TIMEOUT with the
        runId if `until` passes first — the run goes on."""
        rec = live.record
        began = time.monotonic()
        reported = -1
        while True:
            changed = live.changed()
            done, total = rec.progress.doneSteps, rec.progress.totalSteps
            if progress is not None and done > reported:  # MCP progress must increase
                reported = done
                await progress(done, total or None, f"{rec.status}: {done}/{total} steps")
            if rec.terminal:
                return rec.view()
            with anyio.move_on_at(until.at):
                await changed.wait()
                continue
            raise BoxwrightError(
                ErrorCode.TOOL_TIMEOUT,
                f"run {rec.run_id} is still {rec.status} after waiting {time.monotonic() - began:.0f} s; "
                "it goes on in the background",
                hint="poll get_task_run with details.runId; use options.mode 'async' for long runs",
                details={"runId": rec.run_id, "status": rec.status},
            )

    def _check_unfinished(self, caller: Caller) -> None:
        """One owner's runs waiting or running are bounded: each holds memory and a place in the queue, and a
        script submitting in a loop would otherwise grow both without end."""
        limit = self.settings.max_runs_per_owner
        unfinished = sum(1 for r in self._records.values() if r.owner == caller.owner and not r.terminal)
        if unfinished >= limit:
            raise BoxwrightError(
                ErrorCode.QUOTA_EXCEEDED,
                f"you have {unfinished} template runs queued or running, the most one owner may have",
                hint="wait for some to end (get_task_run, list_task_runs) or cancel some (cancel_task_run)",
                details={"resource": "runs", "limit": limit, "used": unfinished},
            )

    def get(self, caller: Caller, run_id: str) -> TaskRun:
        return self._owned(caller, run_id).view()

    def list(self, caller: Caller, req: ListTaskRunsRequest) -> ListTaskRunsResponse:
        mine = [
            r
            for r in self._records.values()
            if r.owner == caller.owner
            and not r.expired
            and (req.status is None or r.status == req.status)
            and (req.templateId is None or r.template_id == req.templateId)
        ]
        mine.sort(key=lambda r: (r.created_at, r.run_id), reverse=True)
        page = mine[req.offset : req.offset + req.limit]
        return ListTaskRunsResponse(runs=[r.summary() for r in page], total=len(mine))

    async def cancel(self, caller: Caller, run_id: str) -> CancelTaskRunResponse:
        """Seed 000 §4.4: cooperative — a running run ends `canceled` after its current steps; a queued
        one ends at once; an ended one stays as it is (cancelRequested false)."""
        rec = self._owned(caller, run_id)
        live = self._live.get(run_id)
        if rec.terminal or live is None:
            return CancelTaskRunResponse(cancelRequested=False, currentStatus=rec.status)
        rec.cancel_requested = True
        if rec.status == "queued":
            live.inputs = None
            rec.finish("canceled", canceled_before_start(run_id))
            live.queue_scope.cancel()
        elif live.agent_started:
            try:
                if not await self.driver.cancel(live):  # it ended there already; the host is collecting it
                    rec.cancel_requested = False
                    return CancelTaskRunResponse(cancelRequested=False, currentStatus=rec.status)
            except BoxwrightError as exc:  # the run's own follow-up will meet the same trouble and end it
                log.warning("run %s: cancel did not reach the agent (%s)", run_id, exc.code.value)
        self._publish(live, True)
        log.info("run %s: cancel requested by %s while %s", run_id, caller.owner, rec.status)
        return CancelTaskRunResponse(cancelRequested=True, currentStatus=rec.status)

    # -- budgets -----------------------------------------------------------------------------
    def tool_budget_s(self, req: RunTaskTemplateRequest) -> float:
        """run_task_template's tool deadline: long enough for a sync run to queue, run and finish."""
        try:
            spec = resolve(req.templateId, req.templateVersion, self.catalog)
        except BoxwrightError:
            return 30.0
        timeout_s = effective_timeout_ms(spec, req.options.timeoutMs or SYNC_DEFAULT_TIMEOUT_MS) / 1000
        return 2 * timeout_s + self.settings.startup_timeout + SYNC_FINISH_MARGIN_S

    # -- inside ------------------------------------------------------------------------------
    def _owned(self, caller: Caller, run_id: str) -> RunRecord:
        rec = self._records.get(run_id)
        if rec is None or rec.owner != caller.owner:
            raise run_not_found(run_id)
        if rec.expired:
            raise BoxwrightError(
                ErrorCode.RUN_NOT_FOUND,
                f"run {run_id!r} expired: runs are kept {self.settings.run_retention} s after they end",
                hint="run the task again",
                details={"runId": run_id, "reason": "expired"},
            )
        return rec

    def _kept(self, run_id: str) -> bool:
        rec = self._records.get(run_id)
        return rec is not None and rec.kept

    async def _check_profiles(self, caller: Caller, profile_id: str | None, publish_to: str | None) -> int | None:
        """The profiles a run names are the caller's own and valid; returns the version publishToProfile's
        compare-and-set starts from (the profile is made, at version 0, if it is new)."""
        if profile_id is None and publish_to is None:
            return None
        if self.profiles is None:
            raise BoxwrightError(ErrorCode.INVALID_PARAMETER, "this server keeps no login profiles")
        if profile_id is not None:
            store = self.profiles.store
            store.paths.profile_dir(caller.owner, profile_id)  # the configured pattern, no disk
            if not store.exists(caller.owner, profile_id):  # made on first use: refused now, not mid-run
                await anyio.to_thread.run_sync(store.check_room, caller.owner, profile_id)
        return None if publish_to is None else await self.profiles.current_version(caller, publish_to)

    async def _check_sandbox(self, caller: Caller, req: RunTaskTemplateRequest) -> str | None:
        """The caller's sandbox the run is to use (None: a job sandbox), refusing what cannot work now."""
        if req.sandboxId is None and req.sessionId is None:
            self.jobs.check_room(caller)
            return None
        sandbox = self.sandboxes.resolve(caller, req.sandboxId)  # a sessionId alone means the default sandbox
        if sandbox.job is not None:
            raise invalid_parameter(
                "sandboxId",
                f"sandbox {sandbox.id} is the throw-away sandbox of run {sandbox.job}",
                message=f"sandbox {sandbox.id} is run {sandbox.job}'s own: it is removed when that run ends",
                hint="omit sandboxId (the run gets a sandbox of its own), or name one of yours (sandbox_create)",
                sandboxId=sandbox.id,
            )
        if req.sessionId is not None:
            params = SessionsParams()
            _, sessions = await self.sandboxes.call(
                caller, sandbox.id, methods.BROWSER_SESSIONS, params, rpc_deadline(methods.BROWSER_SESSIONS, params)
            )
            if req.sessionId not in {s.sessionId for s in sessions.sessions}:
                raise BoxwrightError(
                    ErrorCode.SESSION_NOT_FOUND,
                    f"sandbox {sandbox.id} has no browser session {req.sessionId!r}",
                    hint="see its sessions with browser_sessions, or omit sessionId for a fresh session",
                    details={"sandboxId": sandbox.id, "sessionId": req.sessionId},
                )
        return sandbox.id

    async def _run(self, live: LiveRun) -> None:
        rec = live.record
        try:
            with live.queue_scope:
                await self.slots.acquire(rec.run_id, live.caller.owner)
            if rec.terminal:  # canceled while it waited
                return
            try:
                rec.status = "running"
                rec.started_at = now_ms()
                rec.touch()
                self._publish(live, True)
                await self.driver.execute(live)
            finally:
                self.slots.release(live.caller.owner)
        except anyio.get_cancelled_exc_class():  # the server is stopping (nothing here awaits)
            if not rec.terminal:
                rec.finish("failed", server_stopped(rec.status))
                self._publish(live, True)
            raise
        except Exception:
            log.exception("run %s crashed", rec.run_id)
            rec.finish("failed", BoxwrightError(ErrorCode.INTERNAL_ERROR, f"run {rec.run_id} failed unexpectedly"))
            self._publish(live, True)

    def _publish(self, live: LiveRun, persist: bool) -> None:
        rec = live.record
        if persist:
            self.store.save(rec)
            live.saved_at = time.monotonic()
        if rec.terminal and self._live.pop(rec.run_id, None) is not None:
            self.artifacts.add_run(rec)
            self.store.let_go(rec.run_id)
            log.info(
                "run %s (%s) ended %s in %d ms%s",
                rec.run_id,
                rec.template_id,
                rec.status,
                rec.elapsed_ms,
                f" ({rec.error.errorCode.value})" if rec.error else "",
            )
        live.notify()

    async def _end_orphan(self, rec: RunRecord) -> None:
        """The restart rule: a run its server died with is over, failed; if it ran in a sandbox of the
        caller's that is still there, the agent is asked to stop it (best effort)."""
        status = rec.status
        rec.finish("failed", server_stopped(status))
        self.store.save(rec)
        self.store.let_go(rec.run_id)
        self.artifacts.add_run(rec)
        log.warning("run %s was %s when its server stopped: ended failed", rec.run_id, status)
        if rec.sandbox_kind == "caller" and rec.sandbox_id and status == "running":
            caller = Caller(owner=rec.owner)
            params = TaskCancelParams(runId=rec.run_id)
            try:
                await self.sandboxes.call(
                    caller, rec.sandbox_id, methods.TASK_CANCEL, params, rpc_deadline(methods.TASK_CANCEL, params)
                )
            except BoxwrightError as exc:
                log.info("run %s: could not ask its sandbox to stop it (%s)", rec.run_id, exc.code.value)


def server_stopped(status: str) -> BoxwrightError:
    return BoxwrightError(
        ErrorCode.EXECUTION_ERROR,
        f"the Boxwright server stopped while this run was {status}, so it never finished",
        hint="run the task again",
        details={"reason": "server_stopped", "statusBefore": status},
    )
