"""The warm pool: `BOXWRIGHT_POOL_SIZE` sandboxes started ahead of demand, so that sandbox_create (and
a template run's throw-away sandbox, through host.sandboxes.jobs) hands one out in milliseconds.

- A pooled sandbox is started exactly like a cold one — hardened, its own volume, the network policy
  loaded, the code runner up — but for nobody: its agent holds a token only this server knows and
  accepts one `sandbox.claim`. Claiming it sets its owner, name, TTL (counted from the claim) and job
  and swaps the token for a fresh one; since labels cannot change, those live in the state dir
  (host.sandboxes.overlay). The agent refuses the claim if it ever served a call or its workspace is
  not empty, so a claimed sandbox has never served anyone.
- Its network policy is loaded and its workspace made when it starts: the pool holds sandboxes of the
  server's default network mode (BOXWRIGHT_NETWORK) and workspace size only. Other modes (and
  allowlists, and other workspace sizes) are started cold.
- A pooled sandbox that fails its claim or a health check (the authenticated sandbox.info, the code
  runner connected) is removed and replaced, never handed out.
- Refills yield to live work: at most `pool_concurrency` starts at once, only while no live create is
  in flight, and only `pool_refill_delay` after the last claim, so that the claimant's first calls do
  not share the CPUs with a sandbox starting. With `pool_cpu_shares` (off by default: no measured gain)
  a pooled sandbox also waits at a low CPU weight; its claim gives it the normal weight back, in the
  background (the engine's update takes ~15 ms, more than the rest of the claim) while the agent is
  claimed.
- The pool counts against BOXWRIGHT_MAX_SANDBOXES (the most sandboxes the server runs): it refills only
  while live + pooled < max, a claim moves one from pool to live, and a cold create that would go past
  the maximum first drains a pooled one. So it never keeps a live create out.
- A pooled sandbox of another image id than the configured image's now (the image was rebuilt, or the
  server restarted with another one) is drained and replaced, never handed out or adopted; claimed
  sandboxes of an old image are their owners' and left alone.
- A restarted server adopts the pooled sandboxes an earlier one left (by their labels; reconcile hands
  them here), up to the pool's size; a graceful stop drains the pool (or hands it over with
  BOXWRIGHT_KEEP_ON_EXIT).
- A claim first takes the sandbox through the backend (`try_claim`): on swarm, servers on several hosts
  with one identity may all have adopted the same pooled sandbox (their ownership locks are per host),
  and only the one whose versioned label update lands may claim its agent — a loser that went on to
  the agent would find the pool's token refused and remove the winner's sandbox.
"""

from __future__ import annotations

import concurrent.futures
import logging
import secrets
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import anyio

from host.agent_client import AgentEndpoint
from host.backends.hardening import NORMAL_CPU_SHARES
from host.sandboxes import limits
from host.sandboxes.models import Caller, SandboxRecord, SandboxStatus
from host.sandboxes.overlay import Overlay
from host.sandboxes.registry import Place
from rpc import methods
from rpc.auth import token_sha256
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.network import NetworkPolicy
from rpc.models.sandbox import SandboxClaimParams, SandboxInfoParams

if TYPE_CHECKING:
    from host.sandboxes.manager import SandboxManager

log = logging.getLogger(__name__)

POOL_OWNER = ""  # the owner label of a pooled sandbox before its claim: nobody's
CLAIM_TIMEOUT_S = 3.0
CHECK_TIMEOUT_S = 3.0
RETRY_AFTER_FAILURE_S = 5.0


class WarmPool:
    def __init__(self, manager: SandboxManager) -> None:
        self.manager = manager
        self.settings = manager.settings
        self.size = manager.settings.pool_size
        self._ready: list[SandboxRecord] = []
        # Who takes a pooled sandbox (SandboxBackend.try_claim): this process, among all that share the
        # server's identity — on swarm, servers on several hosts may hold the same pooled sandboxes.
        self.claimant = f"{manager.identity.server_id}/{secrets.token_hex(6)}"
        self._starting: set[str] = set()
        self._wake = anyio.Event()
        self._closing = False
        self._last_claim = float("-inf")  # time.monotonic() of the last claim: refills wait pool_refill_delay
        # The claimed sandboxes' weight is raised off the claim's path; a refill waits for it.
        self._weights = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="pool-weight")
        self._raising: set[concurrent.futures.Future[None]] = set()
        self._image_id: str | None = None  # the configured image's id, once known (see current_image_id)

    # -- what it holds -----------------------------------------------------------------------
    def ready(self) -> list[SandboxRecord]:
        return list(self._ready)

    def holds(self, sandbox_id: str) -> bool:
        return sandbox_id in self._starting or any(r.id == sandbox_id for r in self._ready)

    def serves(self, network: NetworkPolicy, workspace_mb: int | None) -> bool:
        """Whether a sandbox of this network policy and workspace size may come from the pool (see module doc)."""
        return (
            self.size > 0
            and network.mode == self.settings.network
            and not network.allowHosts
            and workspace_mb == limits.workspace_mb(self.settings, None)
        )

    def _deficit(self) -> int:
        """How many more the pool may start: up to its size, and while live + pooled < max_sandboxes."""
        room = self.settings.max_sandboxes - len(self.manager.registry)
        return min(self.size, room) - len(self._ready) - len(self._starting)

    def make_room(self) -> SandboxRecord | None:
        """Before a cold create: when live + pooled would pass max_sandboxes, take one pooled sandbox out (the
        caller removes it) — the pool never keeps a live create out."""
        held = len(self._ready) + len(self._starting)
        if self._ready and len(self.manager.registry) + held >= self.settings.max_sandboxes:
            return self._ready.pop()
        return None

    def poke(self) -> None:
        self._wake.set()

    # -- claim -------------------------------------------------------------------------------
    async def claim(
        self, caller: Caller, place: Place, *, name: str | None, ttl_s: int, job: str | None
    ) -> SandboxRecord | None:
        """A pooled sandbox made `caller`'s (added to the registry in the `place` its create holds), or None
        when the pool has none that passes its claim — then the caller starts one cold."""
        image_id = await self.current_image_id() if self._ready else None
        while self._ready:
            pooled = self._ready.pop(0)
            self._last_claim = time.monotonic()
            self.poke()
            assert pooled.container_id is not None
            if (unlike := self.unlike(pooled, image_id)) is not None:
                log.info("pooled sandbox %s has %s: replaced, not handed out", pooled.id, unlike)
                await self._discard(pooled, unlike)
                continue
            if not await anyio.to_thread.run_sync(self.manager.backend.try_claim, pooled.container_id, self.claimant):
                # Another process of this identity (a server on another host of the swarm) took it first:
                # it is theirs now, so it is neither handed out nor removed here.
                log.info("pooled sandbox %s was taken by another server", pooled.id)
                self.manager.registry.unclaim(pooled.id)
                continue
            self._raise_weight(pooled)
            try:
                return await self._hand_over(pooled, caller, place, name=name, ttl_s=ttl_s, job=job)
            except BoxwrightError as exc:
                log.warning("pooled sandbox %s failed its claim (%s): replaced", pooled.id, exc.code.value)
        return None

    async def _hand_over(
        self, pooled: SandboxRecord, caller: Caller, place: Place, *, name: str | None, ttl_s: int, job: str | None
    ) -> SandboxRecord:
        now = datetime.now(UTC).replace(microsecond=0)
        rec = SandboxRecord(
            id=pooled.id,
            owner=caller.owner,
            name=name,
            image=pooled.image,
            created_at=now,  # its life as its owner sees it (and its TTL) starts at the claim
            expires_at=now + timedelta(seconds=ttl_s),
            token=secrets.token_urlsafe(32),  # fresh: the pool's token dies with the claim
            network=pooled.network,
            allow_hosts=list(pooled.allow_hosts),
            job=job,
            pooled=True,
            container_id=pooled.container_id,
            runner_secret=pooled.runner_secret,
            workspace_mb=pooled.workspace_mb,
            memory_bytes=pooled.memory_bytes,
            cpus=pooled.cpus,
            image_id=pooled.image_id,
        )
        assert pooled.endpoint is not None
        rec.endpoint = AgentEndpoint(pooled.endpoint.base_url, rec.token)
        registry = self.manager.registry
        registry.add(rec, place)
        try:
            # Saved first: should this server die right after the agent took the new token, the next one
            # must know it (if it dies before, the next finds the pool's token refused and removes it).
            self.manager.overlays.save(rec.id, Overlay.of(rec))
            answer = await self.manager.agent.call(
                pooled.endpoint,
                methods.SANDBOX_CLAIM,
                SandboxClaimParams(tokenSha256=token_sha256(rec.token), expiresAt=int(rec.expires_at.timestamp())),
                Deadline.after(CLAIM_TIMEOUT_S),
            )
            if not answer.codeRunnerReady:
                raise BoxwrightError(ErrorCode.CODE_RUNNER_UNAVAILABLE, "the pooled sandbox's code runner is down")
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.manager._remove(rec, "failed its claim", tombstone=False)
            raise
        rec.status = SandboxStatus.RUNNING
        return rec

    def _raise_weight(self, rec: SandboxRecord) -> None:
        """Give a claimed sandbox the normal CPU weight back, off the claim's path (see module doc)."""
        if not self.settings.pool_cpu_shares or rec.container_id is None or self._closing:
            return
        self._raising = {f for f in self._raising if not f.done()}  # only this (the event loop's) thread
        self._raising.add(self._weights.submit(self._set_normal_weight, rec.id, rec.container_id))

    def _set_normal_weight(self, sandbox_id: str, container_id: str) -> None:
        try:
            self.manager.backend.set_cpu_shares(container_id, NORMAL_CPU_SHARES)
        except Exception as exc:  # it runs, only slower under load: not worth failing anything for
            log.warning("could not give sandbox %s the normal CPU weight: %s", sandbox_id, exc)

    async def _yield_to_claims(self) -> None:
        """Before a refill starts a sandbox: wait until the last claim is pool_refill_delay old and the claimed
        sandboxes have their normal CPU weight back."""
        wait = self._last_claim + self.settings.pool_refill_delay - time.monotonic()
        if wait > 0:
            await anyio.sleep(wait)
        self._raising = {f for f in self._raising if not f.done()}
        if self._raising:
            await anyio.to_thread.run_sync(concurrent.futures.wait, list(self._raising))

    async def current_image_id(self) -> str | None:
        """The id of the configured image — once the image provider (which may rebuild it at the server's
        start) has had its say; None when the backend cannot tell. Kept, and read again by each check."""
        if self._image_id is None:
            provider = self.manager.image_provider
            if provider is not None:
                await provider()
            self._image_id = await anyio.to_thread.run_sync(self.manager.backend.image_id, self.settings.image) or ""
        return self._image_id or None

    @staticmethod
    def stale(rec: SandboxRecord, image_id: str | None) -> bool:
        """Started from another image than the configured one now (unknown on either side: not stale)."""
        return bool(image_id and rec.image_id and rec.image_id != image_id)

    def unlike(self, rec: SandboxRecord, image_id: str | None) -> str | None:
        """How a pooled sandbox differs from what the pool makes now, None when it does not: one started
        under other settings (a server before a restart) must never be handed out as the caller asked it."""
        s = self.settings
        if self.stale(rec, image_id):
            return "an old image"
        if rec.network != s.network or rec.allow_hosts:
            return f"network {rec.network}, the pool's is {s.network}"
        if rec.workspace_mb != limits.workspace_mb(s, None):
            return f"a workspace of {rec.workspace_mb} MiB, the pool's is {limits.workspace_mb(s, None)}"
        if (rec.memory_bytes or 0) != s.memory_bytes or abs((rec.cpus or 0.0) - s.cpus) > 1e-9:
            return "other memory or CPU limits"
        return None

    # -- refill and health -------------------------------------------------------------------
    async def run(self) -> None:
        """Forever: keep the pool full, and check the pooled sandboxes every reap interval."""
        if self.size == 0:
            return
        while True:
            await self._refill()
            with anyio.move_on_after(self.settings.reap_interval):
                await self._wake.wait()
            self._wake = anyio.Event()
            try:
                await self.check()
            except Exception:
                log.exception("warm pool check failed")

    async def _refill(self) -> None:
        async def worker() -> None:
            while self._deficit() > 0 and not self._closing:
                await self._yield_to_claims()
                await self.manager.no_live_creates()  # live creates go first
                if self._deficit() <= 0 or self._closing:
                    return
                try:
                    await self.start_one()
                except BoxwrightError as exc:
                    log.warning("warm pool: starting a sandbox failed (%s); retrying later", exc.code.value)
                    await anyio.sleep(RETRY_AFTER_FAILURE_S)
                    return
                except Exception:  # a bug here must not take the server down with the pool
                    log.exception("warm pool: starting a sandbox failed; retrying later")
                    await anyio.sleep(RETRY_AFTER_FAILURE_S)
                    return

        async with anyio.create_task_group() as tg:
            for _ in range(min(self.settings.pool_concurrency, max(0, self._deficit()))):
                tg.start_soon(worker)

    async def start_one(self) -> SandboxRecord:
        s = self.settings
        rec = self.manager.new_record(
            POOL_OWNER,
            name=None,
            ttl_s=s.max_ttl,
            network=NetworkPolicy(mode=s.network),
            pooled=True,
            workspace_mb=limits.workspace_mb(s, None),
        )
        if not self.manager.registry.claim(rec.id):  # pragma: no cover - fresh random id
            raise BoxwrightError(ErrorCode.SANDBOX_START_FAILED, "sandbox id collision")
        self._starting.add(rec.id)
        try:
            await self.manager.start_container(rec, Deadline.after(s.startup_timeout))
        finally:
            self._starting.discard(rec.id)
        if self._closing:
            await self._discard(rec, "server shutdown")
        elif len(self.manager.registry) + len(self._ready) >= self.settings.max_sandboxes:
            await self._discard(rec, "no room under the server's maximum (live sandboxes took it)")
        else:
            self._ready.append(rec)
            log.info("warm pool: sandbox %s ready (%d of %d)", rec.id, len(self._ready), self.size)
        return rec

    async def healthy(self, rec: SandboxRecord) -> str | None:
        """None when the pooled sandbox answers an authenticated call with its code runner up, else why not."""
        if datetime.now(UTC) >= rec.expires_at - timedelta(seconds=self.settings.reap_interval):
            return "its pool lifetime is over"
        if rec.endpoint is None:
            return "no agent endpoint"
        try:
            info = await self.manager.agent.call(
                rec.endpoint, methods.SANDBOX_INFO, SandboxInfoParams(), Deadline.after(CHECK_TIMEOUT_S)
            )
        except BoxwrightError as exc:
            return exc.code.value
        return None if info.codeRunnerReady else "code runner down"

    async def check(self) -> None:
        """Replace every pooled sandbox that fails its health check or runs an old image; drain those past the
        server's maximum (live sandboxes adopted after a restart may have taken their room)."""
        while self._ready and len(self.manager.registry) + len(self._ready) > self.settings.max_sandboxes:
            await self._discard(self._ready.pop(), "no room under the server's maximum")
        if self._image_id is not None:  # known: read again (the image may have been rebuilt meanwhile)
            self._image_id = await anyio.to_thread.run_sync(self.manager.backend.image_id, self.settings.image) or ""
        for rec in list(self._ready):
            why = self.unlike(rec, self._image_id) or await self.healthy(rec)
            if why is not None and rec in self._ready:  # a claim may have taken it meanwhile
                self._ready.remove(rec)
                log.warning("warm pool: sandbox %s is unhealthy (%s): replaced", rec.id, why)
                await self._discard(rec, f"unhealthy in the pool ({why})")
                self.poke()

    async def adopt(self, rec: SandboxRecord) -> bool:
        """After a restart: keep an earlier server's pooled sandbox (its lock is claimed) if the pool has
        room and it is healthy; False means the caller removes it."""
        if self._closing or self._deficit() <= 0:
            return False
        # Not through the image provider: the server is starting and must not wait for a build here. Should
        # that build re-point the image afterwards, the claim and the check see it.
        image_id = await anyio.to_thread.run_sync(self.manager.backend.image_id, self.settings.image)
        if (unlike := self.unlike(rec, image_id)) is not None:
            log.info("warm pool: not adopting %s (%s)", rec.id, unlike)
            return False
        self._starting.add(rec.id)  # counted while checked
        try:
            why = await self.healthy(rec)
        finally:
            self._starting.discard(rec.id)
        if why is not None:
            log.info("warm pool: not adopting %s (%s)", rec.id, why)
            return False
        rec.status = SandboxStatus.RUNNING
        self._ready.append(rec)
        log.info("warm pool: adopted sandbox %s", rec.id)
        return True

    # -- shutdown ----------------------------------------------------------------------------
    async def drain(self) -> None:
        """Graceful stop: remove every pooled sandbox (those still starting remove themselves)."""
        self._closing = True
        self._weights.shutdown(wait=False)
        ready, self._ready = self._ready, []
        async with anyio.create_task_group() as tg:
            for rec in ready:
                tg.start_soon(self._discard, rec, "server shutdown")

    def hand_over(self) -> None:
        """Stop with BOXWRIGHT_KEEP_ON_EXIT: leave the pooled sandboxes for the next server to adopt."""
        self._closing = True
        self._weights.shutdown(wait=False)
        for rec in self._ready:
            self.manager.registry.locks.release(rec.id, forget=False)
        self._ready = []

    async def discard(self, rec: SandboxRecord, reason: str) -> None:
        """Remove a pooled sandbox taken out of the pool (see make_room); the refill replaces it when there is room."""
        await self._discard(rec, reason)

    async def _discard(self, rec: SandboxRecord, reason: str) -> None:
        with anyio.CancelScope(shield=True):
            await self.manager._remove(rec, reason, tombstone=False)
