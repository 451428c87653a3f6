"""SandboxManager: the one service layer under every entry point (MCP tools, CLI, tests).

It creates, resolves, calls and destroys sandboxes, and expires them on their TTL. The parts it is
made of: `registry` (what this server manages, owner isolation, defaults), `limits`, `labels` (the
durable record on each container), `network` (the policy the backend's guard loads), `readiness`
(health polling, the code runner, what became of a silent sandbox) and `reconcile` (adopting or
removing what an earlier server left behind). A backend (`host.backends.base.SandboxBackend`) is
where sandboxes physically run.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import anyio
import anyio.to_thread

from host import labels
from host.agent_client import AgentClient
from host.backends.base import SandboxBackend, StartSpec
from host.config import Settings
from host.identity import ServerIdentity, load_or_create
from host.sandboxes import limits
from host.sandboxes.activity import Activity
from host.sandboxes.freezer import Freezer
from host.sandboxes.limits import check_capacity, ttl_seconds
from host.sandboxes.locks import OwnershipLocks
from host.sandboxes.models import Caller, SandboxRecord, SandboxStatus
from host.sandboxes.network import apply_network_policy
from host.sandboxes.network import complete as complete_policy
from host.sandboxes.overlay import Overlay, OverlayStore
from host.sandboxes.pool import WarmPool
from host.sandboxes.readiness import Readiness, diagnose, status_of
from host.sandboxes.reconcile import Reconciler
from host.sandboxes.registry import SandboxRegistry
from rpc import methods
from rpc.agent import agent_env
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, Category, ErrorCode
from rpc.methods import Method, P, R
from rpc.models.network import NetworkPolicy
from rpc.models.sandbox import SandboxExtendParams

log = logging.getLogger(__name__)

ImageProvider = Callable[[], Awaitable[str]]
Progress = Callable[[int, str], Awaitable[None]]  # (step 1..CREATE_STEPS, message)
CREATE_STEPS = 4
LOG_TAIL_CHARS = 2000
EXTEND_TIMEOUT_S = 10.0
# How long listeners may take over a sandbox about to be removed (e.g. publishing a login profile).
REMOVING_GRACE_S = 10.0
# How long a call into a sandbox being removed waits for the removal before answering that it is gone.
REMOVAL_WAIT_S = 30.0


class CallListener(Protocol):
    """Told about every call into a sandbox and every sandbox about to go (login profiles publish their
    sessions then; the live view shows when the agent is acting). Must not raise."""

    def call_started(self, rec: SandboxRecord, method: Method[Any, Any], params: Any) -> None: ...

    def call_ended(self, rec: SandboxRecord, method: Method[Any, Any], params: Any) -> None: ...

    async def sandbox_removing(self, rec: SandboxRecord, *, reachable: bool) -> None:
        """`rec` is about to go; `reachable`: its agent may still answer (it was running or paused)."""
        ...


def _destroyed_under_the_call(rec: SandboxRecord, details: Mapping[str, Any]) -> BoxwrightError:
    """A call into a sandbox that is being removed (destroyed by its owner, its TTL, the idle timeout)."""
    return BoxwrightError(
        ErrorCode.SANDBOX_NOT_FOUND,
        f"sandbox {rec.id} was destroyed while the call was in progress ({rec.removed_because})",
        hint="call sandbox_create for a new sandbox",
        details={**details, "reason": "destroyed"},
    )


def _boxwright_error_in(exc: BaseException) -> BoxwrightError | None:
    """`exc` itself, or the first BoxwrightError of a task group's exception group."""
    if isinstance(exc, BoxwrightError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        return next((found for e in exc.exceptions if (found := _boxwright_error_in(e)) is not None), None)
    return None


class SandboxManager:
    def __init__(
        self,
        settings: Settings,
        backend: SandboxBackend,
        *,
        image_provider: ImageProvider | None = None,
        agent: AgentClient | None = None,
        identity: ServerIdentity | None = None,
    ) -> None:
        self.settings = settings
        self.identity = identity or load_or_create(settings.state_dir)
        self.backend = backend
        self.agent = agent or AgentClient()
        self._image_provider = image_provider
        self.registry = SandboxRegistry(OwnershipLocks(settings.state_dir, settings.namespace))
        self.readiness = Readiness(backend, self.agent)
        self.overlays = OverlayStore(settings.state_dir, settings.namespace)
        self.reconciler = Reconciler(
            settings, self.identity, backend, self.registry, self.readiness, self._remove_orphan, overlays=self.overlays
        )
        self.pool = WarmPool(self)
        self.freezer = Freezer(backend, self.readiness)
        self.activity = Activity(self.agent)
        self.reconciler.pool = self.pool
        self.creating = 0  # live creates in flight (the pool's refill waits for them)
        self._no_creates = anyio.Event()
        self._no_creates.set()
        self.listeners: list[CallListener] = []
        # Removals under way, by sandbox id: a second remover (the reaper, a call's diagnosis, the owner's
        # destroy) waits for the first instead of racing it, and is answered once the sandbox is gone.
        self._removals: dict[str, anyio.Event] = {}

    @property
    def image_provider(self) -> ImageProvider | None:
        return self._image_provider

    # -- lifecycle of the manager ------------------------------------------------------------
    async def start(self) -> None:
        await anyio.to_thread.run_sync(self.backend.ping)
        await self.reconcile()

    async def close(self) -> None:
        """On server shutdown: destroy what we manage (the warm pool drained too), or hand it over
        (release locks) if keeping."""
        if self.settings.keep_on_exit:
            self.pool.hand_over()
            self.registry.hand_over()
        else:
            with anyio.CancelScope(shield=True):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self.pool.drain)
                    for rec in self.registry:
                        tg.start_soon(self._remove, rec, "server shutdown")
                await anyio.to_thread.run_sync(self.backend.remove_network_if_unused)
        await self.agent.aclose()

    # -- queries -----------------------------------------------------------------------------
    def list(self, caller: Caller) -> list[SandboxRecord]:
        return self.registry.owned_by(caller)

    def default_id(self, caller: Caller) -> str | None:
        return self.registry.default_id(caller)

    def implicit_id(self, caller: Caller) -> str | None:
        return self.registry.implicit_id(caller)

    def resolve(self, caller: Caller, sandbox_id: str | None) -> SandboxRecord:
        """An explicit id, else the session's default sandbox, else the owner's only sandbox."""
        return self.registry.resolve(caller, sandbox_id)

    # -- create / destroy --------------------------------------------------------------------
    async def create(
        self,
        caller: Caller,
        *,
        name: str | None = None,
        ttl_s: int | None = None,
        network: NetworkPolicy | None = None,
        workspace_mb: int | None = None,
        deadline: Deadline | None = None,
        progress: Progress | None = None,
        job: str | None = None,
    ) -> SandboxRecord:
        """A new sandbox of `caller`, which becomes their default — unless it is a throw-away sandbox
        for `job` (see host.sandboxes.jobs), labelled so that a restarted server can tell. Taken from
        the warm pool when it has one of the asked network mode, else started cold."""

        async def step(n: int, message: str) -> None:
            if progress is not None:
                await progress(n, message)

        s = self.settings
        check_capacity(s, self.registry, caller)
        ttl = ttl_seconds(s, ttl_s)
        workspace = limits.workspace_mb(s, workspace_mb)
        network = network or NetworkPolicy(mode=s.network)
        place = self.registry.hold_place(caller.owner)  # counted by concurrent creates from here on
        started = time.monotonic()
        self._begin_create()
        try:
            # Before anything starts: a caller may not allowlist internal addresses without the operator's say.
            await complete_policy(self.backend, s, network.mode, network.allowHosts)
            rec = None
            if self.pool.serves(network, workspace):
                rec = await self.pool.claim(caller, place, name=name, ttl_s=ttl, job=job)
            if rec is None:
                if (room := self.pool.make_room()) is not None:  # the pool counts against max_sandboxes
                    await self.pool.discard(room, "making room for a live sandbox under the server's maximum")
                rec = self.new_record(
                    caller.owner, name=name, ttl_s=ttl, network=network, job=job, workspace_mb=workspace
                )
                if not self.registry.claim(rec.id):  # pragma: no cover - fresh random id
                    raise BoxwrightError(ErrorCode.SANDBOX_START_FAILED, "sandbox id collision; retry")
                self.registry.add(rec, place)
                await self.start_container(rec, deadline or Deadline.after(s.startup_timeout), step)
            else:
                await step(CREATE_STEPS, "ready (from the warm pool)")
        finally:
            self.registry.free_place(place)
            self._end_create()
        rec.last_used = datetime.now(UTC)  # idle from when it is handed over, not from when its start began
        if job is None:
            self.registry.make_default(caller, rec.id)
        log.info(
            "sandbox created id=%s owner=%s container=%s endpoint=%s ttl=%ss in %.2fs%s%s",
            rec.id,
            caller.owner,
            (rec.container_id or "")[:12],
            rec.endpoint.base_url if rec.endpoint else "-",
            ttl,
            time.monotonic() - started,
            " from the pool" if rec.pooled else "",
            f" for job {job}" if job else "",
        )
        return rec

    def _begin_create(self) -> None:
        self.creating += 1
        if self.creating == 1:
            self._no_creates = anyio.Event()

    def _end_create(self) -> None:
        self.creating -= 1
        if self.creating == 0:
            self._no_creates.set()

    async def no_live_creates(self) -> None:
        """Wait until no sandbox_create (or job sandbox) is in flight."""
        while self.creating:
            await self._no_creates.wait()

    def new_record(
        self,
        owner: str,
        *,
        name: str | None,
        ttl_s: int,
        network: NetworkPolicy,
        job: str | None = None,
        pooled: bool = False,
        workspace_mb: int | None = None,
    ) -> SandboxRecord:
        """The record of a sandbox about to be started, with a fresh id and its token (derived)."""
        now = datetime.now(UTC).replace(microsecond=0)
        sid = "sbx_" + secrets.token_hex(6)
        ns = self.settings.namespace
        return SandboxRecord(
            id=sid,
            owner=owner,
            name=name,
            image=self.settings.image,
            created_at=now,
            expires_at=now + timedelta(seconds=ttl_s),
            token=self.identity.sandbox_token(ns, sid),
            runner_secret=self.identity.runner_secret(ns, sid),
            network=network.mode,
            allow_hosts=list(network.allowHosts),
            job=job,
            pooled=pooled,
            workspace_mb=workspace_mb,
            memory_bytes=self.settings.memory_bytes,
            cpus=self.settings.cpus,
        )

    async def start_container(self, rec: SandboxRecord, deadline: Deadline, step: Progress | None = None) -> None:
        """Start `rec`'s container (its lock is claimed) and wait until it is ready; on any failure it is
        removed again and the error says why."""

        async def report(n: int, message: str) -> None:
            if step is not None:
                await step(n, message)

        s = self.settings
        try:
            if self._image_provider is not None:  # may build the image on first use
                await report(1, "checking the sandbox image (built on first use)")
                rec.image = await self._image_provider()
            await report(2, "starting the container")
            prelaunch = rec.pooled and s.pool_browser
            env = agent_env(
                rec.token,
                rec.runner_secret,
                expires_at=int(rec.expires_at.timestamp()),
                pooled=rec.pooled,
                browser_prelaunch=prelaunch,
            )
            spec = StartSpec(
                sandbox_id=rec.id,
                image=rec.image,
                labels=labels.encode(rec, s.namespace, self.identity, s.instance),
                env=env,
                server_id=self.identity.server_id,
                workspace_mb=rec.workspace_mb,
                # Waiting in the pool at a low CPU weight: its start yields the CPUs to live sandboxes.
                cpu_shares=(s.pool_cpu_shares or None) if rec.pooled else None,
            )
            rec.attach(await anyio.to_thread.run_sync(self.backend.start, spec))
            await report(3, "applying the network policy; waiting for the agent and the code runner")
            # A fresh container has no code runner yet; it needs nothing from the agent, so both boot
            # in parallel instead of one after the other, while the network guard loads the policy.
            # Nothing untrusted runs before all three are done: the caller gets the id only then.
            async with anyio.create_task_group() as tg:
                tg.start_soon(apply_network_policy, self.backend, s, rec, self.identity.server_id)
                await self.readiness.start_runner(rec, deadline)
            await report(4, "ready")
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                logs = (
                    await anyio.to_thread.run_sync(self.backend.logs_tail, rec.container_id) if rec.container_id else ""
                )
                await self._remove(rec, "failed to start", tombstone=False)
            failed = _boxwright_error_in(exc)
            if failed is not None:
                # A caller error (e.g. an allowlisted name resolving to an internal address) needs no logs.
                if logs and failed.code.category is not Category.CALLER:
                    raise failed.with_details(agentLogTail=logs[-LOG_TAIL_CHARS:]) from exc
                if failed is exc:
                    raise
                raise failed from exc
            if isinstance(exc, Exception):
                raise BoxwrightError(
                    ErrorCode.SANDBOX_START_FAILED,
                    f"sandbox failed to start: {type(exc).__name__}: {exc}",
                    details={"agentLogTail": logs[-LOG_TAIL_CHARS:]},
                ) from exc
            raise
        rec.status = SandboxStatus.RUNNING

    async def destroy(
        self, caller: Caller, sandbox_id: str | None, *, reason: str = "destroyed by owner"
    ) -> SandboxRecord:
        rec = self.resolve(caller, sandbox_id)
        await self._remove(rec, reason)
        return rec

    async def keepalive(self, caller: Caller, sandbox_id: str | None, ttl_s: int | None = None) -> SandboxRecord:
        """Count the sandbox as used now and let it live `ttl_s` (default: the default TTL) from now, never
        past its creation + the maximum TTL and never shorter than it already had. Labels cannot change,
        so the new expiry is kept in its overlay (read back after a restart). The agent, which ends its
        sandbox itself at the expiry it knows, is told first — a paused sandbox is resumed for that."""
        rec = self.resolve(caller, sandbox_id)
        now = datetime.now(UTC).replace(microsecond=0)
        ceiling = self.max_expiry(rec)
        wanted = now + timedelta(seconds=ttl_seconds(self.settings, ttl_s))
        expires_at = max(rec.expires_at, min(wanted, ceiling))
        extend = SandboxExtendParams(expiresAt=int(expires_at.timestamp()))
        await self.call(caller, rec.id, methods.SANDBOX_EXTEND, extend, Deadline.after(EXTEND_TIMEOUT_S))
        rec.expires_at = expires_at
        self.overlays.save(rec.id, Overlay.of(rec))
        return rec

    def max_expiry(self, rec: SandboxRecord) -> datetime:
        return rec.created_at + timedelta(seconds=self.settings.max_ttl)

    # -- pause / resume (host.sandboxes.freezer) --------------------------------------------
    async def pause(self, caller: Caller, sandbox_id: str | None, *, force: bool = False) -> tuple[SandboxRecord, bool]:
        """Freeze the caller's sandbox; (record, False) when it already was paused. Refused while the
        server still waits on work in it (a frozen call would only end at its timeout), unless forced."""
        rec = self.resolve(caller, sandbox_id)
        if not force and rec.status is SandboxStatus.RUNNING and (why := self.activity.hosts_work(rec)):
            raise BoxwrightError(
                ErrorCode.SANDBOX_BUSY,
                f"sandbox {rec.id} is busy ({why}): not paused",
                details={"sandboxId": rec.id, "busy": why},
            )
        return rec, await self.freezer.pause(rec, "by its owner" + (" (forced)" if force else ""))

    async def resume(
        self, caller: Caller, sandbox_id: str | None, deadline: Deadline | None = None
    ) -> tuple[SandboxRecord, bool]:
        """Thaw the caller's sandbox; (record, False) when it was not paused."""
        rec = self.resolve(caller, sandbox_id)
        return rec, await self.freezer.resume(rec, deadline)

    async def wake(self, caller: Caller, sandbox_id: str | None, deadline: Deadline | None = None) -> bool:
        """Before a call: resume the sandbox if Boxwright paused it (one paused behind its back is left
        alone); True when it did."""
        rec = self.resolve(caller, sandbox_id)
        if rec.status is SandboxStatus.PAUSED and rec.paused_at is not None:
            return await self.freezer.resume(rec, deadline)
        return False

    # -- calls into a sandbox ----------------------------------------------------------------
    async def call(
        self,
        caller: Caller,
        sandbox_id: str | None,
        method: Method[P, R],
        params: P,
        deadline: Deadline,
        *,
        wake: bool = True,
    ) -> tuple[SandboxRecord, R]:
        """The method's result from the sandbox's agent; a sandbox this server paused is resumed first
        (tools that want to say so call `wake` before) — unless `wake` is False: the server's own polling
        (a run's status) must not undo a pause its owner asked for; such a call waits out RPC_TIMEOUT."""
        rec = self.resolve(caller, sandbox_id)
        if wake:
            await self.wake(caller, rec.id, deadline)
        if rec.removed_because is not None:
            await self._removed(rec, deadline)
            raise _destroyed_under_the_call(rec, {"sandboxId": rec.id})
        # A sandbox paused behind our back is still tried (the status may be stale); it ends in RPC_TIMEOUT.
        if rec.status not in (SandboxStatus.RUNNING, SandboxStatus.PAUSED) or rec.endpoint is None:
            not_running = BoxwrightError(
                ErrorCode.SANDBOX_NOT_RUNNING,
                f"sandbox {rec.id} is {rec.status.value}",
                details={"sandboxId": rec.id, "status": rec.status.value},
            )
            if rec.status is not SandboxStatus.EXITED or rec.endpoint is None:
                raise not_running
            # Exited when the reaper last looked (maybe mid-removal behind our back): the engine is asked
            # now, so a container gone for good is answered as gone, what it left removed first.
            failed = await self._diagnose(rec, not_running, deadline)
            if rec.status is not SandboxStatus.RUNNING:
                raise failed
        rec.last_used = datetime.now(UTC)
        for listener in self.listeners:
            listener.call_started(rec, method, params)
        with self.activity.call(rec):
            try:
                return await self._call(rec, method, params, deadline)
            finally:
                rec.last_used = datetime.now(UTC)  # a long call counts as use until it ends
                for listener in self.listeners:
                    listener.call_ended(rec, method, params)

    async def _call(
        self, rec: SandboxRecord, method: Method[P, R], params: P, deadline: Deadline
    ) -> tuple[SandboxRecord, R]:
        assert rec.endpoint is not None
        try:
            try:
                return rec, await self.agent.call(rec.endpoint, method, params, deadline)
            except BoxwrightError as exc:
                if exc.code is not ErrorCode.CODE_RUNNER_UNAVAILABLE or exc.details.get("sent") is not False:
                    raise  # e.g. RUN_OUTCOME_UNKNOWN: it may have run, so it must not run twice
                # No code runner (e.g. killed by user code) and the call never reached one: start a
                # new runner and retry once.
                log.warning("code runner of %s is down; restarting it", rec.id)
                await self.readiness.start_runner(rec, deadline)
                return rec, await self.agent.call(rec.endpoint, method, params, deadline)
        except BoxwrightError as exc:
            failed = exc.with_details(sandboxId=rec.id)
            if exc.code.category is Category.SANDBOX:  # the sandbox itself failed: ask the engine how
                raise await self._diagnose(rec, failed, deadline) from exc
            raise failed from exc

    async def _diagnose(self, rec: SandboxRecord, exc: BoxwrightError, deadline: Deadline) -> BoxwrightError:
        if rec.removed_because is not None:  # removed under the call: answered once it is gone
            await self._removed(rec, deadline)
            return _destroyed_under_the_call(rec, exc.details)
        info = await anyio.to_thread.run_sync(self.backend.inspect, rec.container_id or "")
        if info is None:
            # Removed behind our back: what it leaves (its volume, workspace disk, overlay) goes now too
            # (joined if the reaper or a concurrent call's diagnosis is removing it already).
            rec.status = SandboxStatus.EXITED
            await self._remove(rec, "its container was removed outside Boxwright")
        else:
            rec.status = status_of(info)
        return diagnose(rec, exc, info)

    async def _removed(self, rec: SandboxRecord, deadline: Deadline) -> None:
        """Wait (within the call's time, at most REMOVAL_WAIT_S) for a removal under way to finish, so
        an answer that the sandbox is gone is given once it is."""
        done = self._removals.get(rec.id)
        if done is not None:
            with anyio.move_on_after(min(REMOVAL_WAIT_S, deadline.remaining())):
                await done.wait()

    # -- housekeeping ------------------------------------------------------------------------
    async def reap(self) -> None:
        """Expire sandboxes past their TTL and notice containers that died or were removed."""
        now = datetime.now(UTC)
        idle = self.settings.idle_timeout
        for rec in self.registry:
            if rec.status is SandboxStatus.STARTING:
                continue
            if now >= rec.expires_at:  # the hard limit: paused or busy, it goes
                await self._remove(rec, "TTL expired")
            elif idle and rec.status is SandboxStatus.RUNNING and (now - rec.last_used).total_seconds() > idle:
                await self._on_idle(rec)
        await self.reconcile()

    async def _on_idle(self, rec: SandboxRecord) -> None:
        """No call for the idle timeout: unless work still runs in it (host.sandboxes.activity), it is
        paused (BOXWRIGHT_IDLE_ACTION=pause) or removed. A paused sandbox is never idle-removed: only
        its TTL ends it."""
        busy = await self.activity.busy(rec)
        if busy is not None:
            rec.last_used = datetime.now(UTC)  # counts as used now: idle again only a full timeout later
            log.info("sandbox %s is idle but busy (%s): kept", rec.id, busy)
            return
        if rec.status is not SandboxStatus.RUNNING:
            return
        if self.settings.idle_action == "pause":
            try:
                await self.freezer.pause(rec, "idle timeout")
            except BoxwrightError as exc:
                log.warning("could not pause idle sandbox %s: %s", rec.id, exc.message)
        else:
            await self._remove(rec, "idle timeout")

    async def reconcile(self) -> None:
        """Adopt or remove sandboxes of this namespace that no live server manages."""
        await self.reconciler.reconcile()

    async def run_reaper(self) -> None:
        """Forever: reap every reap_interval seconds. Errors are logged, never fatal."""
        while True:
            await anyio.sleep(self.settings.reap_interval)
            try:
                await self.reap()
            except Exception:
                log.exception("reaper sweep failed")

    async def _remove(self, rec: SandboxRecord, reason: str, *, tombstone: bool = True) -> None:
        under_way = self._removals.get(rec.id)
        if under_way is not None:  # another remover got there first: done when it is
            await under_way.wait()
            return
        self._removals[rec.id] = done = anyio.Event()
        try:
            await self._remove_now(rec, reason, tombstone=tombstone)
        finally:
            del self._removals[rec.id]
            done.set()

    async def _remove_now(self, rec: SandboxRecord, reason: str, *, tombstone: bool) -> None:
        was_up = rec.status in (SandboxStatus.RUNNING, SandboxStatus.PAUSED)
        rec.status = SandboxStatus.DESTROYING
        rec.removed_because = rec.removed_because or reason
        with anyio.CancelScope(shield=True):
            if self.listeners:  # told also of a sandbox that is gone already: they hold state for it
                with anyio.move_on_after(REMOVING_GRACE_S):
                    for listener in self.listeners:
                        await listener.sandbox_removing(rec, reachable=was_up)
            try:
                await anyio.to_thread.run_sync(self.backend.remove, rec.id, rec.container_id)
            finally:
                self.registry.forget(rec, tombstone=tombstone)
                self.overlays.delete(rec.id)
                self.freezer.forget(rec)
        log.info("sandbox %s removed (%s)", rec.id, reason)

    async def _remove_orphan(self, rec: SandboxRecord, reason: str, *, tombstone: bool = False) -> None:
        await self._remove(rec, reason, tombstone=tombstone)
