"""Bearer tokens for the HTTP transport: each token names an owner, and owners see only their own
sandboxes. Only SHA-256 hashes of tokens are stored (`boxwright token add`), never the tokens.

The credentials of an HTTP request are read once, here, by `BearerAuthMiddleware`: it refuses the
request (401) unless it carries exactly one well-formed `Authorization: Bearer` header with a known
token, and records the verified owner in the ASGI scope (`OWNER_SCOPE_KEY`). That record is the only
source of a caller's identity (host.mcp.caller never reads headers for it).
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.types import ASGIApp, Receive, Scope, Send

from rpc.auth import bearer_token, token_sha256
from rpc.errors import BoxwrightError, ErrorCode, unauthorized

log = logging.getLogger(__name__)

TOKEN_HINT = "send one 'Authorization: Bearer <token>' header (create a token with `boxwright token add`)"
OWNER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$"
OWNER_SCOPE_KEY = "boxwright.owner"  # set by BearerAuthMiddleware on every request it lets through
USER_SCOPE_KEY = "user"  # the same owner as the SDK reads it: it binds each MCP session to its creator
LOCAL_OWNER = "local"


def owner_problem(owner: str) -> str | None:
    """Why `owner` cannot be a token's owner, or None. `local` is taken: it is stdio's and the command line's
    owner, so a token named so would reach their sandboxes and login profiles over HTTP."""
    if not re.fullmatch(OWNER_PATTERN, owner):
        return f"owner must match {OWNER_PATTERN}"
    if owner == LOCAL_OWNER:
        return (
            f"{LOCAL_OWNER!r} is the owner of stdio and the command line (their sandboxes and profiles); choose another"
        )
    return None


def default_token_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "boxwright" / "tokens.json"


class TokenStore:
    def __init__(self, owners_by_digest: dict[str, str]) -> None:
        self._owners = dict(owners_by_digest)

    def __len__(self) -> int:
        return len(self._owners)

    @classmethod
    def load(cls, path: Path) -> TokenStore:
        if not path.exists():
            return cls({})
        data = json.loads(path.read_text())
        owners: dict[str, str] = {}
        for entry in data.get("tokens", []):
            problem = owner_problem(entry["owner"])
            if problem is None:
                owners[entry["sha256"]] = entry["owner"]
            else:  # a hand-edited file: that token lets nobody in
                log.warning("a token of %s in %s is ignored: %s", ascii(entry["owner"][:64]), path, problem)
        return cls(owners)

    @staticmethod
    def add(path: Path, owner: str) -> str:
        """Create a token for `owner`, store its hash (file mode 600) and return the token once."""
        token = "bxw_" + secrets.token_urlsafe(32)
        data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {"tokens": []}
        data["tokens"].append({"owner": owner, "sha256": token_sha256(token)})
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=2)
        os.replace(tmp, path)
        return token

    def owner_of(self, authorization: str | None) -> str | None:
        token = bearer_token(authorization)
        return self._owners.get(token_sha256(token)) if token else None


def verified_owner(tokens: TokenStore | None, raw_headers: Iterable[tuple[bytes, bytes]]) -> str:
    """The owner named by a request's credentials; UNAUTHORIZED unless there is exactly one well-formed
    bearer header with a known token. Without tokens (an anonymous loopback server) everyone is `local`."""
    if tokens is None:
        return LOCAL_OWNER
    values = [value for name, value in raw_headers if name.lower() == b"authorization"]
    if len(values) > 1:
        raise BoxwrightError(
            ErrorCode.UNAUTHORIZED, f"{len(values)} Authorization headers: send exactly one", hint=TOKEN_HINT
        )
    authorization = values[0].decode("latin-1") if values else None
    owner = tokens.owner_of(authorization)
    if owner is None:
        raise unauthorized(authorization, hint=TOKEN_HINT)
    return owner


class BearerAuthMiddleware:
    """Verifies the credentials of every HTTP request before the MCP layer sees it (401 otherwise) and
    records the verified owner in the scope. `tokens=None`: an anonymous loopback server (owner `local`).
    `open_prefixes`: routes that verify credentials of their own (the live view: a one-time link, then
    a cookie; a person's browser cannot send a bearer token) — let through, HTTP and WebSocket alike,
    with no owner recorded."""

    def __init__(
        self,
        app: ASGIApp,
        tokens: TokenStore | None,
        open_paths: frozenset[str] = frozenset({"/healthz"}),
        open_prefixes: tuple[str, ...] = (),
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.open_paths = open_paths
        self.open_prefixes = open_prefixes  # routes that check credentials of their own (the live view)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path") or ""
        opened = scope["type"] == "http" and path in self.open_paths
        opened = opened or (scope["type"] in ("http", "websocket") and path.startswith(self.open_prefixes))
        if scope["type"] == "lifespan" or opened:
            scope.pop(OWNER_SCOPE_KEY, None)
            scope.pop(USER_SCOPE_KEY, None)
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # websockets other than the open routes: not part of this server
            await send({"type": "websocket.close", "code": 1008})
            return
        scope.pop(OWNER_SCOPE_KEY, None)  # only this middleware names the owner
        scope.pop(USER_SCOPE_KEY, None)
        try:
            owner = verified_owner(self.tokens, scope.get("headers") or [])
        except BoxwrightError as refused:
            body = refused.to_body().model_dump_json().encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        scope[OWNER_SCOPE_KEY] = owner
        scope[USER_SCOPE_KEY] = sdk_user(owner)
        await self.app(scope, receive, send)


def sdk_user(owner: str) -> AuthenticatedUser:
    """The owner as the SDK's session manager compares callers (host.mcp.sessions). It carries no token:
    nothing downstream needs one, and the owner is the principal."""
    return AuthenticatedUser(AccessToken(token="", client_id=owner, scopes=[]))
