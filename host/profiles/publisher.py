"""Publishing the state of browser sessions opened from a login profile back to it (seed 004 §2.8.2).

A session on a profile is a `Binding`: which sandbox, session, owner and profile, and the version it
was loaded from. Its state is exported through Playwright's storageState API (`browser.state_export`;
the browser keeps running, nothing is reloaded — TC-10) and published with compare-and-set on that
version:
- on request end: every tool call on the session schedules a publish `snapshot_refresh_debounce_ms`
  after it; calls closer together than that push it back, so a burst of calls costs one export (TC-11);
- as a backstop, a session in use is exported every `snapshot_refresh_interval_ms`;
- when the session is closed or its sandbox removed, once more, at once.
One export per binding at a time (single flight). A publish that finds a newer version was published
meanwhile is dropped (and logged by the store): the binding is stale and stops publishing.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread

from host.config import Settings
from host.profiles.store import ProfileStore, PublishOutcome, writer_id
from host.sandboxes.manager import SandboxManager
from host.sandboxes.models import Caller, SandboxRecord, SandboxStatus
from rpc import methods
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode
from rpc.methods import Method
from rpc.models.profiles import StateExportParams

log = logging.getLogger("boxwright.profiles")

EXPORT_TIMEOUT_S = 15.0
# Calls that do not count as use of a session (the publisher's own, and reads of the session list).
QUIET_METHODS = frozenset({*methods.PROFILES, methods.BROWSER_SESSIONS})


@dataclass(eq=False)
class Binding:
    caller: Caller
    profile_id: str
    sandbox_id: str
    session_id: str
    base_version: int
    authoritative: bool = False  # a running login: publishes on top of whatever is there
    stale: bool = False
    closed: bool = False
    due: float | None = None  # monotonic time of the debounced publish, if one is scheduled
    backstop: float = field(default_factory=time.monotonic)
    lock: anyio.Lock = field(default_factory=anyio.Lock)

    @property
    def owner(self) -> str:
        return self.caller.owner

    @property
    def key(self) -> tuple[str, str]:
        return (self.sandbox_id, self.session_id)

    def describe(self) -> str:
        return f"{self.owner}/{self.profile_id} ({self.sandbox_id}/{self.session_id})"


def session_of(method: Method[Any, Any], params: Any) -> str | None:
    """The browser session a call acts on (None: not a browser session call)."""
    if not method.name.startswith("browser.") or method in QUIET_METHODS:
        return None
    return getattr(params, "sessionId", None) or "default"


class SnapshotPublisher:
    def __init__(self, store: ProfileStore, manager: SandboxManager, settings: Settings) -> None:
        self.store = store
        self.manager = manager
        self.settings = settings
        self.bindings: dict[tuple[str, str], Binding] = {}
        self.exports = 0  # storageState exports made (what the debounce keeps down)
        self._wake = anyio.Event()
        self._debounce_s = settings.snapshot_refresh_debounce_ms / 1000
        self._interval_s = settings.snapshot_refresh_interval_ms / 1000

    # -- bindings ----------------------------------------------------------------------------
    def bind(self, binding: Binding) -> None:
        binding.backstop = time.monotonic() + self._interval_s
        self.bindings[binding.key] = binding
        self._wake.set()

    def unbind(self, binding: Binding) -> None:
        binding.closed = True
        if self.bindings.get(binding.key) is binding:
            del self.bindings[binding.key]

    def for_sandbox(self, sandbox_id: str) -> list[Binding]:
        return [b for b in self.bindings.values() if b.sandbox_id == sandbox_id]

    def poke(self, sandbox_id: str, session_id: str) -> None:
        """A request on the session ended (or a person acted on it): publish once things calm down."""
        binding = self.bindings.get((sandbox_id, session_id))
        if binding is None or binding.stale or not self.settings.snapshot_refresh_on_request_end:
            return
        binding.due = time.monotonic() + self._debounce_s
        self._wake.set()

    # -- SandboxManager listener -------------------------------------------------------------
    def call_started(self, rec: SandboxRecord, method: Method[Any, Any], params: Any) -> None:
        return None

    def call_ended(self, rec: SandboxRecord, method: Method[Any, Any], params: Any) -> None:
        session_id = session_of(method, params)
        if session_id is not None:
            self.poke(rec.id, session_id)

    async def sandbox_removing(self, rec: SandboxRecord, *, reachable: bool) -> None:
        """Last publish of every profile session in a sandbox about to be removed (while it can answer)."""
        for binding in self.for_sandbox(rec.id):
            self.unbind(binding)
            if reachable:
                await self.publish_logged(binding, rec)

    # -- publishing --------------------------------------------------------------------------
    async def export(self, binding: Binding, rec: SandboxRecord | None = None) -> dict[str, Any]:
        """The session's storageState, straight from the agent (not a tool call: it neither counts as
        use of the sandbox nor wakes anyone listening for calls)."""
        rec = rec or self.manager.resolve(binding.caller, binding.sandbox_id)
        if rec.endpoint is None:
            raise BoxwrightError(ErrorCode.SANDBOX_NOT_RUNNING, f"sandbox {rec.id} is not running")
        params = StateExportParams(sessionId=binding.session_id, indexedDb=self.settings.include_indexed_db_in_snapshot)
        self.exports += 1
        result = await self.manager.agent.call(
            rec.endpoint, methods.BROWSER_STATE_EXPORT, params, Deadline.after(EXPORT_TIMEOUT_S)
        )
        return result.storageState.model_dump(mode="json")

    async def publish(self, binding: Binding, rec: SandboxRecord | None = None) -> PublishOutcome | None:
        """Export and publish now (None when the binding is stale). Raises what the export raises."""
        async with binding.lock:
            if binding.stale and not binding.authoritative:
                return None
            rec = rec or self.manager.resolve(binding.caller, binding.sandbox_id)
            if rec.status is SandboxStatus.PAUSED:
                # Frozen by the idle timeout (long after its calls' debounced publish): nothing in it can
                # change, and an export would only wait for the RPC timeout. The binding stays for later.
                return None
            state = await self.export(binding, rec)
            base = None if binding.authoritative else binding.base_version
            what = "login" if binding.authoritative else f"session {binding.sandbox_id}/{binding.session_id}"
            outcome = await anyio.to_thread.run_sync(
                lambda: self.store.publish(
                    binding.owner, binding.profile_id, state, base_version=base, writer=writer_id(what)
                )
            )
            if outcome.outcome == "stale":
                binding.stale = True
            else:
                binding.base_version = outcome.version
            return outcome

    async def publish_logged(self, binding: Binding, rec: SandboxRecord | None = None) -> PublishOutcome | None:
        """`publish`, with failures logged instead of raised (background publishes, cleanup)."""
        try:
            return await self.publish(binding, rec)
        except BoxwrightError as exc:
            log.warning("profile %s: publish failed: %s [%s]", binding.describe(), exc.message, exc.code.value)
            if exc.code in (ErrorCode.SESSION_NOT_FOUND, ErrorCode.SANDBOX_NOT_FOUND, ErrorCode.SANDBOX_NOT_RUNNING):
                self.unbind(binding)
            elif exc.details.get("damaged") or exc.code is ErrorCode.PROFILE_NOT_FOUND:
                binding.stale = True  # nothing to compare its version with: said once, not every interval
        except Exception:
            log.exception("profile %s: publish failed", binding.describe())
        return None

    async def flush_all(self) -> None:
        """Server shutdown: one last publish of every bound session (kept sandboxes included)."""
        bindings = list(self.bindings.values())
        for binding in bindings:
            self.unbind(binding)
        with anyio.CancelScope(shield=True), anyio.move_on_after(EXPORT_TIMEOUT_S):
            async with anyio.create_task_group() as tg:
                for binding in bindings:
                    tg.start_soon(self.publish_logged, binding)

    # -- the background loop -----------------------------------------------------------------
    def _next_wake(self, now: float) -> float:
        times = [b.backstop for b in self.bindings.values() if not b.stale]
        times += [b.due for b in self.bindings.values() if b.due is not None and not b.stale]
        return max(0.0, min(times, default=now + self._interval_s) - now)

    async def run(self) -> None:
        """Forever: debounced and periodic publishes of every bound session."""
        async with anyio.create_task_group() as tg:
            while True:
                now = time.monotonic()
                for binding in list(self.bindings.values()):
                    if binding.stale:
                        continue
                    if (binding.due is not None and binding.due <= now) or binding.backstop <= now:
                        binding.due = None
                        binding.backstop = now + self._interval_s
                        tg.start_soon(self.publish_logged, binding)
                with anyio.move_on_after(self._next_wake(time.monotonic())):
                    await self._wake.wait()
                self._wake = anyio.Event()
