"""Sandbox lifecycle tools, served by the host itself (no RPC)."""

import time
from typing import Any

from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, model_validator

from host.mcp.forward import SANDBOX_ID_DOC
from host.mcp.registry import Invocation, ToolOutput, ToolSpec
from host.sandboxes.manager import CREATE_STEPS, SandboxManager
from host.sandboxes.models import Caller, SandboxRecord, SandboxView, iso
from rpc.models.base import Params
from rpc.models.network import MAX_ALLOW_HOSTS, NetworkMode, NetworkPolicy


class SandboxCreateArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(
        None, pattern=r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$", description="Optional label to recognise it by"
    )
    ttlSeconds: int | None = Field(
        None, ge=10, le=7 * 24 * 3600, description="Destroy automatically after this many seconds (capped by server)"
    )
    network: NetworkMode | None = Field(
        None,
        description="public (default): internet only — private, link-local (cloud metadata) and the host's "
        "addresses are blocked; none: no network; allowlist: only allowHosts",
    )
    allowHosts: list[str] | None = Field(
        None,
        max_length=MAX_ALLOW_HOSTS,
        description="With network allowlist: hostnames, IPs or CIDR blocks (e.g. pypi.org, 203.0.113.0/24)",
    )
    workspaceMb: int | None = Field(
        None, ge=16, description="Size limit of /workspace in MiB (default and maximum set by the server)"
    )

    @model_validator(mode="after")
    def _policy(self) -> "SandboxCreateArgs":
        if self.network is not None or self.allowHosts:
            self.policy()  # raises ValueError: reported as INVALID_PARAMETER with the reason
        return self

    def policy(self) -> NetworkPolicy | None:
        """The requested policy, or None for the server's default."""
        if self.network is None and not self.allowHosts:
            return None
        return NetworkPolicy(mode=self.network or "allowlist", allowHosts=self.allowHosts or [])


class SandboxCreateResult(SandboxView):
    startupMs: int = Field(description="Time from request to ready")
    fromPool: bool = Field(False, description="Taken from the server's warm pool (started ahead, never used)")


class SandboxDestroyArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sandboxId: str | None = Field(None, min_length=1, max_length=64, description=SANDBOX_ID_DOC)


class SandboxDestroyResult(BaseModel):
    sandboxId: str
    destroyed: bool


class SandboxResumeArgs(Params):  # Params: unknown fields refused, flags only true or false
    sandboxId: str | None = Field(None, min_length=1, max_length=64, description=SANDBOX_ID_DOC)


class SandboxPauseArgs(SandboxResumeArgs):
    force: bool = Field(
        False,
        description="Pause even while tool calls or template runs are going on in the sandbox (they are frozen "
        "mid-call and end at their timeout); without it such a pause answers SANDBOX_BUSY",
    )


class SandboxStateResult(SandboxView):
    changed: bool = Field(description="False when it already was in that state")


class SandboxKeepaliveArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sandboxId: str | None = Field(None, min_length=1, max_length=64, description=SANDBOX_ID_DOC)
    ttlSeconds: int | None = Field(
        None,
        ge=10,
        le=7 * 24 * 3600,
        description="Live this many seconds from now (default: the server's default TTL); never past the "
        "server's maximum lifetime, counted from creation, and never shorter than it already had",
    )


class SandboxKeepaliveResult(SandboxView):
    maxExpiresAt: str = Field(description="The latest a keepalive can push expiresAt to (creation + maximum TTL)")


class SandboxListArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SandboxListResult(BaseModel):
    sandboxes: list[SandboxView]
    defaultSandboxId: str | None = Field(None, description="Used when a tool call omits sandboxId")


def tools(manager: SandboxManager) -> list[ToolSpec[Any]]:
    startup_s = manager.settings.startup_timeout

    async def create(inv: Invocation[SandboxCreateArgs]) -> ToolOutput:
        started = time.monotonic()

        async def progress(step: int, message: str) -> None:
            await inv.ctx.report_progress(step, CREATE_STEPS, message)

        args = inv.args
        rec = await manager.create(
            inv.caller,
            name=args.name,
            ttl_s=args.ttlSeconds,
            network=args.policy(),
            workspace_mb=args.workspaceMb,
            progress=progress,
        )
        view = rec.view(is_default=True).model_dump()
        result = SandboxCreateResult(**view, startupMs=int((time.monotonic() - started) * 1000), fromPool=rec.pooled)
        origin = " (from the warm pool)" if rec.pooled else ""
        return ToolOutput(result, f"sandbox_create ok: {rec.id} {rec.status.value}{origin}", sandbox_id=rec.id)

    async def destroy(inv: Invocation[SandboxDestroyArgs]) -> ToolOutput:
        rec = await manager.destroy(inv.caller, inv.args.sandboxId)
        result = SandboxDestroyResult(sandboxId=rec.id, destroyed=True)
        return ToolOutput(result, f"sandbox_destroy ok: {rec.id}", sandbox_id=rec.id)

    def state_result(tool: str, rec: SandboxRecord, changed: bool, caller: Caller) -> ToolOutput:
        view = rec.view(is_default=manager.implicit_id(caller) == rec.id).model_dump()
        result = SandboxStateResult(**view, changed=changed)
        note = "" if changed else f" (already {rec.status.value})"
        return ToolOutput(result, f"{tool} ok: {rec.id} {rec.status.value}{note}", sandbox_id=rec.id)

    async def pause(inv: Invocation[SandboxPauseArgs]) -> ToolOutput:
        rec, changed = await manager.pause(inv.caller, inv.args.sandboxId, force=inv.args.force)
        return state_result("sandbox_pause", rec, changed, inv.caller)

    async def resume(inv: Invocation[SandboxResumeArgs]) -> ToolOutput:
        rec, changed = await manager.resume(inv.caller, inv.args.sandboxId, inv.deadline)
        return state_result("sandbox_resume", rec, changed, inv.caller)

    async def keepalive(inv: Invocation[SandboxKeepaliveArgs]) -> ToolOutput:
        rec = await manager.keepalive(inv.caller, inv.args.sandboxId, inv.args.ttlSeconds)
        view = rec.view(is_default=manager.implicit_id(inv.caller) == rec.id).model_dump()
        result = SandboxKeepaliveResult(**view, maxExpiresAt=iso(manager.max_expiry(rec)))
        return ToolOutput(result, f"sandbox_keepalive ok: {rec.id} expires {result.expiresAt}", sandbox_id=rec.id)

    async def list_(inv: Invocation[SandboxListArgs]) -> ToolOutput:
        default = manager.implicit_id(inv.caller)  # what a call without sandboxId would act on
        mine = manager.list(inv.caller)
        views = [r.view(is_default=r.id == default) for r in mine]
        return ToolOutput(
            SandboxListResult(sandboxes=views, defaultSandboxId=default), f"sandbox_list ok: {len(views)} sandboxes"
        )

    return [
        ToolSpec(
            name="sandbox_create",
            title="Create a sandbox",
            description=(
                "Create a fresh, isolated sandbox: a Docker container with a workspace (/workspace), Python, "
                "Bash and a Chromium browser. Returns sandboxId and status. It becomes your default sandbox, "
                "so later tools may omit sandboxId. It is destroyed automatically after ttlSeconds. Its network "
                "is 'public' unless you ask for 'none' or an allowlist."
            ),
            input=SandboxCreateArgs,
            output=SandboxCreateResult,
            handler=create,
            # The image may still be building on first use; the manager bounds start-up itself.
            budget_s=lambda _: 1800 + startup_s,
            annotations=ToolAnnotations(destructive_hint=False, open_world_hint=False),
        ),
        ToolSpec(
            name="sandbox_destroy",
            title="Destroy a sandbox",
            description="Destroy a sandbox and everything in it (processes, files, browser). Cannot be undone.",
            input=SandboxDestroyArgs,
            output=SandboxDestroyResult,
            handler=destroy,
            budget_s=lambda _: 60,
            annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False),
        ),
        ToolSpec(
            name="sandbox_pause",
            title="Pause a sandbox",
            description=(
                "Freeze every process of a sandbox: it uses no CPU, and keeps its memory, files, browser tabs and "
                "background processes. Any later tool call on it resumes it first (or call sandbox_resume). Its "
                "TTL keeps running while paused."
            ),
            input=SandboxPauseArgs,
            output=SandboxStateResult,
            handler=pause,
            budget_s=lambda _: 30,
            annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True),
        ),
        ToolSpec(
            name="sandbox_resume",
            title="Resume a paused sandbox",
            description="Thaw a paused sandbox exactly where it was (tool calls on a paused sandbox do this too).",
            input=SandboxResumeArgs,
            output=SandboxStateResult,
            handler=resume,
            budget_s=lambda _: 30,
            annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True),
        ),
        ToolSpec(
            name="sandbox_keepalive",
            title="Keep a sandbox alive",
            description=(
                "Mark a sandbox as in use (resets its idle timer) and extend its TTL to ttlSeconds from now, up to "
                "the server's maximum lifetime (a paused sandbox is resumed). Use it when a long job should outlive "
                "the sandbox's current TTL."
            ),
            input=SandboxKeepaliveArgs,
            output=SandboxKeepaliveResult,
            handler=keepalive,
            budget_s=lambda _: 10,
            annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True),
        ),
        ToolSpec(
            name="sandbox_list",
            title="List your sandboxes",
            description="List your sandboxes with their status, expiry, and which one is the default.",
            input=SandboxListArgs,
            output=SandboxListResult,
            handler=list_,
            budget_s=lambda _: 10,
            annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
        ),
    ]
