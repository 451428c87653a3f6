"""After a restart, and on every reaper sweep: find what no live server manages in this namespace
and adopt it when it is healthy, or remove it — so nothing leaks, not even a workspace volume or a
network guard whose sandbox is gone.

What a server may touch (several servers may share one engine and namespace):
- its own sandboxes — labels naming its id with its valid seal (host.identity) and its instance (or one
  of the peers it adopts for, BOXWRIGHT_ADOPT_INSTANCES) — that no live process of it holds the ownership
  lock of: adopted when healthy, removed when dead or expired;
- another server's (or an older version's) only when it is provably dead for good: the container
  has stopped (a sandbox's agent exits on its own once its TTL is over) and its expiry lies more than
  `foreign_grace` seconds in the past. A running sandbox of another server is never touched; one of
  an older version (which does not exit on its own) once its expiry plus the grace has passed. A sandbox
  of this identity made by another instance (a server on another host sharing the identity, whose
  ownership locks this one cannot see) counts as another server's.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Protocol

import anyio.to_thread

from host import labels
from host.backends.base import ContainerInfo, SandboxBackend
from host.backends.hardening import NORMAL_CPU_SHARES
from host.config import Settings
from host.identity import ServerIdentity
from host.sandboxes.models import SandboxRecord, SandboxStatus
from host.sandboxes.network import apply_network_policy
from host.sandboxes.overlay import OverlayStore
from host.sandboxes.pool import POOL_OWNER
from host.sandboxes.readiness import Readiness, status_of
from host.sandboxes.registry import SandboxRegistry
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError
from rpc.methods import SANDBOX_INFO
from rpc.models.sandbox import SandboxInfoParams

if TYPE_CHECKING:
    from host.sandboxes.pool import WarmPool

log = logging.getLogger(__name__)

ADOPT_TIMEOUT_S = 10.0
EPOCH = datetime.fromtimestamp(0, UTC)
STOPPED = ("exited", "dead")


class Remove(Protocol):
    """Removes a sandbox's container, volume and disk; `tombstone`: its owner is told later that it is gone."""

    def __call__(self, rec: SandboxRecord, reason: str, *, tombstone: bool = False) -> Awaitable[None]: ...


class Reconciler:
    def __init__(
        self,
        settings: Settings,
        identity: ServerIdentity,
        backend: SandboxBackend,
        registry: SandboxRegistry,
        readiness: Readiness,
        remove: Remove,
        *,
        overlays: OverlayStore | None = None,
    ) -> None:
        self.settings = settings
        self.identity = identity
        self.backend = backend
        self.registry = registry
        self.readiness = readiness
        self.remove = remove
        self.overlays = overlays
        self.pool: WarmPool | None = None  # set by the manager: adopts unclaimed pooled sandboxes

    async def reconcile(self) -> None:
        """Adopt or remove sandboxes of this namespace that no live server manages (see module doc)."""
        infos = await anyio.to_thread.run_sync(self.backend.list_sandboxes, self.settings.namespace)
        seen: set[str] = set()
        for info in infos:
            seen.add(info.sandbox_id)
            rec = self.registry.record(info.sandbox_id)
            if rec is not None:
                # A listing older than a create or removal under way says nothing of it.
                if rec.status not in (SandboxStatus.STARTING, SandboxStatus.DESTROYING):
                    rec.status = status_of(info)
                continue
            if self.pool is not None and self.pool.holds(info.sandbox_id):
                continue
            if self.mine(info.labels):
                if self.registry.removed_here(info.sandbox_id):
                    # Removed while this listing was made: never adopted again (its container, if the
                    # removal failed, is removed once more).
                    if self.registry.claim(info.sandbox_id):
                        await self.remove(self.record_of(info), "removed already")
                    continue
                if self.claimed_elsewhere(info) and info.status not in STOPPED:
                    continue
                if self.registry.claim(info.sandbox_id):  # else: another live process of this server has it
                    await self._adopt_or_remove(info)
            elif self.dead_for_good(info.labels, running=info.status not in STOPPED) and self.registry.claim(
                info.sandbox_id
            ):
                log.info("removing sandbox %s (%s): stopped and long expired", info.sandbox_id, _by(info))
                await self.remove(self.record_of(info), "another server's, dead for good")
        busy = (SandboxStatus.STARTING, SandboxStatus.DESTROYING)  # their own create or removal is under way
        for rec in [r for r in self.registry if r.id not in seen and r.status not in busy]:
            log.warning("sandbox %s disappeared (removed outside Boxwright)", rec.id)
            rec.status = SandboxStatus.EXITED  # nothing to ask its agent any more
            await self.remove(rec, "removed outside Boxwright: its volume and workspace disk go too", tombstone=True)
        await self._remove_orphan_volumes(seen | {rec.id for rec in self.registry})
        live = seen | {rec.id for rec in self.registry}
        await anyio.to_thread.run_sync(
            self.backend.sweep_leftovers, self.identity.server_id, live, self.settings.foreign_grace
        )

    def mine(self, found: Mapping[str, str]) -> bool:
        """Made by this server's identity, and by its instance or a peer it adopts for (labels.adoptable)."""
        return labels.adoptable(found, self.identity, self.settings.adoptable_instances)

    def dead_for_good(self, found: Mapping[str, str], *, running: bool) -> bool:
        """Whether a sandbox (or volume) this server did not make may be removed by it: long expired, and
        stopped — or running but of an older version, whose agent never exits on its own."""
        lab = labels.decode(found)
        if lab.expires_at is None:
            return False
        if running and lab.server_id is not None:
            return False
        return datetime.now(UTC) >= lab.expires_at + timedelta(seconds=self.settings.foreign_grace)

    def record_of(self, info: ContainerInfo) -> SandboxRecord:
        """The record a container's labels describe (its token derived from this server's secret)."""
        lab = labels.decode(info.labels)
        rec = SandboxRecord(
            id=info.sandbox_id,
            owner=lab.owner or "?",
            name=lab.name,
            image=lab.image or "",
            created_at=lab.created_at or EPOCH,
            expires_at=lab.expires_at or EPOCH,
            token=self.identity.sandbox_token(self.settings.namespace, info.sandbox_id),
            runner_secret=self.identity.runner_secret(self.settings.namespace, info.sandbox_id),
            # Sandboxes from before network modes carry no label: they get the server's default.
            network=lab.network or self.settings.network,
            allow_hosts=list(lab.allow_hosts),
            job=lab.job,
            workspace_mb=lab.workspace_mb,
            memory_bytes=lab.memory_bytes or 0,
            cpus=lab.cpus or 0.0,
            pooled=lab.pooled,
        )
        # A pooled sandbox that was claimed (who has it now, with which token) or one whose TTL was
        # extended: what changed since its labels were written is in its overlay.
        overlay = self.overlays.load(rec.id) if self.overlays is not None else None
        if overlay is not None:
            overlay.apply(rec)
        elif lab.pooled:
            rec.owner = POOL_OWNER
        rec.attach(info)
        return rec

    def claimed_elsewhere(self, info: ContainerInfo) -> bool:
        """A pooled sandbox another process took (SandboxBackend.try_claim) whose claim this state dir does
        not know: a server of this identity on another host has it (its overlay is there). Once stopped (its
        agent ends it at its expiry) it is removed like any dead sandbox of ours."""
        return bool(info.labels.get(labels.CLAIMED_BY)) and (
            self.overlays is None or self.overlays.load(info.sandbox_id) is None
        )

    def unclaimed(self, rec: SandboxRecord) -> bool:
        """A pooled sandbox nobody has claimed yet."""
        return rec.pooled and rec.owner == POOL_OWNER

    async def _adopt_or_remove(self, info: ContainerInfo) -> None:
        rec = self.record_of(info)
        reason = ""
        if info.status == "paused" and not self.unclaimed(rec) and rec.endpoint is not None:
            if datetime.now(UTC) < rec.expires_at:
                # Paused by an earlier server (the engine keeps the state): adopted as paused, checked on
                # resume. Only a fully started sandbox is ever paused, so its policy is in place.
                rec.status, rec.paused_at = SandboxStatus.PAUSED, datetime.now(UTC)
                self.registry.add(rec)
                log.info("adopted paused sandbox %s of owner %s", rec.id, rec.owner)
                return
            reason = "TTL expired"
        elif info.status != "running":
            reason = f"container {info.status}"
        elif datetime.now(UTC) >= rec.expires_at:
            reason = "TTL expired"
        elif rec.endpoint is None:
            reason = "no published agent port"
        elif self.unclaimed(rec):
            if self.pool is None or not await self.pool.adopt(rec):
                reason = "pooled, and the warm pool has no room for it (or it is unhealthy, or of an old image)"
            else:
                return
        else:
            self.registry.add(rec)
            try:
                # Loaded again: the server that made it may have died before its policy was in place.
                await apply_network_policy(self.backend, self.settings, rec, self.identity.server_id)
                await self.readiness.ensure_runner(rec, Deadline.after(ADOPT_TIMEOUT_S))
                if rec.pooled:  # claimed: a server that died mid-claim may have left the agent the pool's token
                    await self.readiness.agent.call(
                        rec.endpoint, SANDBOX_INFO, SandboxInfoParams(), Deadline.after(ADOPT_TIMEOUT_S)
                    )
                    # ... or before its claim gave it the normal CPU weight back (host.sandboxes.pool).
                    if self.settings.pool_cpu_shares and rec.container_id:
                        await anyio.to_thread.run_sync(self.backend.set_cpu_shares, rec.container_id, NORMAL_CPU_SHARES)
            except BoxwrightError as exc:
                reason = f"unhealthy ({exc.code.value})"
        if reason:
            log.info("removing orphan sandbox %s: %s", rec.id, reason)
            await self.remove(rec, reason)
            return
        rec.status = SandboxStatus.RUNNING
        log.info("adopted sandbox %s of owner %s (expires %s)", rec.id, rec.owner, rec.expires_at.isoformat())

    async def _remove_orphan_volumes(self, live: set[str]) -> None:
        orphans = await anyio.to_thread.run_sync(self.backend.list_orphan_volumes, self.settings.namespace, live)
        for vol, found in orphans:
            sid = found.get(labels.SANDBOX, "")
            ours = self.mine(found)
            # Another server's volume may belong to a sandbox it is creating right now: only long-expired ones.
            if (ours or self.dead_for_good(found, running=False)) and self.registry.claim(sid):
                log.info("removing orphan workspace volume %s", vol)
                await anyio.to_thread.run_sync(self.backend.remove_volume, vol)
                self.registry.unclaim(sid)


def _by(info: ContainerInfo) -> str:
    server = info.labels.get(labels.SERVER)
    return f"of server {server}" if server else "of an older version"
