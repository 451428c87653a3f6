"""Every bad input ends in a clear errorCode and recoverHint — never a traceback or a hang."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import docker
import httpx

from host import identity, labels
from tests.integration.conftest import HttpServer
from tests.integration.mcp_helpers import Session, http_session


@asynccontextmanager
async def sandbox(http_server: HttpServer, token: str) -> AsyncIterator[tuple[Session, str]]:
    async with http_session(http_server.url, token) as s:
        sid = (await s.ok("sandbox_create"))["sandboxId"]
        try:
            yield s, sid
        finally:
            await s.call("sandbox_destroy", {"sandboxId": sid})


ILL_FORMED = [
    ("file_read", {}, "path"),
    ("file_read", {"path": 7}, "path"),
    ("code_run", {"language": "python", "code": "1", "timeoutMs": "soon"}, "timeoutMs"),
    ("code_run", {"language": "python", "code": "1", "timeoutMs": 10**9}, "timeoutMs"),
    ("code_run", {"language": "ruby", "code": "puts 1"}, "language"),
    ("code_run", {"language": "bash"}, "code"),
    ("file_write", {"path": "a", "content": "x", "mode": "w"}, "mode"),
    ("file_read", {"path": "a", "encoding": "latin-1"}, "encoding"),
    ("sandbox_create", {"ttlSeconds": -1}, "ttlSeconds"),
    ("process_output", {"processId": ""}, "processId"),
]

PATHS = [
    ("../../etc/passwd", "PATH_OUTSIDE_WORKSPACE"),
    ("/etc/passwd", "PATH_OUTSIDE_WORKSPACE"),
    ("escape/passwd", "PATH_OUTSIDE_WORKSPACE"),
    ("nope.txt", "FILE_NOT_FOUND"),
    (".", "NOT_A_FILE"),
]


async def test_ill_formed_arguments_and_confined_paths(http_server: HttpServer, tokens: dict) -> None:
    async with sandbox(http_server, tokens["bob"]) as (s, _):
        for tool, args, field in ILL_FORMED:
            a = await s.error(tool, args)
            assert a.code == "INVALID_PARAMETER", (tool, args, a.text)
            assert field in [e["field"] for e in a.data["details"]["errors"]], (tool, args, a.data)

        await s.ok("code_run", {"language": "bash", "code": "ln -sfn /etc escape"})
        for path, code in PATHS:
            assert (await s.error("file_read", {"path": path})).code == code, path

        await s.ok("code_run", {"language": "bash", "code": "ln -sfn /tmp out && ln -sfn notes/x inside"})
        assert (await s.error("file_write", {"path": "out/planted", "content": "x"})).code == "PATH_OUTSIDE_WORKSPACE"
        assert (await s.error("file_list", {"path": "out"})).code == "PATH_OUTSIDE_WORKSPACE"
        await s.ok("file_write", {"path": "notes/x", "content": "ok"})  # in-workspace symlinks are fine
        assert (await s.ok("file_read", {"path": "inside"}))["content"] == "ok"

        await s.ok("file_write", {"path": "b.bin", "content": "//79", "encoding": "base64"})
        a = await s.error("file_read", {"path": "b.bin"})
        assert a.code == "NOT_TEXT" and "base64" in a.data["recoverHint"]
        bad = await s.error("file_write", {"path": "c.bin", "content": "not base64!", "encoding": "base64"})
        assert bad.code == "INVALID_PARAMETER"


async def test_unknown_and_foreign_sandboxes(http_server: HttpServer, tokens: dict) -> None:
    async with (
        http_session(http_server.url, tokens["alice"]) as alice,
        http_session(http_server.url, tokens["bob"]) as bob,
    ):
        assert (await alice.error("code_run", {"language": "bash", "code": "true"})).code in (
            "NO_DEFAULT_SANDBOX",
            "AMBIGUOUS_SANDBOX",
        )
        missing = await alice.error("file_list", {"sandboxId": "sbx_doesnotexist"})
        assert missing.code == "SANDBOX_NOT_FOUND"
        sid = (await alice.ok("sandbox_create"))["sandboxId"]
        try:
            # Bob can neither see nor touch Alice's sandbox, and learns nothing about it.
            assert sid not in [x["sandboxId"] for x in (await bob.ok("sandbox_list"))["sandboxes"]]
            foreign = await bob.error("file_list", {"sandboxId": sid})
            assert foreign.code == "SANDBOX_NOT_FOUND" and "reason" not in foreign.data["details"]
            assert (await bob.error("sandbox_destroy", {"sandboxId": sid})).code == "SANDBOX_NOT_FOUND"
            await alice.ok("file_list", {"sandboxId": sid})
        finally:
            await alice.ok("sandbox_destroy", {"sandboxId": sid})
        again = await alice.error("sandbox_destroy", {"sandboxId": sid})
        assert again.code == "SANDBOX_NOT_FOUND" and again.data["details"]["reason"] == "destroyed"


async def test_http_without_or_with_a_wrong_token_is_refused(http_server: HttpServer) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with httpx.AsyncClient() as client:
        for headers in ({}, {"Authorization": "Bearer not-a-token"}):
            r = await client.post(http_server.url, json=body, headers=headers)
            assert r.status_code == 401
            assert r.json()["errorCode"] == "UNAUTHORIZED"


async def test_agent_rpc_needs_the_token_and_survives_garbage(
    http_server: HttpServer, tokens: dict, docker_client: docker.DockerClient, server_env: dict
) -> None:
    server = identity.find(Path(server_env["BOXWRIGHT_STATE_DIR"]))
    assert server is not None
    async with sandbox(http_server, tokens["bob"]) as (_, sid):
        await _check_agent_endpoint(sid, docker_client, server.sandbox_token(server_env["BOXWRIGHT_NAMESPACE"], sid))


async def _check_agent_endpoint(sid: str, docker_client: docker.DockerClient, token: str) -> None:
    [c] = docker_client.containers.list(filters={"label": f"{labels.SANDBOX}={sid}"})
    binding = c.ports["8080/tcp"][0]
    assert binding["HostIp"] == "127.0.0.1"  # never published beyond loopback
    url = f"http://127.0.0.1:{binding['HostPort']}/rpc"
    call = {"jsonrpc": "2.0", "id": 1, "method": "sandbox.info", "params": {}}
    async with httpx.AsyncClient() as client:
        r = await client.post(url, json=call)
        assert r.status_code == 401 and r.json()["error"]["data"]["errorCode"] == "UNAUTHORIZED"
        r = await client.post(url, json=call, headers={"Authorization": "Bearer " + "x" * 43})
        assert r.status_code == 401
        auth = {"Authorization": f"Bearer {token}"}
        r = await client.post(url, content=b"\x00{garbage", headers=auth)
        assert r.status_code == 200 and r.json()["error"]["code"] == -32700
        r = await client.post(url, json=[call], headers=auth)
        assert r.json()["error"]["code"] == -32600
        r = await client.post(url, json={**call, "method": "no.such"}, headers=auth)
        assert r.json()["error"]["code"] == -32601
        r = await client.post(url, json={**call, "method": "file.read", "params": {"path": 1}}, headers=auth)
        assert r.json()["error"]["code"] == -32602
        assert r.json()["error"]["data"]["errorCode"] == "INVALID_PARAMETER"
        r = await client.post(url, content=b"x" * (33 * 1024 * 1024), headers=auth)
        assert r.status_code == 413
        # ...and it still answers properly afterwards.
        r = await client.post(url, json=call, headers=auth)
        assert r.json()["result"]["codeRunnerReady"] is True
    # The container holds only the token's hash, never the token.
    env = dict(e.split("=", 1) for e in c.attrs["Config"]["Env"])
    assert env["BOXWRIGHT_TOKEN_SHA256"] == hashlib.sha256(token.encode()).hexdigest()
    assert token not in str(c.attrs["Config"]["Env"])
