"""The task.* methods: start a run in the background, report it (long-poll), cancel it, hand out its artifacts.

The host owns the global queue and decides when a run starts; this agent executes it. task.start
checks everything that can be refused (template, version, trust level, inputs, session, free tabs)
before it opens anything, then returns at once. A run's session is the one named by sessionId (left
open) or a fresh one the run creates and closes at the end — unless the template keeps it
(login_keep_session, on success).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from aiohttp import web

from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode, invalid_parameter
from rpc.models.browser import MAX_TABS_PER_SESSION
from rpc.models.tasks import (
    MAX_CONCURRENT_RUNS,
    ArtifactChunk,
    CancelTaskRunResponse,
    ListTaskTemplatesResponse,
    TaskArtifactReadParams,
    TaskCancelParams,
    TaskListParams,
    TaskListResult,
    TaskStartParams,
    TaskStatus,
    TaskStatusParams,
    TaskTemplatesParams,
)
from rpc.templates import CATALOG, TemplateSpec, check_run
from sandbox_image.browser.background import spawn
from sandbox_image.browser.service import BrowserService
from sandbox_image.browser.sessions import Session
from sandbox_image.tasks.actions import RunBrowser
from sandbox_image.tasks.artifacts import inline_result
from sandbox_image.tasks.context import RunContext
from sandbox_image.tasks.executor import StepExecutor
from sandbox_image.tasks.runs import Outcome, Run, RunRegistry, new_run_id
from sandbox_image.tasks.templates import TEMPLATES, Template
from sandbox_image.tasks.verdict import decide, run_error

log = logging.getLogger("boxwright.agent.tasks")

# How long past its deadline a run's code may take before it is cut off (steps end well before).
RUN_GRACE_S = 5.0
# A long-poll answers this much before the call's own deadline.
STATUS_MARGIN_S = 0.5


class TaskService:
    def __init__(
        self,
        browser: BrowserService,
        templates: dict[str, Template] = TEMPLATES,
        catalog: dict[str, TemplateSpec] = CATALOG,
    ) -> None:
        self.browser = browser
        self.templates = templates
        self.catalog = catalog
        self.runs = RunRegistry()
        self._slots: asyncio.Semaphore | None = None
        self._queued: dict[str, tuple[Template, RunContext[Any], Session]] = {}

    @property
    def slots(self) -> asyncio.Semaphore:
        """At most MAX_CONCURRENT_RUNS at once here too (the host's queue is the real one)."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(MAX_CONCURRENT_RUNS)
        return self._slots

    # -- methods -----------------------------------------------------------------------------
    async def list_templates(self, _params: TaskTemplatesParams, _deadline: Deadline) -> ListTaskTemplatesResponse:
        return ListTaskTemplatesResponse(templates=[spec.info() for spec in self.catalog.values()])

    async def start(self, params: TaskStartParams, _deadline: Deadline) -> TaskStatus:
        checked = check_run(
            params.templateId,
            params.templateVersion,
            params.inputs,
            params.runTimeoutMs,
            params.trustLevel,
            self.catalog,
        )
        template = self.templates[checked.spec.template_id]
        run_id = params.runId or new_run_id()
        existing = self.runs.find(run_id)
        if existing is not None:  # a retried start: the same run, not a second one
            if existing.spec.template_id != checked.spec.template_id:
                raise invalid_parameter(
                    "runId", f"run {run_id} already exists for {existing.spec.template_id}", hint="use a new runId"
                )
            return existing.status_model()
        session, owns = self._session_for(params.sessionId, run_id, template.tabs_needed(checked.inputs))
        run = Run(
            run_id,
            checked.spec,
            checked.inputs,
            checked.timeout_ms,
            params.trustLevel,
            session.id,
            owns,
            template.plan(checked.inputs),
        )
        ctx: RunContext[Any] = RunContext(
            run, checked.inputs, RunBrowser(self.browser, session, run), StepExecutor(run)
        )
        run.partial = lambda: template.output(ctx)
        self.runs.add(run)
        self._queued[run.id] = (template, ctx, session)
        run.task = spawn(self._execute(run, template, ctx, session))
        log.info("run %s (%s) started: %d steps, timeout %d ms", run.id, run.spec.template_id, len(run.steps),
                 run.timeout_ms)  # fmt: skip
        return run.status_model()

    async def status(self, params: TaskStatusParams, deadline: Deadline) -> TaskStatus:
        run = self.runs.get(params.runId)
        if params.waitMs > 0 and not run.terminal:
            after = run.version if params.afterVersion is None else params.afterVersion
            await run.wait_change(after, min(params.waitMs / 1000.0, deadline.remaining() - STATUS_MARGIN_S))
        partial = None
        if params.partial and not run.terminal and run.partial is not None:
            partial = inline_result(run.partial().model_dump(mode="json", exclude_none=True), None)
        return run.status_model(include_steps=params.includeSteps, partial=partial)

    async def cancel(self, params: TaskCancelParams, _deadline: Deadline) -> CancelTaskRunResponse:
        run = self.runs.get(params.runId)
        accepted = run.request_cancel()
        if accepted:
            log.info("run %s: cancel requested while %s", run.id, run.status)
        queued = self._queued.pop(run.id, None)
        if accepted and queued is not None and run.status == "queued":  # nothing started: canceled at once
            template, ctx, session = queued
            ctx.executor.close_out()
            await self._end(run, template, ctx, session, crashed=False)
        return CancelTaskRunResponse(cancelRequested=accepted, currentStatus=run.status)

    async def list_runs(self, params: TaskListParams, _deadline: Deadline) -> TaskListResult:
        runs = [r for r in self.runs.all() if params.status is None or r.status == params.status]
        return TaskListResult(runs=[r.summary_model() for r in runs])

    async def artifact_read(self, params: TaskArtifactReadParams, _deadline: Deadline) -> ArtifactChunk:
        return self.runs.get(params.runId).artifact(params.artifactId).read(params.offset, params.limit)

    # -- lifecycle ---------------------------------------------------------------------------
    async def on_cleanup(self, _app: web.Application) -> None:
        tasks = [r.task for r in self.runs.all() if r.task is not None and not r.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _session_for(self, session_id: str | None, run_id: str, tabs_needed: int) -> tuple[Session, bool]:
        """The run's session and whether the run owns it; refusals here open nothing."""
        sessions = self.browser.sessions
        if session_id is None:
            return sessions.create(f"sess_{run_id.removeprefix('run_')}"[:64]), True
        session = sessions.get(session_id)
        free = MAX_TABS_PER_SESSION - len(session.tabs)
        if free < tabs_needed:
            raise BoxwrightError(
                ErrorCode.TAB_LIMIT_REACHED,
                f"session {session_id!r} has {free} free tabs; this run needs {tabs_needed}",
                hint="close tabs you no longer need with browser_tabs, or omit sessionId for a fresh session",
                details={"sessionId": session_id, "freeTabs": free, "tabsNeeded": tabs_needed},
            )
        return session, False

    async def _execute(self, run: Run, template: Template, ctx: RunContext[Any], session: Session) -> None:
        crashed = False
        try:
            async with self.slots:
                if self._queued.pop(run.id, None) is None:  # canceled (and ended) while queued
                    return
                deadline = run.begin()
                try:
                    async with asyncio.timeout_at(deadline.at + RUN_GRACE_S):
                        await template.execute(ctx)
                except TimeoutError:
                    log.warning("run %s overran its deadline by %.0f s and was cut off", run.id, RUN_GRACE_S)
                except Exception:
                    log.exception("run %s failed on an internal error", run.id)
                    crashed = True
                ctx.executor.close_out()
                await self._end(run, template, ctx, session, crashed=crashed)
        except asyncio.CancelledError:  # the agent is stopping
            if not run.terminal:
                error = BoxwrightError(ErrorCode.EXECUTION_ERROR, "the sandbox agent stopped during the run")
                run.finish(Outcome("failed", error, None))
            raise

    async def _end(
        self, run: Run, template: Template, ctx: RunContext[Any], session: Session, *, crashed: bool
    ) -> None:
        """Decide the outcome, release the session (unless kept), then publish: once the host sees the
        terminal state, nothing of the run is still open."""
        output = template.output(ctx)
        summary = output.summary
        status = "failed" if crashed else decide(run.spec, summary, canceled=run.cancel_requested)
        error = run_error(run, status, timed_out=ctx.executor.timed_out())
        if crashed:
            error = BoxwrightError(ErrorCode.INTERNAL_ERROR, f"run {run.id} failed on an internal error")
        artifacts = template.artifacts(output)
        result = inline_result(output.model_dump(mode="json", exclude_none=True), artifacts[0].artifact_id)
        keep = template.keeps_session and status == "succeeded"
        if run.owns_session and not keep:
            with contextlib.suppress(BoxwrightError):
                await self.browser.sessions.close(session.id)
        run.finish(Outcome(status, error, result, artifacts))
        self.runs.evict()  # its artifacts may push older runs' out of memory
        log.info("run %s (%s) ended %s: %d/%d succeeded in %d ms", run.id, run.spec.template_id, status,
                 summary.succeeded, summary.total, run.elapsed_ms())  # fmt: skip
