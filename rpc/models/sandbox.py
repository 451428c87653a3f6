"""Agent-level methods: sandbox.info, sandbox.claim (a warm-pool sandbox taken into service) and
sandbox.activity (the work the idle timeout must not cut short)."""

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
    expiresAt: int | None = Field(None, ge=0, description="The claimed sandbox's expiry (epoch seconds)")


class SandboxClaimResult(Result):
    claimed: bool
    codeRunnerReady: bool = Field(description="The code runner daemon (separate user) is connected")


class SandboxActivityParams(Params):
    pass


class SandboxActivityResult(Result):
    runningProcesses: int | None = Field(
        description="Background processes still running; null: the code runner is down"
    )
    runsInFlight: int = Field(description="Template runs queued or running in this sandbox")


class SandboxExtendParams(Params):
    expiresAt: int = Field(ge=0, description="The sandbox's new expiry (epoch seconds)")


class SandboxExtendResult(Result):
    expiresAt: int
