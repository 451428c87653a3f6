"""The HTTP server's edges, probed with raw requests (no MCP client in between): one parse of the
credentials (a duplicated or malformed Authorization header is a 401, never a fallback owner),
Host/Origin checks (DNS rebinding) for every address the server may be bound to, and MCP sessions
bound to the owner who opened them, so many per owner."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import pytest

from tests.integration.conftest import HttpServer, own_env

INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
    }
).encode()


def post(
    host: str, port: int, headers: list[tuple[str, str]], *, host_header: str | None = None, path: str = "/mcp"
) -> int:
    """POST an MCP initialize with exactly these headers (repeats kept); returns the status."""
    return request(host, port, headers, host_header=host_header, path=path)[0]


def request(
    host: str,
    port: int,
    headers: list[tuple[str, str]],
    *,
    method: str = "POST",
    body: bytes | None = INITIALIZE,
    host_header: str | None = None,
    path: str = "/mcp",
) -> tuple[int, http.client.HTTPMessage, bytes]:
    """One request with exactly these headers (repeats kept): status, headers, body."""
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host_header or f"{host}:{port}")
        conn.putheader("Accept", "application/json, text/event-stream")
        if body is not None:
            conn.putheader("Content-Type", "application/json")
            conn.putheader("Content-Length", str(len(body)))
        for name, value in headers:
            conn.putheader(name, value)
        conn.endheaders(body)
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


@pytest.mark.parametrize(
    "auth",
    [
        pytest.param(["Bearer bxw_not-a-token", "Bearer {alice}"], id="bogus-then-valid"),
        pytest.param(["Bearer {alice}", "Bearer bxw_not-a-token"], id="valid-then-bogus"),
        pytest.param(["Bearer {alice}", "Bearer {bob}"], id="two-owners"),
        pytest.param(["Bearer {alice}", "Bearer {alice}"], id="same-twice"),
        pytest.param(["Bearer {alice}, Bearer {bob}"], id="two-in-one-header"),
        pytest.param(["Bearer {alice} extra"], id="trailing-garbage"),
        pytest.param(["Basic {alice}"], id="other-scheme"),
        pytest.param([], id="none"),
    ],
)
def test_duplicated_or_malformed_credentials_are_refused(http_server: HttpServer, tokens: dict, auth: list) -> None:
    headers = [("Authorization", value.format(**tokens)) for value in auth]
    assert post("127.0.0.1", http_server.port, headers) == 401


def test_exactly_one_valid_bearer_header_is_accepted(http_server: HttpServer, tokens: dict) -> None:
    """The positive control of the test above: the same request with one good header gets through."""
    assert post("127.0.0.1", http_server.port, [("Authorization", f"Bearer {tokens['alice']}")]) == 200


@pytest.fixture
def anonymous_env(server_env: dict, tmp_path: Path) -> dict:
    """A server of its own namespace without tokens (loopback only)."""
    return own_env(server_env, "hosts", tmp_path / "state")


def test_dns_rebinding_protection_on_any_loopback_address(anonymous_env: dict, tmp_path: Path) -> None:
    """Bound to 127.0.0.2 the server checks Host and Origin like on 127.0.0.1 (the SDK alone does not)."""
    server = HttpServer(anonymous_env, tmp_path / "server.log", host="127.0.0.2")
    try:
        assert post(server.host, server.port, []) == 200
        assert post(server.host, server.port, [], host_header=f"localhost:{server.port}") == 200
        assert post(server.host, server.port, [], host_header=f"rebound.example:{server.port}") == 421
        assert post(server.host, server.port, [("Origin", "http://rebound.example")]) == 403
        # /mcp/ is served as /mcp, checks included (it was a redirect to the Host named, foreign or not).
        assert post(server.host, server.port, [], path="/mcp/") == 200
        assert post(server.host, server.port, [], host_header=f"rebound.example:{server.port}", path="/mcp/") == 421
        assert "accepting Host headers: 127.0.0.1:*, localhost:*" in server.log()
    finally:
        server.stop()


def test_allowed_hosts_are_configurable(anonymous_env: dict, tmp_path: Path) -> None:
    """--allowed-host replaces the default list (e.g. behind a reverse proxy with its own name)."""
    server = HttpServer(anonymous_env, tmp_path / "server.log", ["--allowed-host", "mcp.example.org"], host="127.0.0.2")
    try:
        assert post(server.host, server.port, [], host_header="mcp.example.org") == 200
        assert post(server.host, server.port, []) == 421
    finally:
        server.stop()
    with pytest.raises(RuntimeError) as refused:
        HttpServer(anonymous_env, tmp_path / "bad.log", ["--allowed-host", "http://mcp.example.org/"])
    assert "allowed host 'http://mcp.example.org/' is not a host name" in str(refused.value)


def open_session(port: int, token: str) -> str:
    status, headers, _ = request("127.0.0.1", port, [("Authorization", f"Bearer {token}")])
    assert status == 200 and headers["mcp-session-id"], status
    return headers["mcp-session-id"]


def on_session(port: int, token: str, session: str, method: str, **extra: str) -> tuple[int, bytes]:
    """A request on an open session (protocol 2025-11-25): tools/list for POST, the stream for GET."""
    body = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode() if method == "POST" else None
    headers = [
        ("Authorization", f"Bearer {token}"),
        ("Mcp-Session-Id", session),
        ("Mcp-Protocol-Version", "2025-11-25"),
    ]
    status, _, answer = request("127.0.0.1", port, headers + list(extra.items()), method=method, body=body)
    return status, answer


def test_a_session_answers_only_the_owner_who_opened_it(http_server: HttpServer, tokens: dict) -> None:
    """Another owner holding the session id gets what an unknown session gets (404): no call on it, no
    replay of its stream (Last-Event-ID), no ending it; the owner's session goes on."""
    port, alice, bob = http_server.port, tokens["alice"], tokens["bob"]
    session = open_session(port, alice)
    assert on_session(port, alice, session, "POST")[0] == 200
    unknown = on_session(port, bob, "f" * 32, "POST")
    assert unknown[0] == 404
    assert on_session(port, bob, session, "POST") == unknown
    assert on_session(port, bob, session, "GET", **{"Last-Event-ID": "1"})[0] == 404
    assert on_session(port, bob, session, "DELETE")[0] == 404
    status, answer = on_session(port, alice, session, "POST")
    assert status == 200 and b"sandbox_create" in answer
    assert on_session(port, alice, session, "DELETE")[0] == 200
    assert on_session(port, alice, session, "POST")[0] == 404


def test_one_owner_cannot_hold_every_session(server_env: dict, tokens: dict, tmp_path: Path) -> None:
    """BOXWRIGHT_MAX_SESSIONS_PER_OWNER: past it the owner is refused a new session (503) while another
    owner still opens one; ending a session makes room again."""
    env = own_env(server_env, "sessions", tmp_path / "state", BOXWRIGHT_MAX_SESSIONS_PER_OWNER="2")
    env["XDG_CONFIG_HOME"] = server_env["XDG_CONFIG_HOME"]  # the tokens of alice and bob
    server = HttpServer(env, tmp_path / "server.log")
    try:
        alice = [open_session(server.port, tokens["alice"]) for _ in range(2)]
        status, _, answer = request("127.0.0.1", server.port, [("Authorization", f"Bearer {tokens['alice']}")])
        assert status == 503 and b"Too many open sessions" in answer
        open_session(server.port, tokens["bob"])
        assert on_session(server.port, tokens["alice"], alice[0], "DELETE")[0] == 200
        open_session(server.port, tokens["alice"])
        assert "refusing owner alice a new MCP session: 2 open (limit 2)" in server.log()
        assert tokens["alice"] not in server.log()
    finally:
        server.stop()
