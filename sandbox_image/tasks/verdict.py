"""How a run's end state follows from its items (seed 000 §6) and which error it carries (§7)."""

from __future__ import annotations

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.tasks import ResultSummary, RunStatus
from rpc.templates import TemplateSpec
from sandbox_image.tasks.runs import Run


def decide(spec: TemplateSpec, summary: ResultSummary, *, canceled: bool) -> RunStatus:
    """canceled; succeeded when every item succeeded; else partial_success if the template allows it and
    the success ratio reaches its threshold (default 50 %); else failed."""
    if canceled:
        return "canceled"
    if summary.total > 0 and summary.succeeded == summary.total:
        return "succeeded"
    if (
        spec.supports_partial_success
        and summary.total > 0
        and summary.succeeded / summary.total >= spec.partial_threshold
    ):
        return "partial_success"
    return "failed"


def run_error(run: Run, status: RunStatus, *, timed_out: bool) -> BoxwrightError | None:
    """The run-level error: RUN_CANCELED, RUN_TIMEOUT, or STEP_EXECUTION_FAILED naming the first failed step."""
    if status == "canceled":
        skipped = sum(1 for s in run.steps if s.status == "skipped")
        return BoxwrightError(
            ErrorCode.RUN_CANCELED,
            f"run {run.id} was canceled; {skipped} steps were skipped, finished ones are in the result",
            details={"runId": run.id, "skippedSteps": skipped},
        )
    if status != "failed":
        return None
    if timed_out:
        unfinished = sum(1 for s in run.steps if s.error is not None and s.error.code is ErrorCode.RUN_TIMEOUT)
        return BoxwrightError(
            ErrorCode.RUN_TIMEOUT,
            f"run {run.id} did not finish within {run.timeout_ms} ms ({unfinished} steps unfinished)",
            details={"runId": run.id, "timeoutMs": run.timeout_ms, "unfinishedSteps": unfinished},
        )
    failed = [s for s in run.steps if s.status == "failed" and s.error is not None]
    if not failed:
        return BoxwrightError(ErrorCode.EXECUTION_ERROR, f"run {run.id} failed", details={"runId": run.id})
    first = failed[0]
    assert first.error is not None
    return BoxwrightError(
        ErrorCode.STEP_EXECUTION_FAILED,
        f"step {first.name!r} failed: {first.error.message}",
        hint=first.error.hint or ErrorCode.STEP_EXECUTION_FAILED.hint,
        details={
            "runId": run.id,
            "failedStep": first.failed_step or first.name,
            "stepErrorCode": first.error.code.value,
            "step": first.name,
            "failedSteps": len(failed),
        },
    )
