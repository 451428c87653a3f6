"""Template runs (seed 000): the seven tools over the host's RunManager (host.runs). Their input and
output schemas are rpc.models.tasks's models; the runs themselves execute in a sandbox's agent."""

from __future__ import annotations

from typing import Any

import anyio
from mcp.types import ToolAnnotations

from host.mcp.registry import Invocation, ToolOutput, ToolSpec
from host.runs.manager import SYNC_ANSWER_MARGIN_S, RunManager
from rpc.models import tasks as t

QUICK_S = 15.0  # tools that only read the host's store
CANCEL_WAIT_S = 10.0  # a cancelled sync call's cancel of its run (reaching the agent) takes at most this


def _run_summary(run: t.RunTaskTemplateResponse) -> str:
    text = f"{run.runId} {run.status}"
    if run.progress is not None:
        text += f" ({run.progress.doneSteps}/{run.progress.totalSteps} steps)"
    if run.result is not None:
        s = run.result.summary
        text += f": {s.succeeded} succeeded, {s.failed} failed" + (f", {s.skipped} skipped" if s.skipped else "")
    if run.error is not None:
        text += f" [{run.error.errorCode.value}]"
    return text


def tools(runs: RunManager) -> list[ToolSpec[Any]]:
    async def list_templates(_inv: Invocation[t.ListTaskTemplatesRequest]) -> ToolOutput:
        result = runs.templates()
        names = ", ".join(x.templateId for x in result.templates)
        return ToolOutput(result, f"list_task_templates ok: {len(result.templates)} templates ({names})")

    async def run_template(inv: Invocation[t.RunTaskTemplateRequest]) -> ToolOutput:
        live = await runs.submit(inv.caller, inv.args)
        rec = live.record
        if rec.mode == "async":
            result = t.RunTaskTemplateResponse(runId=rec.run_id, status=rec.status, createdAt=rec.created_at)
            summary = f"run_task_template ok: {rec.run_id} {rec.status} (async: poll get_task_run)"
            return ToolOutput(result, summary, sandbox_id=rec.sandbox_id)
        try:
            view = await runs.wait(live, inv.deadline.child(SYNC_ANSWER_MARGIN_S), inv.ctx.report_progress)
        except anyio.get_cancelled_exc_class():
            # The client cancelled the call: it never learns the runId, so the run is its call's to end.
            with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_WAIT_S):
                await runs.cancel(inv.caller, rec.run_id)
            raise
        return ToolOutput(view, f"run_task_template ok: {_run_summary(view)}", sandbox_id=view.sandboxId)

    async def get_run(inv: Invocation[t.GetTaskRunRequest]) -> ToolOutput:
        view = runs.get(inv.caller, inv.args.runId)
        return ToolOutput(view, f"get_task_run ok: {_run_summary(view)}", sandbox_id=view.sandboxId)

    async def list_runs(inv: Invocation[t.ListTaskRunsRequest]) -> ToolOutput:
        result = runs.list(inv.caller, inv.args)
        return ToolOutput(result, f"list_task_runs ok: {len(result.runs)} of {result.total} runs")

    async def cancel_run(inv: Invocation[t.CancelTaskRunRequest]) -> ToolOutput:
        result = await runs.cancel(inv.caller, inv.args.runId)
        state = "cancel requested" if result.cancelRequested else "already ended"
        return ToolOutput(result, f"cancel_task_run ok: {inv.args.runId} {state}, now {result.currentStatus}")

    async def get_artifact(inv: Invocation[t.GetArtifactRequest]) -> ToolOutput:
        a = inv.args
        chunk = runs.artifacts.read_chunk(inv.caller.owner, a.artifactId, a.offset, a.limit)
        end = chunk.offset + (chunk.bytesReturned or 0)
        more = "complete" if chunk.complete else f"more from offset {end}"
        summary = f"get_artifact ok: {a.artifactId} bytes {chunk.offset}–{end} of {chunk.size} ({more})"
        return ToolOutput(chunk, summary)

    async def runtime_profile(_inv: Invocation[t.GetRuntimeProfileRequest]) -> ToolOutput:
        p = t.RUNTIME_PROFILE
        return ToolOutput(p, f"get_runtime_profile ok: runtime {p.runtimeVersion}")

    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    return [
        ToolSpec(
            name="list_task_templates",
            title="List task templates",
            description=(
                "List the task templates run_task_template can run (batch_extract_pages, multi_tab_compare, "
                "login_keep_session): id, version, trust levels, limits, inputsSchema and outputsSchema."
            ),
            input=t.ListTaskTemplatesRequest,
            output=t.ListTaskTemplatesResponse,
            handler=list_templates,
            budget_s=lambda _: QUICK_S,
            annotations=read_only,
        ),
        ToolSpec(
            name="run_task_template",
            title="Run a task template",
            description=(
                "Run a multi-step browser job from a template, without an LLM in the loop. inputs must match the "
                "template's inputsSchema (list_task_templates). options.mode: 'sync' waits and returns the "
                "finished run (as get_task_run); 'async' returns {runId, status} at once — poll get_task_run every "
                "2 s; 'auto' (default) lets the template choose (batch_extract_pages: sync for up to 10 URLs). "
                "Long runs should use async: many MCP clients give up on a call after 60 s. Runs in a new sandbox "
                "made for the run (removed afterwards; login_keep_session keeps it and returns sandboxId and "
                "sessionId) unless you pass sandboxId (e.g. the sandbox serving the pages) and/or sessionId (a "
                "browser session to reuse, left open). options.timeoutMs caps the run (default: the template's "
                "maximum; 120 s in sync mode). At most 5 runs execute at once; others wait in a queue."
            ),
            input=t.RunTaskTemplateRequest,
            output=t.RunTaskTemplateResponse,
            handler=run_template,
            budget_s=runs.tool_budget_s,
            annotations=ToolAnnotations(destructive_hint=False, open_world_hint=True),
        ),
        ToolSpec(
            name="get_task_run",
            title="Get a task run",
            description=(
                "A run's status (queued, running, succeeded, failed, partial_success, canceled), progress "
                "(doneSteps/totalSteps), elapsed time and — once it ended — its result, artifacts and error."
            ),
            input=t.GetTaskRunRequest,
            output=t.TaskRun,
            handler=get_run,
            budget_s=lambda _: QUICK_S,
            annotations=read_only,
        ),
        ToolSpec(
            name="list_task_runs",
            title="List your task runs",
            description="Your runs, newest first, optionally filtered by status and templateId (limit/offset pages).",
            input=t.ListTaskRunsRequest,
            output=t.ListTaskRunsResponse,
            handler=list_runs,
            budget_s=lambda _: QUICK_S,
            annotations=read_only,
        ),
        ToolSpec(
            name="cancel_task_run",
            title="Cancel a task run",
            description=(
                "Ask a run to stop: a queued run is canceled at once; a running one finishes its current steps, "
                "skips the rest and ends 'canceled' (poll get_task_run); its partial results stay readable."
            ),
            input=t.CancelTaskRunRequest,
            output=t.CancelTaskRunResponse,
            handler=cancel_run,
            budget_s=lambda _: 20.0,
            annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True, open_world_hint=False),
        ),
        ToolSpec(
            name="get_artifact",
            title="Read a run artifact",
            description=(
                "Read an artifact of a finished run (result.json, items.csv) as base64, at most 262144 bytes per "
                "call: while complete is false, call again with offset += bytesReturned. Artifacts are kept 24 h "
                "(by default) after their run ends. Clients that read MCP resources can read "
                "boxwright://artifacts/{artifactId} whole instead."
            ),
            input=t.GetArtifactRequest,
            output=t.ArtifactChunk,
            handler=get_artifact,
            budget_s=lambda _: QUICK_S,
            annotations=read_only,
        ),
        ToolSpec(
            name="get_runtime_profile",
            title="Template runtime profile",
            description="The template runtime's version and limits (maxConcurrentRuns, maxRunTimeoutMs, "
            "maxArtifactInlineBytes).",
            input=t.GetRuntimeProfileRequest,
            output=t.RuntimeProfile,
            handler=runtime_profile,
            budget_s=lambda _: QUICK_S,
            annotations=read_only,
        ),
    ]
