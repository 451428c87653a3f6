"""Who is calling a tool: stdio callers are the local user; HTTP callers are named by their token."""

from __future__ import annotations

from dataclasses import dataclass

from mcp.server.mcpserver import Context

from host.mcp.auth import TokenStore
from host.sandboxes.models import Caller, TrustLevel

LOCAL_OWNER = "local"


@dataclass(frozen=True)
class CallerResolver:
    transport: str  # "stdio" | "http"
    tokens: TokenStore | None = None
    http_trust: TrustLevel = "remote"

    def __call__(self, ctx: Context) -> Caller:
        headers = ctx.headers
        if self.transport == "stdio" or headers is None:
            return Caller(owner=LOCAL_OWNER, session="stdio", trust="local")
        owner = LOCAL_OWNER
        if self.tokens is not None:
            # The HTTP middleware already refused unknown tokens; this only names the owner.
            owner = self.tokens.owner_of(headers.get("authorization")) or LOCAL_OWNER
        session = headers.get("mcp-session-id") or "http"
        return Caller(owner=owner, session=session, trust=self.http_trust)
