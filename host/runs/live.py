"""A run in flight in this process: its record plus what only memory holds — the caller, the inputs
until the agent has them, the queue wait to cancel, and the events that wake whoever waits on it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio

from host.profiles.publisher import Binding
from host.runs.records import RunRecord
from host.sandboxes.models import Caller, SandboxRecord


@dataclass(eq=False)
class LiveRun:
    record: RunRecord
    caller: Caller
    inputs: dict[str, Any] | None = field(repr=False)  # dropped as soon as the agent has them
    sandbox: SandboxRecord | None = None
    agent_started: bool = False  # task.start was accepted: a cancel goes to the agent
    following: bool = False  # the driver is waiting for the agent to end it (RunDriver._follow)
    profile: Binding | None = None  # the session opened from the run's login profile
    saved_at: float = 0.0  # time.monotonic() of the last save of its record
    queue_scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    _changed: anyio.Event = field(default_factory=anyio.Event)

    @property
    def run_id(self) -> str:
        return self.record.run_id

    def changed(self) -> anyio.Event:
        """An event set at the next change of the run (take it before reading the record)."""
        return self._changed

    def notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()
        if self.record.terminal:
            self.done.set()
