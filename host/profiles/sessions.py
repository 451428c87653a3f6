"""Browser sessions opened from a login profile: the one seam every feature uses to work "as" a profile.

    async with services.profiles.session(caller, sandbox_id, "master") as session_id:
        ...  # browser calls (or a template run, or a scrape) with this sessionId

loads the profile's latest snapshot into a new session (`browser.state_load`: the context is made
with `new_context(storage_state=…)`), keeps it published while it is used (debounced, see
publisher), publishes once more with compare-and-set on the version read at the start, and closes
the session. `open`/`close` are the two halves, for sessions that outlive one call
(browser_sessions with profileId). A one-shot job that makes its own context (scrape) uses `snapshot`
and `save_back` instead: the state goes in with the call, and what the context ends with comes back
with its result and is published with compare-and-set on the version read before. The profile is
the caller's: owners never share profiles.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import anyio
import anyio.to_thread

from host.config import Settings
from host.profiles.publisher import Binding, SnapshotPublisher
from host.profiles.store import ProfileStore, PublishOutcome, Snapshot, writer_id
from host.sandboxes.manager import SandboxManager
from host.sandboxes.models import Caller
from rpc import methods
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.browser import ContextOptions, SessionsParams
from rpc.models.profiles import StateLoadParams, StateLoadResult, StorageState

log = logging.getLogger("boxwright.profiles")

CALL_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Opened:
    binding: Binding
    result: StateLoadResult

    @property
    def session_id(self) -> str:
        return self.binding.session_id


class ProfileSessions:
    def __init__(self, settings: Settings, manager: SandboxManager) -> None:
        self.settings = settings
        self.manager = manager
        self.store = ProfileStore(settings)
        self.publisher = SnapshotPublisher(self.store, manager, settings)
        manager.listeners.append(self.publisher)

    async def open(
        self,
        caller: Caller,
        sandbox_id: str | None,
        profile_id: str | None,
        *,
        session_id: str | None = None,
        deadline: Deadline | None = None,
        authoritative: bool = False,
        track: bool = True,
        options: ContextOptions | None = None,
    ) -> Opened:
        """A new session in the sandbox, loaded from the profile's latest snapshot (made on first use); `options`:
        how it opens pages (browser_sessions' mobile, locale, skipTlsVerification)."""
        profile_id = profile_id or self.settings.default_profile_id
        rec = self.manager.resolve(caller, sandbox_id)  # owner check before the profile is touched
        snapshot = await anyio.to_thread.run_sync(self.store.read, caller.owner, profile_id)
        params = StateLoadParams(
            sessionId=session_id,
            storageState=StorageState.model_validate(snapshot.state),
            profileId=profile_id,
            **(options or ContextOptions()).model_dump(),
        )
        _, result = await self.manager.call(
            caller, rec.id, methods.BROWSER_STATE_LOAD, params, deadline or Deadline.after(CALL_TIMEOUT_S)
        )
        assert result.sessionId is not None
        binding = Binding(
            caller=caller,
            profile_id=profile_id,
            sandbox_id=rec.id,
            session_id=result.sessionId,
            base_version=snapshot.version,
            authoritative=authoritative,
        )
        if track:
            self.publisher.bind(binding)
        log.info("profile %s/%s (version %d) opened as %s/%s", caller.owner, profile_id, snapshot.version, rec.id,
                 result.sessionId)  # fmt: skip
        return Opened(binding, result)

    def bound(self, caller: Caller, sandbox_id: str, session_id: str) -> Binding | None:
        binding = self.publisher.bindings.get((sandbox_id, session_id))
        return binding if binding is not None and binding.owner == caller.owner else None

    async def close(
        self, binding: Binding, *, publish: bool = True, close_session: bool = True
    ) -> PublishOutcome | None:
        """Publish one last time (unless told not to), then close the session. Shielded: a cancelled
        caller still leaves the profile published and the session closed."""
        self.publisher.unbind(binding)
        outcome = None
        with anyio.CancelScope(shield=True):
            if publish:
                outcome = await self.publisher.publish_logged(binding)
            if close_session:
                with contextlib.suppress(BoxwrightError):
                    await self.manager.call(
                        binding.caller,
                        binding.sandbox_id,
                        methods.BROWSER_SESSIONS,
                        SessionsParams(action="close", sessionId=binding.session_id),
                        Deadline.after(CALL_TIMEOUT_S),
                    )
        return outcome

    @contextlib.asynccontextmanager
    async def session(
        self, caller: Caller, sandbox_id: str | None, profile_id: str | None, *, deadline: Deadline | None = None
    ) -> AsyncIterator[str]:
        """A session on the profile for the duration of the block (see the module docstring)."""
        opened = await self.open(caller, sandbox_id, profile_id, deadline=deadline)
        try:
            yield opened.session_id
        finally:
            await self.close(opened.binding)

    async def publish_session(
        self, caller: Caller, sandbox_id: str, session_id: str, profile_id: str, *, base_version: int | None
    ) -> PublishOutcome | None:
        """Publish an existing session (not opened from the profile) to it, e.g. a successful
        login_keep_session run with publishToProfile: compare-and-set on `base_version` (the version
        read when the run was accepted; None: on top of whatever is there)."""
        binding = Binding(
            caller=caller,
            profile_id=profile_id,
            sandbox_id=sandbox_id,
            session_id=session_id,
            base_version=base_version or 0,
            authoritative=base_version is None,
        )
        return await self.publisher.publish(binding)

    # -- one-shot jobs (scrape): the state goes in with the call and comes back with its result ------
    async def snapshot(self, caller: Caller, profile_id: str) -> Snapshot:
        """The caller's latest snapshot of the profile (made on first use), for a job that opens its own
        context from it; hand what the job ends with to `save_back` with this snapshot's version."""
        return await anyio.to_thread.run_sync(self.store.read, caller.owner, profile_id)

    async def save_back(
        self, caller: Caller, profile_id: str, state: StorageState | None, *, base_version: int, what: str
    ) -> PublishOutcome | None:
        """Publish a job's final state with compare-and-set on the version it started from (a newer
        version published meanwhile wins; an unchanged state is no new version). Failures are logged,
        not raised: the job itself succeeded."""
        if state is None:
            return None
        data = state.model_dump(mode="json")
        try:
            return await anyio.to_thread.run_sync(
                lambda: self.store.publish(
                    caller.owner, profile_id, data, base_version=base_version, writer=writer_id(what)
                )
            )
        except BoxwrightError as exc:
            log.warning("profile %s/%s: %s not saved: %s [%s]", caller.owner, profile_id, what, exc.message,
                        exc.code.value)  # fmt: skip
            return None

    async def current_version(self, caller: Caller, profile_id: str) -> int:
        return await anyio.to_thread.run_sync(self.store.current_version, caller.owner, profile_id)

    async def delete(self, caller: Caller, profile_id: str) -> None:
        """Remove one of the caller's profiles — not while sessions opened from it here are open (their
        saves would make it again) or a login holds it (login.lock: PROFILE_BUSY)."""
        using = sorted(
            f"{b.sandbox_id}/{b.session_id}"
            for b in self.publisher.bindings.values()
            if b.owner == caller.owner and b.profile_id == profile_id and not b.closed
        )
        if using:
            raise BoxwrightError(
                ErrorCode.PROFILE_BUSY,
                f"profile {profile_id!r} is in use by {len(using)} browser session(s)",
                hint="close them first (browser_sessions close with their sessionId and sandboxId), then delete it",
                details={"profileId": profile_id, "sessions": using},
            )
        await anyio.to_thread.run_sync(self.store.remove, caller.owner, profile_id)
