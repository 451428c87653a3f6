"""Agent-level methods: sandbox.info and sandbox.claim (a warm-pool sandbox taken into service)."""

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


class SandboxClaimParams(Params):
    """A pooled sandbox is handed to its first user: from now on the agent accepts only the new token."""

    tokenSha256: str = Field(
        pattern=r"^[0-9a-f]{64}$", description="SHA-256 (hex) of the token that replaces the pool's"
    )


class SandboxClaimResult(Result):
    claimed: bool
    codeRunnerReady: bool = Field(description="The code runner daemon (separate user) is connected")
