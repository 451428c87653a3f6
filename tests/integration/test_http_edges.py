"""The HTTP server's edges, probed with raw requests (no MCP client in between): one parse of the
credentials (a duplicated or malformed Authorization header is a 401, never a fallback owner) and
Host/Origin checks (DNS rebinding) for every address the server may be bound to."""

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


def post(host: str, port: int, headers: list[tuple[str, str]], *, host_header: str | None = None) -> int:
    """POST an MCP initialize with exactly these headers (repeats kept); returns the status."""
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.putrequest("POST", "/mcp", skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host_header or f"{host}:{port}")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Accept", "application/json, text/event-stream")
        conn.putheader("Content-Length", str(len(INITIALIZE)))
        for name, value in headers:
            conn.putheader(name, value)
        conn.endheaders(INITIALIZE)
        response = conn.getresponse()
        response.read()
        return response.status
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
