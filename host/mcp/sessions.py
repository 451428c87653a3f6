"""Stateful MCP sessions over HTTP (clients of the 2025-11-25 protocol keep one open): each is bound to
the owner who opened it, and one owner may hold only so many.

Binding: the SDK ties a session to its creator's `AuthorizationContext` when the request's scope holds
an `AuthenticatedUser` (BearerAuthMiddleware puts one there for the verified owner), and answers a
request of anyone else on it — a call, a stream resumed with `Last-Event-ID`, a DELETE — exactly as
an unknown session (404).

Cap: the SDK bounds sessions for all callers together (a shared 10,000); without a cap per owner one
token could fill that and leave every other owner unable to open a session for as long as it keeps
them alive.
"""

from __future__ import annotations

import logging

from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

log = logging.getLogger(__name__)


def limit_sessions_per_owner(manager: StreamableHTTPSessionManager, limit: int) -> None:
    """Refuse a new session to an owner who holds `limit` (the SDK answers 503 "Too many open sessions").
    Wraps the SDK's admission, which runs under its session lock, so the count and the admission are one
    step; if a later SDK renames what this reads, fail at startup rather than go without the cap."""
    if not (hasattr(manager, "_admit_session") and hasattr(manager, "_session_owners")):
        raise RuntimeError("this mcp version admits sessions differently: the per-owner session cap needs updating")
    admit = manager._admit_session
    owners: dict[str, AuthorizationContext] = manager._session_owners

    def admit_within_the_cap(requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        if requestor is not None:
            held = sum(1 for other in owners.values() if other == requestor)
            if held >= limit:
                log.warning(
                    "refusing owner %s a new MCP session: %d open (limit %d)", requestor["client_id"], held, limit
                )
                return None
        return admit(requestor)

    manager._admit_session = admit_within_the_cap  # type: ignore[method-assign]
