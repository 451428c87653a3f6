"""Template runs (seeds 000 and 001): the MCP-facing shapes and the agent's task.* methods.

Two audiences import this module, so a shape is never written twice:
- the host's MCP tools (list_task_templates, run_task_template, get_task_run, list_task_runs,
  cancel_task_run, get_artifact, get_runtime_profile) take and return the models of the first part,
  field for field as seed 000 spells them (optional additions only, seed §11);
- the host's RunManager drives one run inside a sandbox through the agent's task.* methods
  (second part): task.start, task.status (with long-poll), task.cancel, task.list, task.artifact_read.

The per-template inputs and outputs live in rpc.models.templates, the catalog in rpc.templates.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from rpc.errors import ErrorBody
from rpc.models.base import Params, Result
from rpc.models.profiles import ProfileId

RUNTIME_VERSION = "0.2.0"
MAX_CONCURRENT_RUNS = 5
MAX_RUN_TIMEOUT_MS = 900_000
MIN_RUN_TIMEOUT_MS = 1_000
MAX_ARTIFACT_INLINE_BYTES = 262_144
DEFAULT_PARTIAL_THRESHOLD = 0.5
ARTIFACT_TTL_MS = 24 * 3600 * 1000  # counted from the run's terminal state (seed 000 §5)
# What one task.artifact_read may return: bigger than an MCP chunk (fewer round trips host→agent),
# far below the agent's body limits once base64-encoded.
MAX_AGENT_ARTIFACT_CHUNK_BYTES = 1_048_576
MAX_STATUS_WAIT_MS = 60_000
RUN_ID_PATTERN = r"^run_[A-Za-z0-9_-]{1,60}$"

RunStatus = Literal["queued", "running", "succeeded", "failed", "canceled", "partial_success"]
TERMINAL_STATUSES: frozenset[str] = frozenset({"succeeded", "failed", "canceled", "partial_success"})
StepStatus = Literal["pending", "running", "succeeded", "failed", "skipped"]
TrustLevel = Literal["local", "remote"]
RunMode = Literal["sync", "async", "auto"]

_RUN_ID = Field(min_length=1, max_length=128, description="Run id from run_task_template (run_…)")


# -- get_runtime_profile ------------------------------------------------------------------------
class RuntimeLimits(Result):
    maxConcurrentRuns: int = Field(description="Runs executing at once; more wait in a FIFO queue")
    maxRunTimeoutMs: int = Field(description="Upper bound of options.timeoutMs")
    maxArtifactInlineBytes: int = Field(description="Largest chunk one get_artifact call returns")


class GetRuntimeProfileRequest(Params):
    pass


class RuntimeProfile(Result):
    runtimeVersion: str
    limits: RuntimeLimits


RUNTIME_PROFILE = RuntimeProfile(
    runtimeVersion=RUNTIME_VERSION,
    limits=RuntimeLimits(
        maxConcurrentRuns=MAX_CONCURRENT_RUNS,
        maxRunTimeoutMs=MAX_RUN_TIMEOUT_MS,
        maxArtifactInlineBytes=MAX_ARTIFACT_INLINE_BYTES,
    ),
)


# -- list_task_templates ------------------------------------------------------------------------
class ListTaskTemplatesRequest(Params):
    pass


class TemplateInfo(Result):
    templateId: str
    version: str
    name: str
    description: str | None = None
    trustLevelSupport: list[TrustLevel] = Field(description="Connection trust levels allowed to run it")
    limits: dict[str, int] = Field(description="Template-specific limits, e.g. maxUrls, maxConcurrency")
    inputsSchema: dict[str, Any] = Field(description="JSON Schema of run_task_template's inputs")
    outputsSchema: dict[str, Any] = Field(description="JSON Schema of the run's result")
    supportsPartialSuccess: bool = Field(False, description="May end partial_success (else succeeded or failed)")
    partialThreshold: float | None = Field(None, description="Success ratio needed for partial_success")
    maxTimeoutMs: int = Field(MAX_RUN_TIMEOUT_MS, description="Cap on (and default of) options.timeoutMs")


class ListTaskTemplatesResponse(Result):
    templates: list[TemplateInfo]


# -- run_task_template / get_task_run -----------------------------------------------------------
class RunOptions(Params):
    timeoutMs: int | None = Field(
        None,
        ge=MIN_RUN_TIMEOUT_MS,
        le=MAX_RUN_TIMEOUT_MS,
        description="Run deadline; the effective one is min(this, template maxTimeoutMs, runtime maxRunTimeoutMs); "
        "default: the template's maxTimeoutMs",
    )
    mode: RunMode = Field(
        "auto",
        description="sync: wait for the result; async: return a runId at once; auto: "
        "the template decides (batch_extract_pages: sync for up to 10 URLs)",
    )


class RunTaskTemplateRequest(Params):
    templateId: str = Field(min_length=1, max_length=100)
    templateVersion: str | None = Field(None, max_length=32, description="Default: the current version")
    sandboxId: str | None = Field(None, max_length=128, description="Run in this sandbox (default: a new one)")
    sessionId: str | None = Field(
        None, max_length=64, description="Run in this browser session and leave it open (default: a fresh one)"
    )
    inputs: dict[str, Any] = Field(default_factory=dict, description="Checked against the template's inputsSchema")
    options: RunOptions = Field(default_factory=RunOptions)
    profileId: ProfileId | None = Field(
        None,
        description="Run in a browser session opened from this login profile (yours); what the run changes (new "
        "cookies) is saved back to it when the run ends. Not with sessionId.",
    )

    @model_validator(mode="after")
    def _one_session(self) -> Self:
        if self.profileId is not None and self.sessionId is not None:
            raise ValueError("give sessionId or profileId, not both (a profile opens a session of its own)")
        return self


class RunProgress(Result):
    totalSteps: int
    doneSteps: int


class RunMetrics(Result):
    elapsedMs: int = Field(description="Time spent running (queue time excluded)")


class ResultSummary(Result):
    total: int
    succeeded: int
    failed: int
    skipped: int = Field(0, description="Items never started (the run was canceled)")


class RunResult(Result):
    """A run's result: summary and items, plus whatever its template adds (see its outputsSchema)."""

    model_config = ConfigDict(extra="allow")

    summary: ResultSummary
    items: list[dict[str, Any]]
    truncated: bool = Field(
        False, description="Too large to inline: heavy fields or items left out; the full result is in artifactId"
    )
    artifactId: str | None = Field(None, description="The artifact holding the complete result (JSON)")


class ArtifactRef(Result):
    artifactId: str
    type: str = Field(description="json, csv…")
    size: int = Field(description="Bytes")
    mimeType: str | None = None
    name: str | None = None


class StepInfo(Result):
    index: int
    name: str
    status: StepStatus
    attempts: int = 0
    failedStep: str | None = Field(None, description="The browser operation that failed (navigate, …)")
    errorCode: str | None = None
    error: str | None = None
    elapsedMs: int | None = None


class RunTaskTemplateResponse(Result):
    """run_task_template's answer: {runId, status, createdAt} in async mode, the whole run in sync mode.

    Fields a run does not have (yet) are left out rather than sent as null, as in seed 000's examples
    (`result` appears when there is one)."""

    runId: str
    status: RunStatus
    createdAt: int | None = Field(None, description="Epoch ms")
    updatedAt: int | None = Field(None, description="Epoch ms")
    templateId: str | None = None
    templateVersion: str | None = None
    progress: RunProgress | None = None
    metrics: RunMetrics | None = None
    result: RunResult | None = Field(None, description="Final (or, on request, partial) result")
    artifacts: list[ArtifactRef] | None = None
    error: ErrorBody | None = Field(None, description="Why the run failed or ended (RUN_TIMEOUT, …)")
    cancelRequested: bool | None = None
    sandboxId: str | None = None
    sessionId: str | None = Field(None, description="The browser session the run used")
    steps: list[StepInfo] | None = None
    profileId: str | None = Field(None, description="The login profile the run used or saved to")
    profileVersion: int | None = Field(
        None, description="The profile's version after the run saved it (absent: nothing saved, e.g. a newer login)"
    )

    # No return annotation on purpose: with one, pydantic would publish it (a bare object) as the schema.
    @model_serializer(mode="wrap")
    def _leave_out_absent(self, handler: SerializerFunctionWrapHandler):
        return {key: value for key, value in handler(self).items() if value is not None}


class GetTaskRunRequest(Params):
    runId: str = _RUN_ID


class TaskRun(RunTaskTemplateResponse):
    """get_task_run's answer (and sync run_task_template's): the same shape while running and at the end."""

    templateId: str
    progress: RunProgress
    metrics: RunMetrics


# -- list_task_runs / cancel_task_run -----------------------------------------------------------
class ListTaskRunsRequest(Params):
    status: RunStatus | None = None
    templateId: str | None = Field(None, max_length=100)
    limit: int = Field(20, ge=1, le=100)
    offset: int = Field(0, ge=0)


class TaskRunSummary(Result):
    runId: str
    templateId: str
    status: RunStatus
    createdAt: int
    updatedAt: int


class ListTaskRunsResponse(Result):
    runs: list[TaskRunSummary]
    total: int | None = Field(None, description="Runs matching the filters, before limit/offset")


class CancelTaskRunRequest(Params):
    runId: str = _RUN_ID


class CancelTaskRunResponse(Result):
    cancelRequested: bool = Field(description="The request was accepted (false: the run had already ended)")
    currentStatus: RunStatus = Field(description="Still running until the current step finishes")


# -- get_artifact -------------------------------------------------------------------------------
class GetArtifactRequest(Params):
    artifactId: str = Field(min_length=1, max_length=128)
    offset: int = Field(0, ge=0)
    limit: int = Field(MAX_ARTIFACT_INLINE_BYTES, ge=1, le=MAX_ARTIFACT_INLINE_BYTES)


class ArtifactChunk(Result):
    artifactId: str
    mimeType: str
    size: int = Field(description="Total bytes of the artifact")
    data: str = Field(description="Base64 of the bytes [offset, offset + bytesReturned)", repr=False)
    offset: int = 0
    bytesReturned: int | None = None
    complete: bool = Field(description="This chunk reaches the end of the artifact")


# -- the agent's task.* methods (host → agent) --------------------------------------------------
class TaskTemplatesParams(Params):
    pass


class TaskStartParams(Params):
    runId: str | None = Field(None, pattern=RUN_ID_PATTERN, description="Chosen by the host; generated if omitted")
    templateId: str = Field(min_length=1, max_length=100)
    templateVersion: str | None = Field(None, max_length=32)
    sessionId: str | None = Field(None, max_length=64, description="Existing session to use (left open)")
    inputs: dict[str, Any] = Field(default_factory=dict)
    runTimeoutMs: int | None = Field(None, ge=MIN_RUN_TIMEOUT_MS, le=MAX_RUN_TIMEOUT_MS)
    trustLevel: TrustLevel = Field("remote", description="The caller's connection trust level")


class TaskStatusParams(Params):
    runId: str = _RUN_ID
    waitMs: int = Field(0, ge=0, le=MAX_STATUS_WAIT_MS, description="Long-poll: wait up to this long for a change")
    afterVersion: int | None = Field(
        None, ge=0, description="Return at once if the run's version differs from this (the last one seen)"
    )
    includeSteps: bool = False
    partial: bool = Field(False, description="Include the partial result while the run is not finished")


class TaskStatus(TaskRun):
    """task.status: the run as get_task_run shows it, plus what the host needs to follow it."""

    version: int = Field(description="Bumped on every change of state, step or progress")
    timeoutMs: int = Field(description="The run's effective timeout")


class TaskCancelParams(Params):
    runId: str = _RUN_ID


class TaskListParams(Params):
    status: RunStatus | None = None


class TaskListResult(Result):
    runs: list[TaskRunSummary]


class TaskArtifactReadParams(Params):
    runId: str = _RUN_ID
    artifactId: str = Field(min_length=1, max_length=128)
    offset: int = Field(0, ge=0)
    limit: int = Field(MAX_AGENT_ARTIFACT_CHUNK_BYTES, ge=1, le=MAX_AGENT_ARTIFACT_CHUNK_BYTES)
