"""SandboxManager: the one service layer under every entry point (MCP tools, CLI, tests).

It creates, resolves, calls and destroys sandboxes; enforces limits and owner isolation; expires
sandboxes on their TTL; and after a restart finds what an earlier server left behind (by labels
and ownership locks) and adopts or removes it, so nothing leaks.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import anyio
import anyio.to_thread
from pydantic import ValidationError
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_delay, wait_fixed

from host import labels
from host.agent_client import AgentClient, AgentEndpoint
from host.backends.base import ContainerInfo, SandboxBackend, StartSpec
from host.config import Settings
from host.sandboxes.locks import OwnershipLocks
from host.sandboxes.models import Caller, SandboxRecord, SandboxStatus
from rpc.agent import agent_env
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, Category, ErrorCode
from rpc.methods import Method, P, R
from rpc.models.network import NetworkPolicy

log = logging.getLogger(__name__)

T = TypeVar("T")
ImageProvider = Callable[[], Awaitable[str]]
Progress = Callable[[int, str], Awaitable[None]]  # (step 1..CREATE_STEPS, message)
CREATE_STEPS = 4
_TOMBSTONES = 256


class _NotReady(Exception):
    """Readiness probe says: not yet."""


class SandboxManager:
    def __init__(
        self,
        settings: Settings,
        backend: SandboxBackend,
        *,
        image_provider: ImageProvider | None = None,
        agent: AgentClient | None = None,
    ) -> None:
        self.settings = settings
        self.backend = backend
        self.agent = agent or AgentClient()
        self._image_provider = image_provider
        self._locks = OwnershipLocks(settings.state_dir, settings.namespace)
        self._records: dict[str, SandboxRecord] = {}
        self._defaults: dict[tuple[str, str], str] = {}
        self._destroyed: OrderedDict[str, str] = OrderedDict()  # id -> owner, for clearer errors

    # -- lifecycle of the manager ------------------------------------------------------------
    async def start(self) -> None:
        await self._thread(self.backend.ping)
        await self.reconcile()

    async def close(self) -> None:
        """On server shutdown: destroy what we manage, or hand it over (release locks) if keeping."""
        if self.settings.keep_on_exit:
            for sid in list(self._records):
                self._locks.release(sid, forget=False)
            self._records.clear()
        else:
            with anyio.CancelScope(shield=True):
                async with anyio.create_task_group() as tg:
                    for rec in list(self._records.values()):
                        tg.start_soon(self._remove, rec, "server shutdown")
                await self._thread(self.backend.remove_network_if_unused)
        await self.agent.aclose()

    # -- queries -----------------------------------------------------------------------------
    def list(self, caller: Caller) -> list[SandboxRecord]:
        return sorted(
            (r for r in self._records.values() if r.owner == caller.owner), key=lambda r: (r.created_at, r.id)
        )

    def default_id(self, caller: Caller) -> str | None:
        sid = self._defaults.get((caller.owner, caller.session))
        return sid if sid in self._records else None

    def get(self, caller: Caller, sandbox_id: str) -> SandboxRecord:
        rec = self._records.get(sandbox_id)
        if rec is not None and rec.owner == caller.owner:
            return rec
        if self._destroyed.get(sandbox_id) == caller.owner:
            raise BoxwrightError(
                ErrorCode.SANDBOX_NOT_FOUND,
                f"sandbox {sandbox_id} was destroyed",
                hint="call sandbox_create to make a new sandbox",
                details={"sandboxId": sandbox_id, "reason": "destroyed"},
            )
        # Another owner's sandbox is reported exactly like a missing one: existence is not leaked.
        raise BoxwrightError(ErrorCode.SANDBOX_NOT_FOUND, f"no sandbox {sandbox_id}", details={"sandboxId": sandbox_id})

    def resolve(self, caller: Caller, sandbox_id: str | None) -> SandboxRecord:
        """An explicit id, else the session's default sandbox, else the owner's only sandbox."""
        if sandbox_id:
            return self.get(caller, sandbox_id)
        default = self.default_id(caller)
        if default:
            return self._records[default]
        mine = self.list(caller)
        if len(mine) == 1:
            return mine[0]
        if not mine:
            raise BoxwrightError(ErrorCode.NO_DEFAULT_SANDBOX, "no sandbox yet: this call needs one")
        raise BoxwrightError(
            ErrorCode.AMBIGUOUS_SANDBOX,
            f"you have {len(mine)} sandboxes and no default one",
            details={"sandboxIds": [r.id for r in mine]},
        )

    # -- create / destroy --------------------------------------------------------------------
    async def create(
        self,
        caller: Caller,
        *,
        name: str | None = None,
        ttl_s: int | None = None,
        network: NetworkPolicy | None = None,
        deadline: Deadline | None = None,
        progress: Progress | None = None,
    ) -> SandboxRecord:
        async def step(n: int, message: str) -> None:
            if progress is not None:
                await progress(n, message)

        s = self.settings
        self._check_limits(caller)
        ttl = min(ttl_s or s.default_ttl, s.max_ttl)
        now = datetime.now(UTC).replace(microsecond=0)
        sid = "sbx_" + secrets.token_hex(6)
        network = network or NetworkPolicy(mode=s.network)
        rec = SandboxRecord(
            id=sid,
            owner=caller.owner,
            name=name,
            image=s.image,
            created_at=now,
            expires_at=now + timedelta(seconds=ttl),
            token=secrets.token_urlsafe(32),
            network=network.mode,
            allow_hosts=list(network.allowHosts),
        )
        if not self._locks.try_acquire(sid):  # pragma: no cover - fresh random id
            raise BoxwrightError(ErrorCode.SANDBOX_START_FAILED, "sandbox id collision; retry")
        self._records[sid] = rec  # reserves the slot against concurrent creates
        started = time.monotonic()
        try:
            if self._image_provider is not None:  # may build the image on first use
                await step(1, "checking the sandbox image (built on first use)")
                rec.image = await self._image_provider()
            deadline = deadline or Deadline.after(s.startup_timeout)
            await step(2, "starting the container")
            spec = StartSpec(sandbox_id=sid, image=rec.image, labels=self._labels(rec), env=agent_env(rec.token))
            info = await self._thread(self.backend.start, spec)
            self._attach(rec, info)
            await step(3, "applying the network policy; waiting for the agent and the code runner")
            # A fresh container has no code runner yet; it needs nothing from the agent, so both boot
            # in parallel instead of one after the other, while the network guard loads the policy.
            # Nothing untrusted runs before all three are done: the caller gets the id only then.
            assert rec.container_id is not None
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._apply_network_policy, rec)
                await self._thread(self.backend.start_code_runner, rec.container_id)
                await self._poll(rec, deadline, need_runner=True)
            await step(4, "ready")
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                logs = await self._thread(self.backend.logs_tail, rec.container_id) if rec.container_id else ""
                await self._remove(rec, "failed to start", tombstone=False)
            if isinstance(exc, BoxwrightError):
                if logs:
                    raise exc.with_details(agentLogTail=logs[-2000:]) from exc
                raise
            if isinstance(exc, Exception):
                raise BoxwrightError(
                    ErrorCode.SANDBOX_START_FAILED,
                    f"sandbox failed to start: {type(exc).__name__}: {exc}",
                    details={"agentLogTail": logs[-2000:]},
                ) from exc
            raise
        rec.status = SandboxStatus.RUNNING
        self._defaults[(caller.owner, caller.session)] = sid
        log.info(
            "sandbox created id=%s owner=%s container=%s endpoint=%s ttl=%ss in %.2fs",
            sid,
            caller.owner,
            (rec.container_id or "")[:12],
            rec.endpoint.base_url if rec.endpoint else "-",
            ttl,
            time.monotonic() - started,
        )
        return rec

    async def destroy(self, caller: Caller, sandbox_id: str | None) -> SandboxRecord:
        rec = self.resolve(caller, sandbox_id)
        await self._remove(rec, "destroyed by owner")
        return rec

    # -- calls into a sandbox ----------------------------------------------------------------
    async def call(
        self, caller: Caller, sandbox_id: str | None, method: Method[P, R], params: P, deadline: Deadline
    ) -> tuple[SandboxRecord, R]:
        rec = self.resolve(caller, sandbox_id)
        # A paused sandbox is still tried (the status may be stale); it ends in RPC_TIMEOUT.
        if rec.status not in (SandboxStatus.RUNNING, SandboxStatus.PAUSED) or rec.endpoint is None:
            raise BoxwrightError(
                ErrorCode.SANDBOX_NOT_RUNNING,
                f"sandbox {rec.id} is {rec.status.value}",
                details={"sandboxId": rec.id, "status": rec.status.value},
            )
        rec.last_used = datetime.now(UTC)
        try:
            try:
                return rec, await self.agent.call(rec.endpoint, method, params, deadline)
            except BoxwrightError as exc:
                if exc.code is not ErrorCode.CODE_RUNNER_UNAVAILABLE:
                    raise
                # The code runner daemon died (e.g. killed by user code): restart it once and retry.
                log.warning("code runner of %s is down; restarting it", rec.id)
                await self._start_code_runner(rec, deadline)
                return rec, await self.agent.call(rec.endpoint, method, params, deadline)
        except BoxwrightError as exc:
            if exc.code.category is Category.SANDBOX:  # the sandbox itself failed: say how, from the engine
                raise await self._explain_unreachable(rec, exc.with_details(sandboxId=rec.id)) from exc
            raise exc.with_details(sandboxId=rec.id) from exc

    # -- housekeeping ------------------------------------------------------------------------
    async def reap(self) -> None:
        """Expire sandboxes past their TTL and notice containers that died or were removed."""
        now = datetime.now(UTC)
        for rec in list(self._records.values()):
            if rec.status is SandboxStatus.STARTING:
                continue
            if now >= rec.expires_at:
                await self._remove(rec, "TTL expired")
            elif self.settings.idle_timeout and (now - rec.last_used).total_seconds() > self.settings.idle_timeout:
                await self._remove(rec, "idle timeout")
        await self.reconcile()

    async def reconcile(self) -> None:
        """Adopt or remove sandboxes of this namespace that no live server manages."""
        infos = await self._thread(self.backend.list_sandboxes, self.settings.namespace)
        seen: set[str] = set()
        for info in infos:
            sid = info.sandbox_id
            seen.add(sid)
            rec = self._records.get(sid)
            if rec is not None:
                if rec.status is not SandboxStatus.STARTING:
                    rec.status = _status_of(info)
                continue
            if not self._locks.try_acquire(sid):
                continue  # another live server manages it
            await self._adopt_or_remove(info)
        for sid, rec in list(self._records.items()):
            if sid not in seen and rec.status is not SandboxStatus.STARTING:
                log.warning("sandbox %s disappeared (removed outside Boxwright)", sid)
                self._forget(rec)
        live = seen | set(self._records)
        for vol in await self._thread(self.backend.list_orphan_volumes, self.settings.namespace, live):
            sid = vol.removeprefix("boxwright-").removesuffix("-workspace")
            if self._locks.try_acquire(sid):
                log.info("removing orphan workspace volume %s", vol)
                await self._thread(self.backend.remove_volume, vol)
                self._locks.release(sid)
        await self._thread(self.backend.remove_leftover_guards)

    async def run_reaper(self) -> None:
        """Forever: reap every reap_interval_s. Errors are logged, never fatal."""
        while True:
            await anyio.sleep(self.settings.reap_interval)
            try:
                await self.reap()
            except Exception:
                log.exception("reaper sweep failed")

    # -- internals ---------------------------------------------------------------------------
    def _check_limits(self, caller: Caller) -> None:
        s = self.settings
        if len(self._records) >= s.max_sandboxes:
            raise BoxwrightError(
                ErrorCode.SANDBOX_LIMIT_REACHED,
                f"this server runs its maximum of {s.max_sandboxes} sandboxes",
                details={"limit": s.max_sandboxes, "scope": "server"},
            )
        mine = sum(1 for r in self._records.values() if r.owner == caller.owner)
        if mine >= s.max_sandboxes_per_owner:
            raise BoxwrightError(
                ErrorCode.SANDBOX_LIMIT_REACHED,
                f"you already have {mine} sandboxes (limit {s.max_sandboxes_per_owner})",
                details={"limit": s.max_sandboxes_per_owner, "scope": "owner"},
            )

    def _labels(self, rec: SandboxRecord) -> dict[str, str]:
        out = {
            labels.SANDBOX: rec.id,
            labels.NAMESPACE: self.settings.namespace,
            labels.OWNER: rec.owner,
            labels.CREATED_AT: str(int(rec.created_at.timestamp())),
            labels.EXPIRES_AT: str(int(rec.expires_at.timestamp())),
            labels.TOKEN: rec.token,
            labels.IMAGE: rec.image,
            labels.SCHEMA: labels.SCHEMA_VERSION,
        }
        if rec.name:
            out[labels.NAME] = rec.name
        out[labels.NETWORK] = rec.network
        if rec.allow_hosts:
            out[labels.ALLOW_HOSTS] = ",".join(rec.allow_hosts)
        return out

    @staticmethod
    def _attach(rec: SandboxRecord, info: ContainerInfo) -> None:
        rec.container_id = info.container_id
        if info.agent_url:
            rec.endpoint = AgentEndpoint(info.agent_url, rec.token)

    async def _apply_network_policy(self, rec: SandboxRecord) -> None:
        assert rec.container_id is not None
        try:
            policy = NetworkPolicy(
                mode=rec.network,  # type: ignore[arg-type]  # validated here, labels may be anything
                allowHosts=rec.allow_hosts,
                hostAddresses=self.backend.host_addresses() if rec.network == "public" else [],
            )
        except ValidationError as exc:  # labels of another version or edited by hand
            raise BoxwrightError(
                ErrorCode.SANDBOX_START_FAILED,
                f"sandbox {rec.id} has no valid network policy in its labels",
                details={"network": rec.network[:40]},
            ) from exc
        report = await self._thread(self.backend.apply_network_policy, rec.id, rec.container_id, rec.image, policy)
        log.info("sandbox %s network %s: %s", rec.id, policy.mode, report[:300])

    async def _wait_ready(self, rec: SandboxRecord, deadline: Deadline) -> None:
        """For a sandbox found running: agent answering, then the code runner connected (started only
        if it is not — a second daemon would take over the socket from the first)."""
        await self._poll(rec, deadline, need_runner=False)
        assert rec.endpoint is not None
        if not (await self.agent.health(rec.endpoint)).codeRunnerReady:
            await self._start_code_runner(rec, deadline)

    async def _start_code_runner(self, rec: SandboxRecord, deadline: Deadline) -> None:
        assert rec.container_id is not None
        await self._thread(self.backend.start_code_runner, rec.container_id)
        await self._poll(rec, deadline, need_runner=True)

    async def _poll(self, rec: SandboxRecord, deadline: Deadline, *, need_runner: bool) -> None:
        """Poll /healthz until ready; fail fast if the container died; SANDBOX_START_TIMEOUT at the deadline."""
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_delay(max(0.0, deadline.remaining())),
                wait=wait_fixed(0.02),  # a probe is ~1 ms; readiness is detected within 20 ms
                retry=retry_if_exception_type(_NotReady),
                reraise=True,
            ):
                with attempt:
                    await self._probe(rec, need_runner)
        except _NotReady as exc:
            raise BoxwrightError(
                ErrorCode.SANDBOX_START_TIMEOUT,
                f"sandbox {rec.id} was not ready within its start-up time"
                + (" (code runner did not come up)" if need_runner else ""),
                details={"sandboxId": rec.id, "last": str(exc)[:200]},
            ) from exc

    async def _probe(self, rec: SandboxRecord, need_runner: bool) -> None:
        if rec.endpoint is None:
            info = await self._thread(self.backend.inspect, rec.container_id or "")
            if info is not None:
                self._attach(rec, info)
        if rec.endpoint is None:
            await self._fail_if_dead(rec)
            raise _NotReady("no published port yet")
        try:
            health = await self.agent.health(rec.endpoint, timeout_s=2.0)
        except BoxwrightError as exc:
            if exc.code is not ErrorCode.AGENT_UNREACHABLE:
                raise
            await self._fail_if_dead(rec)
            raise _NotReady(exc.message) from exc
        if need_runner and not health.codeRunnerReady:
            raise _NotReady("code runner not connected")

    async def _fail_if_dead(self, rec: SandboxRecord) -> None:
        info = await self._thread(self.backend.inspect, rec.container_id or "")
        if info is None or info.status in ("exited", "dead"):
            raise BoxwrightError(
                ErrorCode.SANDBOX_START_FAILED,
                f"the sandbox container stopped during start-up (status {info.status if info else 'gone'})",
                details={"sandboxId": rec.id},
            )

    async def _explain_unreachable(self, rec: SandboxRecord, exc: BoxwrightError) -> BoxwrightError:
        """The error to raise instead of `exc`, once the engine said what became of the container."""
        info = await self._thread(self.backend.inspect, rec.container_id or "")
        if info is None:
            self._forget(rec)
            return BoxwrightError(
                ErrorCode.SANDBOX_NOT_FOUND,
                f"sandbox {rec.id} no longer exists",
                hint="it was removed outside Boxwright; call sandbox_create",
                details=exc.details,
            )
        rec.status = _status_of(info)
        details = {**exc.details, "containerStatus": info.status}
        if rec.status is SandboxStatus.EXITED:
            return BoxwrightError(
                ErrorCode.SANDBOX_NOT_RUNNING,
                f"sandbox {rec.id} has stopped ({info.status})",
                hint="destroy it with sandbox_destroy and call sandbox_create",
                details=details,
            )
        return BoxwrightError(exc.code, exc.message, hint=exc.hint, details=details)

    async def _adopt_or_remove(self, info: ContainerInfo) -> None:
        lab = info.labels
        sid = info.sandbox_id
        try:
            expires = datetime.fromtimestamp(int(lab.get(labels.EXPIRES_AT, "0")), UTC)
            created = datetime.fromtimestamp(int(lab.get(labels.CREATED_AT, "0")), UTC)
        except ValueError:
            expires = created = datetime.fromtimestamp(0, UTC)
        rec = SandboxRecord(
            id=sid,
            owner=lab.get(labels.OWNER, "?"),
            name=lab.get(labels.NAME),
            image=lab.get(labels.IMAGE, ""),
            created_at=created,
            expires_at=expires,
            token=lab.get(labels.TOKEN, ""),
            container_id=info.container_id,
            adopted=True,
            # Sandboxes from before network modes carry no label: they get the server's default.
            network=lab.get(labels.NETWORK, self.settings.network),
            allow_hosts=[h for h in lab.get(labels.ALLOW_HOSTS, "").split(",") if h],
        )
        self._attach(rec, info)
        reason = ""
        if info.status != "running":
            reason = f"container {info.status}"
        elif datetime.now(UTC) >= expires:
            reason = "TTL expired"
        elif not rec.token or rec.endpoint is None:
            reason = "incomplete labels"
        else:
            self._records[sid] = rec
            try:
                # Loaded again: the server that made it may have died before its policy was in place.
                await self._apply_network_policy(rec)
                await self._wait_ready(rec, Deadline.after(10))
            except BoxwrightError as exc:
                reason = f"unhealthy ({exc.code.value})"
        if reason:
            log.info("removing orphan sandbox %s: %s", sid, reason)
            await self._remove(rec, reason, tombstone=False)
            return
        rec.status = SandboxStatus.RUNNING
        log.info("adopted sandbox %s of owner %s (expires %s)", sid, rec.owner, rec.expires_at.isoformat())

    async def _remove(self, rec: SandboxRecord, reason: str, *, tombstone: bool = True) -> None:
        rec.status = SandboxStatus.DESTROYING
        with anyio.CancelScope(shield=True):
            try:
                await self._thread(self.backend.remove, rec.id, rec.container_id)
            finally:
                self._forget(rec, tombstone=tombstone)
        log.info("sandbox %s removed (%s)", rec.id, reason)

    def _forget(self, rec: SandboxRecord, *, tombstone: bool = True) -> None:
        self._records.pop(rec.id, None)
        self._locks.release(rec.id)
        for key in [k for k, v in self._defaults.items() if v == rec.id]:
            del self._defaults[key]
        if tombstone:
            self._destroyed[rec.id] = rec.owner
            while len(self._destroyed) > _TOMBSTONES:
                self._destroyed.popitem(last=False)

    @staticmethod
    async def _thread(fn: Callable[..., T], *args: object) -> T:
        return await anyio.to_thread.run_sync(fn, *args)


def _status_of(info: ContainerInfo) -> SandboxStatus:
    if info.status == "running":
        return SandboxStatus.RUNNING
    if info.status == "paused":
        return SandboxStatus.PAUSED
    return SandboxStatus.EXITED
