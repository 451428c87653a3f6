"""sandbox.activity: the work in a sandbox that no recent call shows — background processes still
running and template runs in flight — so the host's idle timeout never cuts it short."""

from __future__ import annotations

from rpc.deadline import Deadline
from rpc.errors import BoxwrightError
from rpc.methods import PROCESS_LIST, SANDBOX_ACTIVITY
from rpc.models.code import ProcessListParams, ProcessListResult
from rpc.models.sandbox import SandboxActivityParams, SandboxActivityResult
from sandbox_image.code.client import RunnerLink
from sandbox_image.dispatcher import Dispatcher
from sandbox_image.tasks.runs import RunRegistry


def register(dispatcher: Dispatcher, *, runner: RunnerLink, runs: RunRegistry) -> None:
    async def activity(_params: SandboxActivityParams, deadline: Deadline) -> SandboxActivityResult:
        running: int | None
        try:
            listed = await runner.call(PROCESS_LIST, ProcessListParams(), deadline)
            assert isinstance(listed, ProcessListResult)
            running = sum(1 for p in listed.processes if p.running)
        except BoxwrightError:  # the runner is down: whether its processes live is unknown
            running = None
        in_flight = sum(1 for r in runs.all() if not r.terminal)
        return SandboxActivityResult(runningProcesses=running, runsInFlight=in_flight)

    dispatcher.register(SANDBOX_ACTIVITY, activity)
