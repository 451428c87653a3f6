"""Bearer tokens for the HTTP transport: each token names an owner, and owners see only their own
sandboxes. Only SHA-256 hashes of tokens are stored (`boxwright token add`), never the tokens."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from rpc.auth import bearer_token, token_sha256
from rpc.errors import unauthorized

TOKEN_HINT = "send 'Authorization: Bearer <token>' (create one with `boxwright token add`)"
OWNER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$"


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
        return cls({e["sha256"]: e["owner"] for e in data.get("tokens", [])})

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


class BearerAuthMiddleware:
    """Refuses HTTP requests without a known bearer token (401), before the MCP layer sees them."""

    def __init__(self, app: ASGIApp, tokens: TokenStore, open_paths: frozenset[str] = frozenset({"/healthz"})):
        self.app = app
        self.tokens = tokens
        self.open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in self.open_paths:
            await self.app(scope, receive, send)
            return
        auth = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        if self.tokens.owner_of(auth) is None:
            refused = unauthorized(auth, hint=TOKEN_HINT)
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
        await self.app(scope, receive, send)
