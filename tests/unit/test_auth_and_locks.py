"""HTTP bearer tokens (hash-only storage, owner lookup, 401) and the ownership locks."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse

from host import identity
from host.mcp.auth import OWNER_SCOPE_KEY, BearerAuthMiddleware, TokenStore, verified_owner
from host.sandboxes.locks import OwnershipLocks
from rpc.auth import bearer_token, token_sha256
from rpc.errors import BoxwrightError, ErrorCode


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


async def test_middleware_names_the_owner_once_and_refuses_duplicates(tmp_path: Path) -> None:
    """The verified owner lands in the scope; two Authorization headers (even one valid) are a 401, and an
    owner planted in the scope by anything before the middleware is discarded."""
    path = tmp_path / "tokens.json"
    alice = TokenStore.add(path, "alice")
    seen: list[object] = []

    async def app(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        seen.append(scope.get(OWNER_SCOPE_KEY))
        await PlainTextResponse("hi")(scope, receive, send)

    guarded = BearerAuthMiddleware(app, tokens=TokenStore.load(path))

    async def planted(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        scope[OWNER_SCOPE_KEY] = "local"
        await guarded(scope, receive, send)

    transport = httpx.ASGITransport(app=planted)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        ok = await client.get("/mcp", headers={"Authorization": f"Bearer {alice}"})
        assert ok.status_code == 200 and seen == ["alice"]
        twice = httpx.Headers([("Authorization", "Bearer nope"), ("Authorization", f"Bearer {alice}")])
        refused = await client.get("/mcp", headers=twice)
        assert refused.status_code == 401 and "2 Authorization headers" in refused.json()["error"]
        assert (await client.get("/mcp")).status_code == 401
    assert seen == ["alice"]


def test_owner_comes_only_from_the_verified_credentials() -> None:
    store = TokenStore({token_sha256("t1"): "alice"})
    assert verified_owner(store, [(b"authorization", b"Bearer t1")]) == "alice"
    assert verified_owner(None, [(b"authorization", b"Bearer whatever")]) == "local"  # anonymous loopback server
    for headers in ([], [(b"authorization", b"Bearer t2")], [(b"Authorization", b"Bearer t1")] * 2):
        with pytest.raises(BoxwrightError) as info:
            verified_owner(store, headers)
        assert info.value.code is ErrorCode.UNAUTHORIZED
    assert bearer_token("Bearer a, Bearer b") is None and bearer_token("Bearer  a ") == "a"


def test_server_identity_is_made_once_private_and_refused_when_readable(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = identity.load_or_create(state)
    assert identity.load_or_create(state) == first and identity.find(state) == first
    path = state / identity.FILE_NAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(state.stat().st_mode) == 0o700
    assert first.secret.hex() not in repr(first)
    other = identity.load_or_create(tmp_path / "other")
    assert other.server_id != first.server_id
    # Tokens are derived: the same for the same sandbox, different per sandbox, namespace and server.
    token = first.sandbox_token("ns", "sbx_1")
    assert token == first.sandbox_token("ns", "sbx_1") and len(token) >= 43
    assert len({token, first.sandbox_token("ns", "sbx_2"), first.sandbox_token("ns2", "sbx_1")}) == 3
    assert other.sandbox_token("ns", "sbx_1") != token and first.runner_secret("ns", "sbx_1") != token
    path.chmod(0o640)
    with pytest.raises(identity.IdentityError, match="chmod 600"):
        identity.load_or_create(state)
    assert identity.find(tmp_path / "none") is None


async def test_open_prefixes_pass_without_an_owner(tmp_path: Path) -> None:
    """The live view's routes verify credentials of their own (a one-time link, then a cookie): the
    middleware lets them through — HTTP and WebSocket — with no owner in the scope, not even a planted
    one or a valid bearer token's; every other WebSocket is closed and /mcp still needs a token."""
    path = tmp_path / "tokens.json"
    alice = TokenStore.add(path, "alice")
    seen: list[tuple[str, object]] = []

    async def app(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        seen.append((scope["path"], scope.get(OWNER_SCOPE_KEY, "none")))
        if scope["type"] == "http":
            await PlainTextResponse("hi")(scope, receive, send)

    guarded = BearerAuthMiddleware(app, tokens=TokenStore.load(path), open_prefixes=("/live/",))

    async def planted(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        scope[OWNER_SCOPE_KEY] = "alice"
        await guarded(scope, receive, send)

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=planted), base_url="http://t") as client:
        assert (await client.get("/live/v1")).status_code == 200
        assert (await client.get("/live/v1", headers={"Authorization": f"Bearer {alice}"})).status_code == 200
        assert (await client.get("/mcp")).status_code == 401
        assert (await client.get("/livex")).status_code == 401
    sent: list[dict[str, object]] = []

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    async def receive() -> dict[str, object]:
        return {"type": "websocket.connect"}

    for ws_path in ("/live/v1/ws", "/mcp"):
        await planted({"type": "websocket", "path": ws_path, "headers": []}, receive, send)
    assert seen == [("/live/v1", "none"), ("/live/v1", "none"), ("/live/v1/ws", "none")]
    assert sent == [{"type": "websocket.close", "code": 1008}]  # the WebSocket outside /live/
