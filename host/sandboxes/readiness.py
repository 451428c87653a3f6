"""Is a sandbox up? Polls its agent's health until the agent (and the code runner) answer, fails fast
when the container dies, starts the code runner when it is missing; and, when a call finds a sandbox
silent, says what the engine reports became of it (`diagnose`)."""

from __future__ import annotations

import anyio.to_thread
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_delay, wait_fixed

from host.agent_client import AgentClient
from host.backends.base import ContainerInfo, SandboxBackend
from host.sandboxes.models import SandboxRecord, SandboxStatus
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode

PROBE_TIMEOUT_S = 2.0
PROBE_INTERVAL_S = 0.02  # a probe is ~1 ms; readiness is detected within 20 ms


class _NotReady(Exception):
    """Readiness probe says: not yet."""


class Readiness:
    def __init__(self, backend: SandboxBackend, agent: AgentClient) -> None:
        self.backend = backend
        self.agent = agent

    async def wait(self, rec: SandboxRecord, deadline: Deadline, *, need_runner: bool) -> None:
        """Poll /healthz until ready; fail fast if the container died; SANDBOX_START_TIMEOUT at the deadline."""
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_delay(max(0.0, deadline.remaining())),
                wait=wait_fixed(PROBE_INTERVAL_S),
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

    async def start_runner(self, rec: SandboxRecord, deadline: Deadline) -> None:
        """Start the code runner daemon and wait until the agent reports it connected."""
        assert rec.container_id is not None
        await anyio.to_thread.run_sync(self.backend.start_code_runner, rec.container_id, rec.runner_secret)
        await self.wait(rec, deadline, need_runner=True)

    async def ensure_runner(self, rec: SandboxRecord, deadline: Deadline) -> None:
        """For a sandbox found running: agent answering, then the code runner connected (started only
        if it is not — a new daemon kills the old one and its processes)."""
        await self.wait(rec, deadline, need_runner=False)
        assert rec.endpoint is not None
        if not (await self.agent.health(rec.endpoint)).codeRunnerReady:
            await self.start_runner(rec, deadline)

    async def _probe(self, rec: SandboxRecord, need_runner: bool) -> None:
        if rec.endpoint is None:
            info = await anyio.to_thread.run_sync(self.backend.inspect, rec.container_id or "")
            if info is not None:
                rec.attach(info)
        if rec.endpoint is None:
            await self._fail_if_dead(rec)
            raise _NotReady("no published port yet")
        try:
            health = await self.agent.health(rec.endpoint, timeout_s=PROBE_TIMEOUT_S)
        except BoxwrightError as exc:
            if exc.code is not ErrorCode.AGENT_UNREACHABLE:
                raise
            await self._fail_if_dead(rec)
            raise _NotReady(exc.message) from exc
        if need_runner and not health.codeRunnerReady:
            raise _NotReady("code runner not connected")

    async def _fail_if_dead(self, rec: SandboxRecord) -> None:
        info = await anyio.to_thread.run_sync(self.backend.inspect, rec.container_id or "")
        if info is None or info.status in ("exited", "dead"):
            raise BoxwrightError(
                ErrorCode.SANDBOX_START_FAILED,
                f"the sandbox container stopped during start-up (status {info.status if info else 'gone'})",
                details={"sandboxId": rec.id},
            )


def status_of(info: ContainerInfo) -> SandboxStatus:
    if info.status == "running":
        return SandboxStatus.RUNNING
    if info.status == "paused":
        return SandboxStatus.PAUSED
    return SandboxStatus.EXITED


def diagnose(rec: SandboxRecord, exc: BoxwrightError, info: ContainerInfo | None) -> BoxwrightError:
    """The error to raise instead of `exc` (the sandbox failed or went silent), given what the engine
    says of its container now (`info`, None when it is gone)."""
    if info is None:
        return BoxwrightError(
            ErrorCode.SANDBOX_NOT_FOUND,
            f"sandbox {rec.id} no longer exists",
            hint="it was removed outside Boxwright; call sandbox_create",
            details=exc.details,
        )
    details = {**exc.details, "containerStatus": info.status}
    if status_of(info) is SandboxStatus.EXITED:
        return BoxwrightError(
            ErrorCode.SANDBOX_NOT_RUNNING,
            f"sandbox {rec.id} has stopped ({info.status})",
            hint="destroy it with sandbox_destroy and call sandbox_create",
            details=details,
        )
    return BoxwrightError(exc.code, exc.message, hint=exc.hint, details=details)
