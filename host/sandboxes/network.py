"""A sandbox's network policy, loaded into its namespace by the backend's network guard."""

from __future__ import annotations

import logging

import anyio.to_thread
from pydantic import ValidationError

from host.backends.base import SandboxBackend
from host.sandboxes.models import SandboxRecord
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.network import NetworkPolicy

log = logging.getLogger(__name__)


def policy_of(rec: SandboxRecord, host_addresses: list[str]) -> NetworkPolicy:
    """The record's policy; SANDBOX_START_FAILED when it holds none (labels of another version or
    edited by hand). `public` mode also blocks the engine host's own addresses."""
    try:
        return NetworkPolicy(
            mode=rec.network,  # type: ignore[arg-type]  # validated here, labels may be anything
            allowHosts=rec.allow_hosts,
            hostAddresses=host_addresses,
        )
    except ValidationError as exc:
        raise BoxwrightError(
            ErrorCode.SANDBOX_START_FAILED,
            f"sandbox {rec.id} has no valid network policy in its labels",
            details={"network": rec.network[:40]},
        ) from exc


async def apply_network_policy(backend: SandboxBackend, rec: SandboxRecord, server_id: str) -> None:
    assert rec.container_id is not None
    public = rec.network == "public"
    policy = policy_of(rec, await anyio.to_thread.run_sync(backend.host_addresses) if public else [])
    report = await anyio.to_thread.run_sync(
        backend.apply_network_policy, rec.id, rec.container_id, rec.image, policy, server_id
    )
    log.info("sandbox %s network %s: %s", rec.id, policy.mode, report[:300])
