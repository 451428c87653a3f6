"""How many sandboxes a server and an owner may have, and how long one may live."""

from __future__ import annotations

from host.config import Settings
from host.sandboxes.models import Caller
from host.sandboxes.quota import check_quota
from host.sandboxes.registry import SandboxRegistry
from rpc.errors import BoxwrightError, ErrorCode, invalid_parameter


def check_capacity(settings: Settings, registry: SandboxRegistry, caller: Caller) -> None:
    """SANDBOX_LIMIT_REACHED when the server, or this caller, has no room for one more sandbox;
    QUOTA_EXCEEDED when it would take the caller past their memory or CPU total."""
    if registry.count() >= settings.max_sandboxes:
        raise BoxwrightError(
            ErrorCode.SANDBOX_LIMIT_REACHED,
            f"this server runs its maximum of {settings.max_sandboxes} sandboxes",
            details={"limit": settings.max_sandboxes, "scope": "server"},
        )
    mine = registry.count(caller.owner)
    if mine >= settings.max_sandboxes_per_owner:
        raise BoxwrightError(
            ErrorCode.SANDBOX_LIMIT_REACHED,
            f"you already have {mine} sandboxes (limit {settings.max_sandboxes_per_owner})",
            details={"limit": settings.max_sandboxes_per_owner, "scope": "owner"},
        )
    check_quota(settings, registry, caller)


def workspace_mb(settings: Settings, requested: int | None) -> int | None:
    """The workspace size limit a new sandbox gets (None when the server enforces none); INVALID_PARAMETER
    above the server's maximum, and for any size asked for where no limit is enforced (swarm, or quota off)."""
    if settings.backend == "swarm":
        # A swarm task's node is chosen after its volumes are described, so no loop-device filesystem can
        # be made for it first (docs/fleet.md): a size that would only be echoed back is refused.
        if requested is not None:
            raise invalid_parameter(
                "workspaceMb",
                "workspaces have no size limit on this server (Docker Swarm backend)",
                hint="leave workspaceMb out: the workspace is bounded only by the node's disk",
                backend="swarm",
            )
        return None
    if settings.workspace_quota == "off":
        # Echoing a size that nothing enforces would let a caller believe their sandbox is bounded.
        if requested is not None:
            raise invalid_parameter(
                "workspaceMb",
                f"workspaces have no size limit on this server ({settings.env_name('workspace_quota')}=off)",
                hint="leave workspaceMb out: the workspace is bounded only by the host's disk",
            )
        return None
    if requested is not None and requested > settings.max_workspace_mb:
        raise invalid_parameter(
            "workspaceMb",
            f"at most {settings.max_workspace_mb} MiB on this server",
            hint=f"ask for less, or ask the operator to raise {settings.env_name('max_workspace_mb')}",
        )
    return requested or settings.workspace_mb


def ttl_seconds(settings: Settings, requested: int | None) -> int:
    """The TTL a new sandbox gets: the one asked for (or the default), capped by the server's maximum."""
    return min(requested or settings.default_ttl, settings.max_ttl)
