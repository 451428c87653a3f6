"""HTTP bearer tokens (hash-only storage, owner lookup, 401) and the ownership locks."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse

from host.mcp.auth import BearerAuthMiddleware, TokenStore
from host.sandboxes.locks import OwnershipLocks


def test_token_file_stores_only_hashes_with_private_mode(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "tokens.json"
    token = TokenStore.add(path, "alice")
    assert token not in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    store = TokenStore.load(path)
    assert store.owner_of(f"Bearer {token}") == "alice"
    assert store.owner_of("Bearer nope") is None
    assert store.owner_of(None) is None
    assert json.loads(path.read_text())["tokens"][0]["owner"] == "alice"


async def test_middleware_refuses_unknown_tokens(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    token = TokenStore.add(path, "bob")

    async def hello(_: Request) -> PlainTextResponse:
        return PlainTextResponse("hi")

    app = Starlette()
    app.add_route("/mcp", hello)
    app.add_route("/healthz", hello)
    app.add_middleware(BearerAuthMiddleware, tokens=TokenStore.load(path))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        denied = await client.get("/mcp")
        assert denied.status_code == 401
        assert denied.json()["errorCode"] == "UNAUTHORIZED"
        assert (await client.get("/mcp", headers={"Authorization": "Bearer wrong"})).status_code == 401
        assert (await client.get("/mcp", headers={"Authorization": f"Bearer {token}"})).text == "hi"
        assert (await client.get("/healthz")).status_code == 200


def test_lock_is_exclusive_across_instances_and_released(tmp_path: Path) -> None:
    a = OwnershipLocks(tmp_path, "ns")
    b = OwnershipLocks(tmp_path, "ns")
    assert a.try_acquire("sbx_1")
    assert not b.try_acquire("sbx_1")
    a.release("sbx_1", forget=False)
    assert b.try_acquire("sbx_1")
    assert OwnershipLocks(tmp_path, "other-ns").try_acquire("sbx_1")
