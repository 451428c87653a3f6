"""Per-owner totals of what sandboxes may use — memory and CPU limits added up over an owner's
sandboxes (job sandboxes included), besides their count (host.sandboxes.limits). Checked before
anything is made or taken from the pool, so a refused create leaves nothing behind. Each sandbox counts
with the limits it was started with (a server started again with other limits still counts the old ones
as they are)."""

from __future__ import annotations

from host.config import Settings, size_bytes
from host.sandboxes.models import Caller
from host.sandboxes.registry import SandboxRegistry
from rpc.errors import BoxwrightError, ErrorCode


def _mib(n: int) -> str:
    return f"{n / 1024**2:.0f} MiB"


def check_quota(settings: Settings, registry: SandboxRegistry, caller: Caller) -> None:
    """QUOTA_EXCEEDED when one more sandbox (of the server's size) would take the caller past a total."""
    mine = [r for r in registry if r.owner == caller.owner]
    starting = registry.count(caller.owner) - len(mine)  # creates whose record is not there yet: today's size
    if settings.max_memory_per_owner is not None:
        limit, each = size_bytes(settings.max_memory_per_owner), settings.memory_bytes
        used = sum(r.memory_bytes or each for r in mine) + each * starting
        if used + each > limit:
            raise BoxwrightError(
                ErrorCode.QUOTA_EXCEEDED,
                f"a new sandbox needs {_mib(each)} of memory; your sandboxes hold {_mib(used)} of your "
                f"{_mib(limit)} total",
                details={"resource": "memory", "limitBytes": limit, "usedBytes": used, "requestedBytes": each},
            )
    if settings.max_cpus_per_owner is not None:
        used_cpus = sum(r.cpus or settings.cpus for r in mine) + settings.cpus * starting
        if used_cpus + settings.cpus > settings.max_cpus_per_owner + 1e-9:
            raise BoxwrightError(
                ErrorCode.QUOTA_EXCEEDED,
                f"a new sandbox needs {settings.cpus:g} CPUs; your sandboxes hold {used_cpus:g} of your "
                f"{settings.max_cpus_per_owner:g} total",
                details={
                    "resource": "cpus",
                    "limit": settings.max_cpus_per_owner,
                    "used": used_cpus,
                    "requested": settings.cpus,
                },
            )
