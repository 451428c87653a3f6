"""A sandbox's network policy, loaded into its namespace by the backend's network guard.

The server adds what callers cannot say: the engine host's own addresses and attached subnets (blocked
in `public` mode, internal for an allowlist) and which internal ranges or hostnames its operator lets
callers allowlist (`internal_allow_hosts`). A caller's literal internal entries are refused here, before
anything starts; hostnames are checked by netguard once resolved.
"""

from __future__ import annotations

import logging

import anyio.to_thread
from pydantic import ValidationError

from host.backends.base import SandboxBackend
from host.config import Settings
from host.sandboxes.models import SandboxRecord
from rpc.errors import BoxwrightError, ErrorCode, FieldError, invalid_fields
from rpc.models.network import NetworkPolicy
from rpc.netblocks import INTERNAL_HINT

log = logging.getLogger(__name__)


async def complete(backend: SandboxBackend, settings: Settings, mode: str, allow_hosts: list[str]) -> NetworkPolicy:
    """The policy netguard gets: the caller's part (`mode`, `allow_hosts`) and the server's. Raises
    SANDBOX_START_FAILED when the caller's part is not a policy (labels of another version or edited by
    hand), INVALID_PARAMETER for literal internal entries the operator did not permit."""
    addresses = await anyio.to_thread.run_sync(backend.host_addresses)
    networks = await anyio.to_thread.run_sync(backend.host_networks)
    try:
        policy = NetworkPolicy(
            mode=mode,  # type: ignore[arg-type]  # validated here, labels may be anything
            allowHosts=allow_hosts,
            hostAddresses=addresses,
            hostNetworks=networks,
            internalAllowed=settings.internal_allow_hosts or [],
        )
    except ValidationError as exc:
        raise BoxwrightError(
            ErrorCode.SANDBOX_START_FAILED,
            "no valid network policy",
            details={"network": mode[:40]},
        ) from exc
    refused = policy.refused_entries()
    if refused:
        raise invalid_fields(
            [FieldError(field=f"allowHosts.{i}", message=f"reaches the internal range {hit}") for i, _, hit in refused],
            f"allowHosts names internal addresses: {', '.join(entry for _, entry, _ in refused)}",
            hint=INTERNAL_HINT,
        )
    return policy


async def apply_network_policy(backend: SandboxBackend, settings: Settings, rec: SandboxRecord, server_id: str) -> None:
    assert rec.container_id is not None
    policy = await complete(backend, settings, rec.network, rec.allow_hosts)
    report = await anyio.to_thread.run_sync(
        backend.apply_network_policy, rec.id, rec.container_id, rec.image, policy, server_id
    )
    log.info("sandbox %s network %s: %s", rec.id, policy.mode, report[:300])
