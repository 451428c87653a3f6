"""What a template's code gets for one run: the run, its typed inputs, the browser and the executor."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sandbox_image.tasks.actions import RunBrowser
from sandbox_image.tasks.executor import StepExecutor
from sandbox_image.tasks.runs import Run

I = TypeVar("I")  # noqa: E741  (the template's inputs model)


@dataclass
class RunContext(Generic[I]):
    run: Run
    inputs: I
    browser: RunBrowser
    executor: StepExecutor
    values: dict[int, Any] = field(default_factory=dict)  # step index → what the step produced
    notes: dict[str, Any] = field(default_factory=dict)  # template scratch (a comparison, the kept tab…)
