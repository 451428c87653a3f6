"""What the host knows about a sandbox, and the views of it that tools and the CLI return."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from host.agent_client import AgentEndpoint

if TYPE_CHECKING:
    from host.backends.base import ContainerInfo

TrustLevel = Literal["local", "remote"]


@dataclass(frozen=True)
class Caller:
    """Who is calling: the owner sees only their own sandboxes; `session` scopes the default sandbox.
    None: a request that belongs to no session (MCP 2026-07-28 over HTTP has none), so it has no
    default either: without sandboxId it reaches the owner's only sandbox or is told to name one."""

    owner: str
    session: str | None = "default"
    trust: TrustLevel = "local"


class SandboxStatus(StrEnum):
    STARTING = "starting"
    RUNNING = "running"
    PAUSED = "paused"
    EXITED = "exited"
    DESTROYING = "destroying"


@dataclass
class SandboxRecord:
    id: str
    owner: str
    name: str | None
    image: str
    created_at: datetime
    expires_at: datetime
    token: str = field(repr=False)
    runner_secret: str = field(repr=False, default="")
    status: SandboxStatus = SandboxStatus.STARTING
    container_id: str | None = None
    endpoint: AgentEndpoint | None = None
    network: str = "public"  # NetworkMode
    allow_hosts: list[str] = field(default_factory=list)
    workspace_mb: int | None = None  # its size limit; None: none (the server runs without quotas)
    # Its memory and CPU limits as started (0: unknown, a sandbox from before they were labelled): the
    # per-owner totals add these up, and the pool hands out none of other limits than it makes now.
    memory_bytes: int = 0
    cpus: float = 0.0
    last_used: datetime = field(default_factory=lambda: datetime.now(UTC))
    # The job (a template run) this throw-away sandbox was made for; None for ordinary sandboxes and
    # once a job keeps its sandbox (host.sandboxes.jobs).
    job: str | None = None
    # Started for the warm pool (its labels say so for good, claimed or not): what changed at its claim
    # lives in host.sandboxes.overlay.
    pooled: bool = False
    paused_at: datetime | None = None  # when this server paused it (host.sandboxes.freezer)
    image_id: str = ""  # the id of the image its container runs ("": the backend cannot tell)
    removed_because: str | None = None  # why it is being (or was) removed: calls still in it say so

    def attach(self, info: ContainerInfo) -> None:
        """Bind the record to its container (and, once the port is published, the agent's endpoint)."""
        self.container_id = info.container_id
        self.image_id = info.image_id or self.image_id
        if info.agent_url:
            self.endpoint = AgentEndpoint(info.agent_url, self.token)

    def view(self, *, is_default: bool = False) -> SandboxView:
        return SandboxView(
            sandboxId=self.id,
            name=self.name,
            status=self.status.value,
            createdAt=iso(self.created_at),
            expiresAt=iso(self.expires_at),
            image=self.image,
            network=self.network,
            allowHosts=list(self.allow_hosts),
            workspaceMb=self.workspace_mb,
            isDefault=is_default,
        )


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class SandboxView(BaseModel):
    sandboxId: str
    name: str | None = None
    status: str = Field(description="starting | running | paused | exited | destroying")
    createdAt: str
    expiresAt: str = Field(description="When the sandbox is destroyed automatically (TTL)")
    image: str
    workspace: str = "/workspace"
    network: str = Field("public", description="public | none | allowlist (see sandbox_create)")
    allowHosts: list[str] = Field(default_factory=list, description="With network allowlist: what it may reach")
    workspaceMb: int | None = Field(None, description="Size limit of /workspace in MiB (null: none)")
    isDefault: bool = Field(False, description="Used when a tool call omits sandboxId")
