"""What the host keeps of a template run: one record per run, stored as JSON (host.runs.store), shown to
its owner in the shapes of seed 000 (rpc.models.tasks).

A record never holds the run's inputs (login_keep_session's contain passwords): they live in memory
only until the run is handed to the agent.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rpc.errors import BoxwrightError, ErrorBody, ErrorCode
from rpc.models.tasks import (
    TERMINAL_STATUSES,
    ArtifactRef,
    RunMetrics,
    RunProgress,
    RunResult,
    RunStatus,
    TaskRun,
    TaskRunSummary,
    TrustLevel,
)

# Whose sandbox a run works in: the caller's (named by sandboxId, or their default), or one made for it.
SandboxKind = Literal["caller", "job"]


def now_ms() -> int:
    return int(time.time() * 1000)


class RunRecord(BaseModel):
    model_config = ConfigDict(extra="ignore", validate_assignment=False)

    run_id: str
    owner: str
    template_id: str
    template_version: str
    status: RunStatus = "queued"
    mode: Literal["sync", "async"]
    trust_level: TrustLevel
    timeout_ms: int
    created_at: int = Field(description="Epoch ms")
    updated_at: int
    started_at: int | None = Field(None, description="When the agent began it (it left the queues)")
    ended_at: int | None = None
    progress: RunProgress = Field(default_factory=lambda: RunProgress(totalSteps=0, doneSteps=0))
    elapsed_ms: int = 0
    sandbox_id: str | None = None
    sandbox_kind: SandboxKind = "job"
    session_id: str | None = None
    session_given: bool = False
    kept: bool = Field(False, description="login_keep_session kept its session (and a job sandbox)")
    profile_id: str | None = Field(None, description="The login profile the run's session was opened from")
    publish_to: str | None = Field(None, description="login_keep_session's publishToProfile")
    publish_base_version: int | None = Field(None, description="That profile's version when the run was accepted")
    profile_version: int | None = Field(None, description="The profile version the run saved")
    cancel_requested: bool = False
    result: dict[str, Any] | None = None
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    error: ErrorBody | None = None
    expired: bool = Field(False, description="Retention passed: result and artifacts deleted, only this is left")

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    def touch(self) -> None:
        self.updated_at = now_ms()

    def live_elapsed_ms(self) -> int:
        if self.started_at is None:
            return 0
        if self.ended_at is not None:
            return self.elapsed_ms
        return max(self.elapsed_ms, now_ms() - self.started_at)

    def finish(self, status: RunStatus, error: BoxwrightError | None = None) -> None:
        """Enter a terminal state (irreversible: a second call changes nothing)."""
        if self.terminal:
            return
        self.status = status
        self.ended_at = now_ms()
        if self.started_at is not None:
            self.elapsed_ms = max(self.elapsed_ms, self.ended_at - self.started_at)
        if error is not None:
            self.error = error.with_details(runId=self.run_id).to_body()
        self.updated_at = self.ended_at

    def expires_at(self, retention_s: float) -> int | None:
        """Seed 000 §5: counted from the terminal state."""
        return None if self.ended_at is None else self.ended_at + int(retention_s * 1000)

    # -- as the owner sees it ------------------------------------------------------------------
    def view(self) -> TaskRun:
        """get_task_run's shape (and sync run_task_template's). The sandbox and session are named only
        when they outlive the run: the caller's own, or kept by login_keep_session."""
        shows_sandbox = self.sandbox_kind == "caller" or self.kept
        shows_session = self.session_given or self.kept
        return TaskRun(
            runId=self.run_id,
            templateId=self.template_id,
            templateVersion=self.template_version,
            status=self.status,
            createdAt=self.created_at,
            updatedAt=self.updated_at,
            progress=self.progress,
            metrics=RunMetrics(elapsedMs=self.live_elapsed_ms()),
            result=RunResult.model_validate(self.result) if self.result is not None else None,
            artifacts=list(self.artifacts) if self.terminal else None,
            error=self.error,
            cancelRequested=self.cancel_requested,
            sandboxId=self.sandbox_id if shows_sandbox else None,
            sessionId=self.session_id if shows_session else None,
            profileId=self.profile_id or self.publish_to,
            profileVersion=self.profile_version,
        )

    def summary(self) -> TaskRunSummary:
        return TaskRunSummary(
            runId=self.run_id,
            templateId=self.template_id,
            status=self.status,
            createdAt=self.created_at,
            updatedAt=self.updated_at,
        )


def run_not_found(run_id: str) -> BoxwrightError:
    """The same answer for a run that never existed, one that expired and another owner's."""
    return BoxwrightError(ErrorCode.RUN_NOT_FOUND, f"no run {run_id!r}", details={"runId": run_id})
