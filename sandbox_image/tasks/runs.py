"""The runs this agent holds: their state machine, steps, progress, cancel flag, result and artifacts.

A run is queued until a slot is free, then running, then terminal (succeeded, failed, partial_success,
canceled) — and a terminal state never changes again. Every change bumps the run's `version` and
wakes long-polling task.status calls. Finished runs stay readable for a while (the host copies their
result and artifacts to its own store when they end), then are forgotten.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.tasks import (
    TERMINAL_STATUSES,
    ArtifactRef,
    RunMetrics,
    RunProgress,
    RunResult,
    RunStatus,
    StepInfo,
    StepStatus,
    TaskRunSummary,
    TaskStatus,
    TrustLevel,
)
from rpc.templates import TemplateSpec
from sandbox_image.tasks.artifacts import Artifact

# Finished runs are kept this long, and at most this many, for the host to read.
KEEP_FINISHED_S = 3600.0
MAX_FINISHED = 200
# ...and their artifacts together in at most this many bytes of the sandbox's memory (a batch of big pages
# is a 40 MB result.json): past it the oldest go first, but none before MIN_KEEP_S (the host copies a
# run's artifacts within 120 s of its end, sandboxes it does not reach in time aside).
MAX_FINISHED_BYTES = 256 * 1024 * 1024
MIN_KEEP_S = 600.0


def now_ms() -> int:
    return int(time.time() * 1000)


def new_run_id() -> str:
    return f"run_{secrets.token_hex(8)}"


@dataclass
class Step:
    index: int
    name: str
    status: StepStatus = "pending"
    attempts: int = 0
    failed_step: str | None = None  # the browser operation that failed (seed 000 §7.2 failedStep)
    error: BoxwrightError | None = None
    started: float | None = None
    ended: float | None = None

    @property
    def done(self) -> bool:
        return self.status in ("succeeded", "failed")

    def elapsed_ms(self) -> int | None:
        if self.started is None:
            return None
        return int(((self.ended or time.monotonic()) - self.started) * 1000)

    def info(self) -> StepInfo:
        return StepInfo(
            index=self.index,
            name=self.name,
            status=self.status,
            attempts=self.attempts,
            failedStep=self.failed_step,
            errorCode=self.error.code.value if self.error else None,
            error=self.error.message if self.error else None,
            elapsedMs=self.elapsed_ms(),
        )


@dataclass
class Outcome:
    """What a run ended with, decided before it is published."""

    status: RunStatus
    error: BoxwrightError | None
    result: RunResult | None
    artifacts: list[Artifact] = field(default_factory=list)


class Run:
    def __init__(
        self,
        run_id: str,
        spec: TemplateSpec,
        inputs: Any,
        timeout_ms: int,
        trust: TrustLevel,
        session_id: str,
        owns_session: bool,
        step_names: list[str],
    ) -> None:
        self.id = run_id
        self.spec = spec
        self.inputs = inputs
        self.timeout_ms = timeout_ms
        self.trust = trust
        self.session_id = session_id
        self.owns_session = owns_session
        self.steps = [Step(i, name) for i, name in enumerate(step_names)]
        self.status: RunStatus = "queued"
        self.created_at = self.updated_at = now_ms()
        self.started: float | None = None
        self.ended: float | None = None
        self.deadline: Deadline | None = None
        self.cancel_requested = False
        self.outcome: Outcome | None = None
        self.partial: Callable[[], BaseModel] | None = None  # the template's result so far
        self.task: asyncio.Task[None] | None = None
        self.version = 0
        self._changed = asyncio.Event()

    # -- changes -----------------------------------------------------------------------------
    def touch(self) -> None:
        """Record a change and wake whoever long-polls this run."""
        self.version += 1
        self.updated_at = now_ms()
        self._changed.set()
        self._changed = asyncio.Event()

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    def begin(self) -> Deadline:
        self.status = "running"
        self.started = time.monotonic()
        self.deadline = Deadline.after(self.timeout_ms / 1000.0)
        self.touch()
        return self.deadline

    def request_cancel(self) -> bool:
        """False when there is nothing left to cancel: the run ended, or every step has (its result is
        being put together), so a cancel arriving then does not turn a finished run into a canceled one."""
        if self.terminal or (self.status == "running" and self.steps and all(s.done for s in self.steps)):
            return False
        if not self.cancel_requested:
            self.cancel_requested = True
            self.touch()
        return True

    def finish(self, outcome: Outcome) -> None:
        if self.terminal:  # terminal states are irreversible
            return
        self.outcome = outcome
        self.status = outcome.status
        self.ended = time.monotonic()
        self.touch()

    async def wait_change(self, after_version: int, timeout_s: float) -> None:
        """Return when the version differs from `after_version`, the run ends, or `timeout_s` passes."""
        if self.version != after_version or self.terminal or timeout_s <= 0:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self._changed.wait()

    # -- reading -----------------------------------------------------------------------------
    def progress(self) -> RunProgress:
        return RunProgress(totalSteps=len(self.steps), doneSteps=sum(1 for s in self.steps if s.done))

    def elapsed_ms(self) -> int:
        if self.started is None:
            return 0
        return int(((self.ended or time.monotonic()) - self.started) * 1000)

    def artifact(self, artifact_id: str) -> Artifact:
        for artifact in self.outcome.artifacts if self.outcome else []:
            if artifact.artifact_id == artifact_id:
                return artifact
        raise BoxwrightError(
            ErrorCode.ARTIFACT_NOT_FOUND,
            f"run {self.id} has no artifact {artifact_id!r}"
            + ("" if self.terminal else " (artifacts appear when the run ends)"),
            details={"runId": self.id, "artifactId": artifact_id},
        )

    def status_model(self, *, include_steps: bool = False, partial: RunResult | None = None) -> TaskStatus:
        outcome = self.outcome
        artifacts: list[ArtifactRef] | None = [a.ref() for a in outcome.artifacts] if outcome else None
        return TaskStatus(
            runId=self.id,
            templateId=self.spec.template_id,
            templateVersion=self.spec.version,
            status=self.status,
            createdAt=self.created_at,
            updatedAt=self.updated_at,
            progress=self.progress(),
            metrics=RunMetrics(elapsedMs=self.elapsed_ms()),
            result=outcome.result if outcome else partial,
            artifacts=artifacts,
            error=outcome.error.to_body() if outcome and outcome.error else None,
            cancelRequested=self.cancel_requested,
            sessionId=self.session_id,
            steps=[s.info() for s in self.steps] if include_steps else None,
            version=self.version,
            timeoutMs=self.timeout_ms,
        )

    def summary_model(self) -> TaskRunSummary:
        return TaskRunSummary(
            runId=self.id,
            templateId=self.spec.template_id,
            status=self.status,
            createdAt=self.created_at,
            updatedAt=self.updated_at,
        )


class RunRegistry:
    def __init__(
        self,
        keep_finished_s: float = KEEP_FINISHED_S,
        max_finished: int = MAX_FINISHED,
        max_finished_bytes: int = MAX_FINISHED_BYTES,
        min_keep_s: float = MIN_KEEP_S,
    ) -> None:
        self.keep_finished_s = keep_finished_s
        self.max_finished = max_finished
        self.max_finished_bytes = max_finished_bytes
        self.min_keep_s = min_keep_s
        self._runs: dict[str, Run] = {}
        self._later: asyncio.TimerHandle | None = None

    def add(self, run: Run) -> None:
        self.evict()
        self._runs[run.id] = run

    def find(self, run_id: str) -> Run | None:
        return self._runs.get(run_id)

    def get(self, run_id: str) -> Run:
        self.evict()
        run = self._runs.get(run_id)
        if run is None:
            raise BoxwrightError(
                ErrorCode.RUN_NOT_FOUND,
                f"no run {run_id!r} in this sandbox",
                details={"runId": run_id},
            )
        return run

    def all(self) -> list[Run]:
        self.evict()
        return list(self._runs.values())

    def evict(self) -> None:
        """Forget finished runs past their keep time, and the oldest beyond the caps (count, then bytes).
        Called on every use and when a run ends; what is over the bytes cap but too new to go is looked
        at again once it may (no call may come: the host stops asking once it has copied a run)."""
        now = time.monotonic()
        finished = [r for r in self._runs.values() if r.terminal and r.ended is not None]
        finished.sort(key=lambda r: r.ended or 0.0)
        excess = len(finished) - self.max_finished
        held = sum(_artifact_bytes(r) for r in finished)
        for i, run in enumerate(finished):
            age = now - (run.ended or now)
            over_bytes = held > self.max_finished_bytes and age >= self.min_keep_s
            if i < excess or age > self.keep_finished_s or over_bytes:
                del self._runs[run.id]
                held -= _artifact_bytes(run)
            elif held > self.max_finished_bytes:
                self._evict_at(self.min_keep_s - age)
                break

    def _evict_at(self, delay_s: float) -> None:
        if self._later is not None:
            self._later.cancel()
        with contextlib.suppress(RuntimeError):  # no loop (a unit test): the next use evicts
            self._later = asyncio.get_running_loop().call_later(max(delay_s, 0.0) + 1.0, self.evict)


def _artifact_bytes(run: Run) -> int:
    return sum(len(a.data) for a in run.outcome.artifacts) if run.outcome else 0
