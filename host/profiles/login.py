"""`boxwright login`: a person logs in once, by hand, and the login is saved to a profile (seed 004
§2.2.2 and §2.4.2, TC-07), in a sandboxed world.

1. The profile is initialised if need be and its `login.lock` taken — a second login on the same
   profile fails at once (TC-08), before anything is started.
2. A sandbox starts with a browser session loaded from the profile's latest snapshot (so a login can
   be refreshed), opens `--url`, and the live view's link is printed (and opened in a browser when
   one can be): the person sees the sandbox's browser there and drives it.
3. While they work, the session's storageState is published every `login_refresh_interval_ms`;
   when they finish — Enter on the terminal, Done on the page, or closing the page — once more.
   These publishes are authoritative (the login holds the profile): each goes on top of the newest
   version.
4. The sandbox is removed and the lock released.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import webbrowser
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
import anyio.to_thread

from host.config import Settings
from host.live.views import LiveView
from host.profiles.publisher import Binding
from host.profiles.store import ProfileStore, PublishOutcome
from host.sandboxes.models import Caller
from host.services import Services
from rpc import methods
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError
from rpc.models.browser import GotoParams
from rpc.models.network import NetworkPolicy
from rpc.models.profiles import StorageState

log = logging.getLogger("boxwright.login")

# A page closed for this long (not a reload) ends the login.
CLOSED_GRACE_S = 5.0
POLL_S = 0.2


@dataclass(frozen=True)
class LoginRequest:
    owner: str
    profile_id: str
    url: str | None
    network: NetworkPolicy | None
    open_browser: bool


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def can_open_browser() -> bool:
    """Only where a graphical browser is plausible: on a bare server `webbrowser` would start a text
    browser in this very terminal."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _readable_stdin() -> bool:
    try:
        sys.stdin.fileno()
    except (OSError, ValueError):
        return False
    return True


def _describe(outcome: PublishOutcome | None, state_cookies: int) -> str:
    if outcome is None:
        return "not saved"
    if outcome.outcome == "unchanged":
        return f"unchanged (version {outcome.version})"
    return f"version {outcome.version} saved ({state_cookies} cookies)"


LINK_EXPIRED = "the live view link expired before it was opened"


async def _wait_for_finish(view: LiveView, settings: Settings, publish: Callable[[], Awaitable[object]]) -> str:
    """Publish on the refresh interval until the person finishes; returns how they finished."""
    finished: list[str] = []
    timeout_s = settings.login_timeout_ms / 1000 if settings.login_timeout_ms else None

    async with anyio.create_task_group() as tg:

        def finish(how: str) -> None:
            if not finished:
                finished.append(how)
            tg.cancel_scope.cancel()

        async def terminal() -> None:
            # Read without a thread (a thread blocked in read() would keep the process from exiting).
            fd = sys.stdin.fileno()
            while True:
                try:
                    await anyio.wait_readable(fd)
                    data = os.read(fd, 4096)
                except OSError:  # not pollable (a regular file, /dev/null): no terminal to listen to
                    return
                if not data:  # no terminal (EOF): only the page can finish
                    return
                if b"\n" in data:
                    finish("Enter on the terminal")

        async def page() -> None:
            while True:
                if not view.redeemed and time.monotonic() > view.expires_at:
                    finish(LINK_EXPIRED)  # nobody opened it: the registry only notices when asked
                if view.done.is_set():
                    finish("Done on the page")
                closed_for = time.monotonic() - view.last_disconnect
                if view.ever_connected and view.connections == 0 and closed_for > CLOSED_GRACE_S:
                    finish("the live view was closed")
                if view.ended.is_set():
                    finish("the sandbox went away")
                await anyio.sleep(POLL_S)

        async def refresh() -> None:
            while True:
                await anyio.sleep(settings.login_refresh_interval_ms / 1000)
                await publish()

        async def deadline() -> None:
            if timeout_s is not None:
                await anyio.sleep(timeout_s)
                finish(f"the login timeout ({timeout_s:g} s)")

        if sys.stdin is not None and not sys.stdin.closed and _readable_stdin():
            tg.start_soon(terminal)
        tg.start_soon(page)
        tg.start_soon(refresh)
        tg.start_soon(deadline)
    return finished[0] if finished else "?"


async def run_login(settings: Settings, request: LoginRequest, *, services: Services | None = None) -> int:
    store = ProfileStore(settings)
    lock = store.login_lock(request.owner, request.profile_id)  # validates the id, initialises the profile
    lock.acquire()  # fails fast: PROFILE_BUSY
    try:
        services = services or Services(settings.replace(keep_on_exit=False), prebuild_image=False)
        async with services.running():
            return await _login(services, request)
    finally:
        lock.release()


async def _login(services: Services, request: LoginRequest) -> int:
    settings = services.settings
    caller = Caller(owner=request.owner, session="login", trust="local")
    _say(f"starting a sandbox for the login to profile {request.profile_id!r}…")
    rec = await services.manager.create(caller, name=f"login-{request.profile_id}"[:64], network=request.network)
    opened = await services.profiles.open(caller, rec.id, request.profile_id, authoritative=True, track=False)
    binding: Binding = opened.binding
    if request.url:
        params = GotoParams(url=request.url, sessionId=binding.session_id, waitUntil="commit")
        try:
            await services.manager.call(caller, rec.id, methods.BROWSER_GOTO, params, Deadline.after(40))
        except BoxwrightError as exc:
            _say(f"could not open {request.url}: {exc.message} (navigate in the live view instead)")
    title = f"Log in, then press Done: the login is saved to profile {request.profile_id!r}."
    view, link = await services.live.link(caller, rec.id, binding.session_id, done_button=True, title=title)
    _say(
        f"Open this live view to log in (it works once, in one browser):\n\n    {link}\n\n"
        "When you are logged in, press Done on the page (or Enter here). The login is saved every "
        f"{settings.login_refresh_interval_ms / 1000:g} s meanwhile."
    )
    print(link, flush=True)
    if request.open_browser and can_open_browser():
        await anyio.to_thread.run_sync(webbrowser.open, link)

    async def publish() -> PublishOutcome | None:
        outcome = await services.profiles.publisher.publish_logged(binding)
        if outcome is not None and outcome.outcome == "published":
            _say(f"saved: profile {request.profile_id!r} version {outcome.version}")
        return outcome

    how = await _wait_for_finish(view, settings, publish)
    if how == LINK_EXPIRED:
        services.live.views.end(view)
        _say(
            f"error: {LINK_EXPIRED} ({settings.live_view_link_ttl:g} s, "
            f"{settings.env_name('live_view_link_ttl')}): nothing was saved; run `boxwright login` again"
        )
        return 1
    _say(f"finished ({how}); saving the login…")
    outcome = await services.profiles.publisher.publish_logged(binding)
    if outcome is None:
        _say(f"error: the login could not be saved to profile {request.profile_id!r} (see the log above)")
        return 1
    snapshot = await anyio.to_thread.run_sync(services.profiles.store.read, request.owner, request.profile_id)
    state = StorageState.model_validate(snapshot.state)
    _say(
        f"profile {request.profile_id!r}: {_describe(outcome, len(state.cookies))}; cookie domains: "
        f"{', '.join(state.cookie_domains()) or '(none)'}"
    )
    services.live.views.end(view)
    return 0
