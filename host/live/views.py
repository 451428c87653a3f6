"""Live views and their credentials.

A live view shows one browser session of one owner's sandbox. `browser_live_view` (an authenticated
call: over HTTP the caller's bearer token names the owner) makes one and returns its link:

    http://127.0.0.1:8765/live/<viewId>#token=<one-time token>

- `viewId` (128 random bits) names the view; the token (256 random bits) proves the link came from
  its owner. Only SHA-256 digests of secrets are kept.
- The token sits in the URL's fragment, which browsers never send to servers: it stays out of access
  logs, Referer headers and link previews (a chat app unfurling the link cannot use it up).
- The page sends it once (POST, same origin only) and gets in exchange an HttpOnly, SameSite=Strict
  cookie scoped to `/live/<viewId>` — the credential of that browser tab from then on (reloads work).
  The token is then spent: a second browser with the same link is refused, as is a wrong token.
- An unused link expires after `live_view_link_ttl` seconds; a view ends with its session or sandbox.
- One viewer per view: a new WebSocket for a view (the page reloaded, or opened in a second tab with
  the same cookie) replaces the one before it, which is told so with a final notice and closed — the
  newest is where the person is. Each viewer costs a screencast in the sandbox's Chromium, so a cookie
  must not buy an unbounded number of them.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass, field

import anyio

from rpc.errors import BoxwrightError, ErrorCode

VIEW_ID_BYTES = 16
SECRET_BYTES = 32


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(eq=False)
class LiveView:
    view_id: str
    owner: str
    sandbox_id: str
    session_id: str
    token_sha256: str = field(repr=False)
    expires_at: float  # monotonic; the link's, until it is used
    done_button: bool = False  # a login: the page offers "Done"
    title: str = ""
    cookie_sha256: str | None = field(default=None, repr=False)
    connections: int = 0
    ever_connected: bool = False
    last_disconnect: float = 0.0
    done: anyio.Event = field(default_factory=anyio.Event)  # the person pressed Done
    ended: anyio.Event = field(default_factory=anyio.Event)  # the view is over (session or sandbox gone)
    _replaced: anyio.Event | None = field(default=None, repr=False)  # the current viewer's: set when a newer comes

    @property
    def redeemed(self) -> bool:
        return self.cookie_sha256 is not None

    def connected(self) -> anyio.Event:
        """A new viewer, replacing the one before it; the returned event is set when a newer one replaces it."""
        if self._replaced is not None:
            self._replaced.set()
        replaced = self._replaced = anyio.Event()
        self.connections += 1
        self.ever_connected = True
        return replaced

    def disconnected(self) -> None:
        self.connections -= 1
        self.last_disconnect = time.monotonic()


def refused(message: str, hint: str) -> BoxwrightError:
    return BoxwrightError(ErrorCode.UNAUTHORIZED, message, hint=hint)


NEW_LINK_HINT = "ask for a new link (browser_live_view, or restart `boxwright login`)"


class ViewRegistry:
    def __init__(self, link_ttl_s: float) -> None:
        self.link_ttl_s = link_ttl_s
        self._views: dict[str, LiveView] = {}

    def create(
        self, owner: str, sandbox_id: str, session_id: str, *, done_button: bool = False, title: str = ""
    ) -> tuple[LiveView, str]:
        """A new view and its one-time token (returned once, never stored)."""
        self._expire()
        token = secrets.token_urlsafe(SECRET_BYTES)
        view = LiveView(
            view_id=secrets.token_urlsafe(VIEW_ID_BYTES),
            owner=owner,
            sandbox_id=sandbox_id,
            session_id=session_id,
            token_sha256=_digest(token),
            expires_at=time.monotonic() + self.link_ttl_s,
            done_button=done_button,
            title=title,
        )
        self._views[view.view_id] = view
        return view, token

    def get(self, view_id: str) -> LiveView | None:
        self._expire()
        return self._views.get(view_id)

    def redeem(self, view_id: str, token: str) -> tuple[LiveView, str]:
        """Spend the link's token; returns the view and the secret of its cookie."""
        view = self.get(view_id)
        if view is None or not hmac.compare_digest(_digest(token), view.token_sha256):
            raise refused("this live view link is not valid (wrong token, expired, or its view ended)", NEW_LINK_HINT)
        if view.redeemed:
            raise refused("this live view link was already used (links work once)", NEW_LINK_HINT)
        secret = secrets.token_urlsafe(SECRET_BYTES)
        view.cookie_sha256 = _digest(secret)
        return view, secret

    def by_cookie(self, view_id: str, cookie: str | None) -> LiveView | None:
        view = self.get(view_id)
        if view is None or view.cookie_sha256 is None or not cookie:
            return None
        return view if hmac.compare_digest(_digest(cookie), view.cookie_sha256) else None

    def watched(self, sandbox_id: str) -> bool:
        """Whether a person has a live view of the sandbox open (the idle timeout must not take it away)."""
        return any(v.sandbox_id == sandbox_id and v.connections > 0 for v in self._views.values())

    def end(self, view: LiveView) -> None:
        self._views.pop(view.view_id, None)
        view.ended.set()

    def end_where(self, sandbox_id: str, session_id: str | None = None) -> None:
        """The sandbox (or one of its sessions) is gone: so are its views."""
        for view in list(self._views.values()):
            if view.sandbox_id == sandbox_id and session_id in (None, view.session_id):
                self.end(view)

    def _expire(self) -> None:
        now = time.monotonic()
        for view in [v for v in self._views.values() if not v.redeemed and v.expires_at < now]:
            self.end(view)
