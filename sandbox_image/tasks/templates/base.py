"""What the agent knows of a template beyond its catalog entry: its steps, its code, its result."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from rpc.errors import ErrorCode
from rpc.models.templates import PageOutcome, TemplateOutput
from rpc.templates import TemplateSpec
from sandbox_image.tasks.artifacts import Artifact, json_artifact
from sandbox_image.tasks.context import RunContext
from sandbox_image.tasks.runs import Step

# Seed 001 §5.3: one immediate retry, in a fresh tab, on these.
RETRY_ON = frozenset({ErrorCode.NAVIGATION_TIMEOUT, ErrorCode.PAGE_CRASHED})


def result_json(output: BaseModel) -> Artifact:
    return json_artifact("result.json", output.model_dump(mode="json", exclude_none=True))


@dataclass(frozen=True)
class Template:
    spec: TemplateSpec
    plan: Callable[[Any], list[str]]  # the step names, from the inputs
    execute: Callable[[RunContext[Any]], Awaitable[None]]
    output: Callable[[RunContext[Any]], TemplateOutput]  # from the steps so far: partial while running, final after
    artifacts: Callable[[TemplateOutput], list[Artifact]] = lambda output: [result_json(output)]
    tabs_needed: Callable[[Any], int] = lambda _inputs: 1  # free tab slots the run needs in its session

    @property
    def keeps_session(self) -> bool:
        """Keep a session the run created when it succeeds (the catalog says which templates do)."""
        return self.spec.keeps_session


def failed_item(model: type[PageOutcome], url: str, step: Step) -> Any:
    """The item of a URL whose step did not succeed: its error, or that it never ran."""
    error = step.error
    return model(
        url=url,
        success=False,
        status="skipped" if step.status == "skipped" else "failed",
        attempts=step.attempts,
        error=error.message if error else None,
        errorCode=error.code.value if error else None,
        failedStep=step.failed_step,
        elapsedMs=step.elapsed_ms(),
    )
