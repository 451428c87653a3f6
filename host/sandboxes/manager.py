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
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import anyio
import anyio.to_thread

from host import labels
from host.agent_client import AgentClient
from host.backends.base import SandboxBackend, StartSpec
from host.config import Settings
from host.identity import ServerIdentity, load_or_create
from host.sandboxes import limits
from host.sandboxes.limits import check_capacity, ttl_seconds
from host.sandboxes.locks import OwnershipLocks
from host.sandboxes.models import Caller, SandboxRecord, SandboxStatus
from host.sandboxes.network import apply_network_policy
from host.sandboxes.network import complete as complete_policy
from host.sandboxes.readiness import Readiness, diagnose, status_of
from host.sandboxes.reconcile import Reconciler
from host.sandboxes.registry import SandboxRegistry
from rpc.agent import agent_env
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, Category, ErrorCode
from rpc.methods import Method, P, R
from rpc.models.network import NetworkPolicy

log = logging.getLogger(__name__)

ImageProvider = Callable[[], Awaitable[str]]
Progress = Callable[[int, str], Awaitable[None]]  # (step 1..CREATE_STEPS, message)
CREATE_STEPS = 4
LOG_TAIL_CHARS = 2000


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
        self.reconciler = Reconciler(
            settings, self.identity, backend, self.registry, self.readiness, self._remove_orphan
        )

    # -- lifecycle of the manager ------------------------------------------------------------
    async def start(self) -> None:
        await anyio.to_thread.run_sync(self.backend.ping)
        await self.reconcile()

    async def close(self) -> None:
        """On server shutdown: destroy what we manage, or hand it over (release locks) if keeping."""
        if self.settings.keep_on_exit:
            self.registry.hand_over()
        else:
            with anyio.CancelScope(shield=True):
                async with anyio.create_task_group() as tg:
                    for rec in self.registry:
                        tg.start_soon(self._remove, rec, "server shutdown")
                await anyio.to_thread.run_sync(self.backend.remove_network_if_unused)
        await self.agent.aclose()

    # -- queries -----------------------------------------------------------------------------
    def list(self, caller: Caller) -> list[SandboxRecord]:
        return self.registry.owned_by(caller)

    def default_id(self, caller: Caller) -> str | None:
        return self.registry.default_id(caller)

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
        for `job` (see host.sandboxes.jobs), labelled so that a restarted server can tell."""

        async def step(n: int, message: str) -> None:
            if progress is not None:
                await progress(n, message)

        s = self.settings
        check_capacity(s, self.registry, caller)
        ttl = ttl_seconds(s, ttl_s)
        workspace = limits.workspace_mb(s, workspace_mb)
        now = datetime.now(UTC).replace(microsecond=0)
        sid = "sbx_" + secrets.token_hex(6)
        network = network or NetworkPolicy(mode=s.network)
        # Before anything starts: a caller may not allowlist internal addresses without the operator's say.
        await complete_policy(self.backend, s, network.mode, network.allowHosts)
        rec = SandboxRecord(
            id=sid,
            owner=caller.owner,
            name=name,
            image=s.image,
            created_at=now,
            expires_at=now + timedelta(seconds=ttl),
            token=self.identity.sandbox_token(s.namespace, sid),
            runner_secret=self.identity.runner_secret(s.namespace, sid),
            network=network.mode,
            allow_hosts=list(network.allowHosts),
            job=job,
            workspace_mb=workspace,
        )
        if not self.registry.claim(sid):  # pragma: no cover - fresh random id
            raise BoxwrightError(ErrorCode.SANDBOX_START_FAILED, "sandbox id collision; retry")
        self.registry.add(rec)  # reserves the slot against concurrent creates
        started = time.monotonic()
        try:
            if self._image_provider is not None:  # may build the image on first use
                await step(1, "checking the sandbox image (built on first use)")
                rec.image = await self._image_provider()
            deadline = deadline or Deadline.after(s.startup_timeout)
            await step(2, "starting the container")
            spec = StartSpec(
                sandbox_id=sid,
                image=rec.image,
                labels=labels.encode(rec, s.namespace, self.identity),
                env=agent_env(rec.token, rec.runner_secret, expires_at=int(rec.expires_at.timestamp())),
                server_id=self.identity.server_id,
                workspace_mb=rec.workspace_mb,
            )
            rec.attach(await anyio.to_thread.run_sync(self.backend.start, spec))
            await step(3, "applying the network policy; waiting for the agent and the code runner")
            # A fresh container has no code runner yet; it needs nothing from the agent, so both boot
            # in parallel instead of one after the other, while the network guard loads the policy.
            # Nothing untrusted runs before all three are done: the caller gets the id only then.
            async with anyio.create_task_group() as tg:
                tg.start_soon(apply_network_policy, self.backend, s, rec, self.identity.server_id)
                await self.readiness.start_runner(rec, deadline)
            await step(4, "ready")
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
        if job is None:
            self.registry.make_default(caller, sid)
        log.info(
            "sandbox created id=%s owner=%s container=%s endpoint=%s ttl=%ss in %.2fs%s",
            sid,
            caller.owner,
            (rec.container_id or "")[:12],
            rec.endpoint.base_url if rec.endpoint else "-",
            ttl,
            time.monotonic() - started,
            f" for job {job}" if job else "",
        )
        return rec

    async def destroy(
        self, caller: Caller, sandbox_id: str | None, *, reason: str = "destroyed by owner"
    ) -> SandboxRecord:
        rec = self.resolve(caller, sandbox_id)
        await self._remove(rec, reason)
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
                raise await self._diagnose(rec, failed) from exc
            raise failed from exc

    async def _diagnose(self, rec: SandboxRecord, exc: BoxwrightError) -> BoxwrightError:
        info = await anyio.to_thread.run_sync(self.backend.inspect, rec.container_id or "")
        if info is None:
            self.registry.forget(rec)
        else:
            rec.status = status_of(info)
        return diagnose(rec, exc, info)

    # -- housekeeping ------------------------------------------------------------------------
    async def reap(self) -> None:
        """Expire sandboxes past their TTL and notice containers that died or were removed."""
        now = datetime.now(UTC)
        idle = self.settings.idle_timeout
        for rec in self.registry:
            if rec.status is SandboxStatus.STARTING:
                continue
            if now >= rec.expires_at:
                await self._remove(rec, "TTL expired")
            elif idle and (now - rec.last_used).total_seconds() > idle:
                await self._remove(rec, "idle timeout")
        await self.reconcile()

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
        rec.status = SandboxStatus.DESTROYING
        with anyio.CancelScope(shield=True):
            try:
                await anyio.to_thread.run_sync(self.backend.remove, rec.id, rec.container_id)
            finally:
                self.registry.forget(rec, tombstone=tombstone)
        log.info("sandbox %s removed (%s)", rec.id, reason)

    async def _remove_orphan(self, rec: SandboxRecord, reason: str) -> None:
        await self._remove(rec, reason, tombstone=False)
