"""sandbox.info: what the agent is and whether its code runner is up."""

from __future__ import annotations

import os
import pwd
import time

from rpc.deadline import Deadline
from rpc.methods import SANDBOX_INFO
from rpc.models.sandbox import Health, SandboxInfoParams, SandboxInfoResult
from sandbox_image import AGENT_VERSION
from sandbox_image.code.client import RunnerLink
from sandbox_image.dispatcher import Dispatcher


def current_user() -> str:
    uid = os.geteuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


async def health(runner: RunnerLink) -> Health:
    """GET /healthz: says nothing secret; codeRunnerReady says a genuine daemon is connected."""
    return Health(status="ok", agentVersion=AGENT_VERSION, codeRunnerReady=runner.ready)


def register(dispatcher: Dispatcher, *, workspace: str, runner: RunnerLink) -> None:
    started = time.monotonic()

    async def sandbox_info(_params: SandboxInfoParams, _deadline: Deadline) -> SandboxInfoResult:
        return SandboxInfoResult(
            agentVersion=AGENT_VERSION,
            uptimeMs=int((time.monotonic() - started) * 1000),
            workspace=workspace,
            codeRunnerReady=runner.ready,
            user=current_user(),
        )

    dispatcher.register(SANDBOX_INFO, sandbox_info)
