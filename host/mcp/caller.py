"""Who is calling a tool: stdio callers are the local user; an HTTP caller is the owner that
BearerAuthMiddleware verified for the request (recorded in its ASGI scope) — never a header read here."""

from __future__ import annotations

from dataclasses import dataclass

from mcp.server.mcpserver import Context

from host.mcp.auth import LOCAL_OWNER, OWNER_SCOPE_KEY, TOKEN_HINT
from host.sandboxes.models import Caller, TrustLevel
from rpc.errors import BoxwrightError, ErrorCode


@dataclass(frozen=True)
class CallerResolver:
    transport: str  # "stdio" | "http"
    http_trust: TrustLevel = "remote"

    def __call__(self, ctx: Context) -> Caller:
        if self.transport == "stdio":
            return Caller(owner=LOCAL_OWNER, session="stdio", trust="local")
        request = ctx.request_context.request
        scope = getattr(request, "scope", None)
        owner = scope.get(OWNER_SCOPE_KEY) if isinstance(scope, dict) else None
        if not isinstance(owner, str):
            # Fail closed: an HTTP request that did not pass the middleware has no identity at all.
            raise BoxwrightError(ErrorCode.UNAUTHORIZED, "the request carries no verified identity", hint=TOKEN_HINT)
        # Protocol 2025-11-25 and earlier: the transport's session. 2026-07-28 requests carry none, and
        # one owner may run several clients at once: no session, so no shared default sandbox.
        session = (ctx.headers or {}).get("mcp-session-id") or None
        return Caller(owner=owner, session=session, trust=self.http_trust)


def require_local(caller: Caller, what: str) -> None:
    """Remote callers may not run arbitrary scripts in a page: a script could act as the logged-in user of a
    login profile, or read what the page shows it."""
    if caller.trust != "local":
        raise BoxwrightError(
            ErrorCode.TRUST_LEVEL_NOT_ALLOWED,
            f"{what} runs arbitrary JavaScript and is only allowed for local (stdio) callers",
            hint="run the server over stdio, or set BOXWRIGHT_HTTP_TRUST_LEVEL=local for HTTP callers you trust",
            details={"trustLevel": caller.trust},
        )
