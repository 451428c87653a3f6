"""StepExecutor: runs one step of a run at a time (several at once in a window), seed 000 §6 and §8.

A step goes pending → running → succeeded | failed, or pending → skipped. Before a step starts the
executor checks the cancel flag and the run's deadline (cooperative cancel: a running step is never
interrupted, it finishes); the step's own operations get budgets inside the run's deadline, and the
deadline itself is a backstop around the step. A failure keeps the tool-level code of the operation
that failed (failedStep + errorCode); one that the run's deadline cut short becomes RUN_TIMEOUT.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode
from sandbox_image.tasks.runs import Run, Step

log = logging.getLogger("boxwright.agent.tasks")

T = TypeVar("T")

# A step ending this close to the run's deadline (or after it) ended because of it; and no new step
# or retry starts with less than this left.
DEADLINE_SLACK_S = 0.3
MAX_ATTEMPTS = 2  # one immediate retry (seed 001 §5.3)


class ActionError(Exception):
    """A browser operation inside a step failed; `action` names it (navigate, get_page_info, …)."""

    def __init__(self, action: str, error: BoxwrightError) -> None:
        super().__init__(f"{action}: {error.message}")
        self.action = action
        self.error = error


def run_timeout(run: Run, cause: BoxwrightError | None = None) -> BoxwrightError:
    details: dict[str, object] = {"runId": run.id, "timeoutMs": run.timeout_ms}
    if cause is not None and cause.code is not ErrorCode.RUN_TIMEOUT:
        details["cutShort"] = cause.code.value
    return BoxwrightError(
        ErrorCode.RUN_TIMEOUT,
        f"the run's deadline ({run.timeout_ms} ms) passed before this step finished",
        details=details,
    )


class StepExecutor:
    def __init__(self, run: Run) -> None:
        self.run = run

    @property
    def deadline(self) -> Deadline:
        if self.run.deadline is None:
            raise RuntimeError("the run has not begun")
        return self.run.deadline

    def timed_out(self) -> bool:
        return self.run.deadline is not None and self.run.deadline.remaining() <= DEADLINE_SLACK_S

    def may_start(self) -> bool:
        """Whether another step may begin: not canceled, and time left."""
        return not self.run.cancel_requested and not self.timed_out()

    def _start(self, step: Step) -> None:
        step.status = "running"
        step.started = time.monotonic()
        self.run.touch()

    def _end(self, step: Step, status: str, action: str | None = None, error: BoxwrightError | None = None) -> None:
        step.status = "succeeded" if status == "succeeded" else "failed"
        step.failed_step = action
        step.error = error
        step.ended = time.monotonic()
        self.run.touch()

    async def execute(
        self,
        step: Step,
        body: Callable[[], Awaitable[T]],
        *,
        retry_on: frozenset[ErrorCode] = frozenset(),
    ) -> T | None:
        """Run `body` as `step`; its value, or None when the step failed or could not start."""
        if step.status != "pending" or not self.may_start():
            return None
        self._start(step)
        while True:
            step.attempts += 1
            action: str | None = None
            try:
                async with self.deadline.timeout():
                    value = await body()
            except ActionError as exc:
                action, error = exc.action, exc.error
            except BoxwrightError as exc:
                error = exc
            except TimeoutError:
                error = BoxwrightError(ErrorCode.OPERATION_TIMEOUT, f"step {step.name!r} ran out of time")
            except Exception:
                log.exception("run %s: step %d failed unexpectedly", self.run.id, step.index)
                error = BoxwrightError(ErrorCode.INTERNAL_ERROR, f"step {step.name!r} failed on an internal error")
            else:
                self._end(step, "succeeded")
                return value
            if self.timed_out():
                error = run_timeout(self.run, error)
            elif error.code in retry_on and step.attempts < MAX_ATTEMPTS:
                log.info("run %s: step %d retried after %s", self.run.id, step.index, error.code.value)
                continue
            self._end(step, "failed", action, error)
            return None

    def close_out(self) -> None:
        """After the template returns: steps that never ran are skipped (canceled, or an earlier step
        ended an atomic run) or failed with RUN_TIMEOUT (the deadline came first)."""
        timed_out = self.timed_out() and not self.run.cancel_requested
        changed = False
        for step in self.run.steps:
            if step.status == "running":  # only when the run's backstop (or an internal error) cut a step off
                interrupted = BoxwrightError(ErrorCode.EXECUTION_ERROR, f"step {step.name!r} was interrupted")
                step.status, step.error = "failed", run_timeout(self.run) if self.timed_out() else interrupted
                step.ended = time.monotonic()
                changed = True
            elif step.status == "pending":
                if timed_out:
                    step.status, step.error = "failed", run_timeout(self.run)
                else:
                    step.status = "skipped"
                changed = True
        if changed:
            self.run.touch()


async def settle(aw: Awaitable[object]) -> None:
    """Await cleanup even when the caller is being cancelled (the cleanup itself is not)."""
    task = asyncio.ensure_future(aw)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait([task])
        raise
