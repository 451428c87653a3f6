"""The live view as the rest of the host sees it: links for sessions, the routes that serve them, and
"the agent is acting" from every call into a sandbox (a SandboxManager listener)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import BaseRoute

from host.config import Settings
from host.live.activity import Activity
from host.live.listener import LoopbackListener
from host.live.routes import live_routes
from host.live.views import LiveView, ViewRegistry
from host.profiles.publisher import SnapshotPublisher
from host.sandboxes.manager import SandboxManager
from host.sandboxes.models import Caller, SandboxRecord
from rpc.methods import Method

# The SDK's own defaults for a server bound to loopback (the stdio listener is always loopback).
LOOPBACK_SECURITY = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
    allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
)


class LiveViewService:
    def __init__(self, settings: Settings, manager: SandboxManager, publisher: SnapshotPublisher | None) -> None:
        self.settings = settings
        self.manager = manager
        self.publisher = publisher
        self.views = ViewRegistry(settings.live_view_link_ttl)
        self.activity = Activity()
        self.base_url_setting = settings.live_view_base_url.rstrip("/") if settings.live_view_base_url else None
        self.security = LOOPBACK_SECURITY
        self._http_base: str | None = None
        self._listener = LoopbackListener(settings.live_view_port)
        manager.listeners.append(self)

    def serve_on(self, base_url: str, security: TransportSecuritySettings | None) -> list[BaseRoute]:
        """`serve --http`: links point at that server, which serves these routes behind its own checks."""
        self._http_base = base_url.rstrip("/")
        if security is not None:
            self.security = security
        return live_routes(self)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self._listener.running():
            yield

    async def base_url(self) -> str:
        if self.base_url_setting:
            if self._http_base is None:  # a public base for the loopback listener: it must be running
                await self._listener.ensure(live_routes(self))
            return self.base_url_setting
        return self._http_base or await self._listener.ensure(live_routes(self))

    async def link(
        self, caller: Caller, sandbox_id: str, session_id: str, *, done_button: bool = False, title: str = ""
    ) -> tuple[LiveView, str]:
        """A new live view of the caller's session and its one-time link."""
        rec = self.manager.resolve(caller, sandbox_id)
        base = await self.base_url()
        view, token = self.views.create(caller.owner, rec.id, session_id, done_button=done_button, title=title)
        return view, f"{base}/live/{view.view_id}#token={token}"

    def person_acted(self, view: LiveView) -> None:
        """Input from the person: a profile session publishes it like a tool call's changes."""
        if self.publisher is not None:
            self.publisher.poke(view.sandbox_id, view.session_id)

    def session_closed(self, sandbox_id: str, session_id: str) -> None:
        self.views.end_where(sandbox_id, session_id)

    # -- SandboxManager listener -------------------------------------------------------------
    def call_started(self, rec: SandboxRecord, method: Method[Any, Any], params: Any) -> None:
        self.activity.call_started(rec, method, params)

    def call_ended(self, rec: SandboxRecord, method: Method[Any, Any], params: Any) -> None:
        self.activity.call_ended(rec, method, params)

    async def sandbox_removing(self, rec: SandboxRecord, *, reachable: bool) -> None:
        self.views.end_where(rec.id)
