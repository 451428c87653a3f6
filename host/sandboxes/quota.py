"""Per-owner totals of what sandboxes may use — memory and CPU limits added up over an owner's
sandboxes (job sandboxes included), besides their count (host.sandboxes.limits). Checked before
anything is made or taken from the pool, so a refused create leaves nothing behind."""

from __future__ import annotations

from host.config import Settings
from host.sandboxes.models import Caller
from host.sandboxes.registry import SandboxRegistry
from rpc.errors import BoxwrightError, ErrorCode

_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def size_bytes(size: str) -> int:
    """Bytes of a size as Docker writes them (binary units: 512m, 2g)."""
    value = size.strip().lower()
    unit = value[-1] if value[-1:].isalpha() else ""
    return int(float(value.removesuffix(unit)) * _UNITS[unit])


def _mib(n: int) -> str:
    return f"{n / 1024**2:.0f} MiB"


def check_quota(settings: Settings, registry: SandboxRegistry, caller: Caller) -> None:
    """QUOTA_EXCEEDED when one more sandbox (of the server's size) would take the caller past a total."""
    mine = registry.count(caller.owner)
    if settings.max_memory_per_owner is not None:
        limit, each = size_bytes(settings.max_memory_per_owner), size_bytes(settings.mem_limit)
        used = each * mine
        if used + each > limit:
            raise BoxwrightError(
                ErrorCode.QUOTA_EXCEEDED,
                f"a new sandbox needs {_mib(each)} of memory; your sandboxes hold {_mib(used)} of your "
                f"{_mib(limit)} total",
                details={"resource": "memory", "limitBytes": limit, "usedBytes": used, "requestedBytes": each},
            )
    if settings.max_cpus_per_owner is not None:
        used_cpus = settings.cpus * mine
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
