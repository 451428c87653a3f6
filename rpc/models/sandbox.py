"""Agent-level methods: sandbox.info."""

from __future__ import annotations

from pydantic import Field

from rpc.models.base import Params, Result


class SandboxInfoParams(Params):
    pass


class SandboxInfoResult(Result):
    agentVersion: str
    uptimeMs: int
    workspace: str
    codeRunnerReady: bool = Field(description="The code runner daemon (separate user) is connected")
    user: str


class Health(Result):
    """GET /healthz body (no auth; says nothing secret)."""

    status: str
    agentVersion: str
    codeRunnerReady: bool
