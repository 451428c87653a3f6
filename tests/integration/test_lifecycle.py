"""Sandbox lifecycle guarantees: a SIGKILLed server leaks nothing (the next start adopts healthy
sandboxes and removes dead ones), TTLs expire, limits hold, a graceful stop cleans up."""

from __future__ import annotations

import contextlib
import signal
from pathlib import Path

import anyio
import anyio.to_thread
import docker
import pytest

from host import labels
from tests.integration.conftest import HttpServer, own_env, remove_namespace
from tests.integration.mcp_helpers import http_session


def workspace_images(server: HttpServer, sandbox_id: str) -> list[Path]:
    """The sandbox's workspace disk images (each bound to a loop device while it exists)."""
    return list(Path(server.env["BOXWRIGHT_WORKSPACE_DIR"]).glob(f"*/{sandbox_id}.img"))


def containers(client: docker.DockerClient, namespace: str) -> dict[str, object]:
    """The namespace's sandbox containers by sandbox id (not its short-lived helpers: the network guard, the
    workspace disk's, which carry the namespace label but no sandbox id)."""
    wanted = {"label": [labels.SANDBOX, f"{labels.NAMESPACE}={namespace}"]}
    found = client.containers.list(all=True, ignore_removed=True, filters=wanted)
    return {c.labels[labels.SANDBOX]: c for c in found}


@pytest.fixture
def cleanup_namespace(docker_client: docker.DockerClient):
    spaces: list[str] = []
    yield spaces
    for ns in spaces:
        remove_namespace(docker_client, ns)


async def test_sigkilled_server_leaves_nothing_behind(
    server_env: dict, tmp_path: Path, docker_client: docker.DockerClient, cleanup_namespace: list
) -> None:
    env = own_env(server_env, "restart", tmp_path)
    ns = env["BOXWRIGHT_NAMESPACE"]
    cleanup_namespace.append(ns)
    first = HttpServer(env, tmp_path / "first.log")
    async with http_session(first.url) as s:
        keep = (await s.ok("sandbox_create", {"name": "keep"}))["sandboxId"]
        dead = (await s.ok("sandbox_create", {"name": "dead"}))["sandboxId"]
        await s.ok("file_write", {"sandboxId": keep, "path": "state.txt", "content": "survived"})
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(10)
    first.stop()
    assert set(containers(docker_client, ns)) == {keep, dead}  # the kill itself removed nothing
    containers(docker_client, ns)[dead].stop(timeout=1)  # a sandbox that died meanwhile

    second = HttpServer(env, tmp_path / "second.log")
    try:
        assert set(containers(docker_client, ns)) == {keep}, second.log()
        assert docker_client.volumes.list(filters={"label": f"{labels.SANDBOX}={dead}"}) == []
        async with http_session(second.url) as s:
            listed = await s.ok("sandbox_list")
            assert [x["sandboxId"] for x in listed["sandboxes"]] == [keep]
            read = await s.ok("file_read", {"path": "state.txt"})  # the only sandbox is the default
            assert read["content"] == "survived"
    finally:
        second.stop()  # graceful: destroys what it manages
    assert containers(docker_client, ns) == {}
    assert docker_client.volumes.list(filters={"label": f"{labels.NAMESPACE}={ns}"}) == []


async def test_a_graceful_stop_does_not_wait_for_ever_on_a_call_in_flight(
    server_env: dict, tmp_path: Path, docker_client: docker.DockerClient, cleanup_namespace: list
) -> None:
    """SIGTERM waited for every open connection (a long call, a session's stream) with no bound: a
    supervisor's SIGKILL then left the sandboxes running."""
    env = own_env(server_env, "graceful", tmp_path)
    ns = env["BOXWRIGHT_NAMESPACE"]
    cleanup_namespace.append(ns)
    server = HttpServer(env, tmp_path / "server.log")
    try:
        async with http_session(server.url) as s, anyio.create_task_group() as calls:
            await s.ok("sandbox_create")

            async def long_call() -> None:
                with contextlib.suppress(Exception):  # cut by the stop, one way or another
                    await s.call("code_run", {"language": "bash", "code": "sleep 120", "timeoutMs": 120_000})

            calls.start_soon(long_call)
            await anyio.sleep(2)
            server.proc.send_signal(signal.SIGTERM)
            # The 10 s grace, then the sandbox's removal (waited for in a thread: the call stays in flight).
            await anyio.to_thread.run_sync(server.proc.wait, 60)
            calls.cancel_scope.cancel()
        assert containers(docker_client, ns) == {}, server.log()
    finally:
        server.stop()


async def test_ttl_expiry_and_limits(
    server_env: dict, tmp_path: Path, docker_client: docker.DockerClient, cleanup_namespace: list
) -> None:
    env = own_env(server_env, "ttl", tmp_path, BOXWRIGHT_REAP_INTERVAL="1", BOXWRIGHT_MAX_SANDBOXES_PER_OWNER="2")
    ns = env["BOXWRIGHT_NAMESPACE"]
    cleanup_namespace.append(ns)
    server = HttpServer(env, tmp_path / "ttl.log")
    try:
        async with http_session(server.url) as s:
            other = (await s.ok("sandbox_create"))["sandboxId"]
            # Made last, so its TTL runs out only after the limit check below, however slow starts are.
            short = (await s.ok("sandbox_create", {"ttlSeconds": 15}))["sandboxId"]
            full = await s.error("sandbox_create")
            assert full.code == "SANDBOX_LIMIT_REACHED" and full.data["details"]["limit"] == 2
            for _ in range(80):  # the reaper runs every second; the TTL is 15 s
                if short not in containers(docker_client, ns):
                    break
                await anyio.sleep(0.5)
            assert short not in containers(docker_client, ns), "TTL did not expire the sandbox"
            expired = await s.error("file_list", {"sandboxId": short})
            assert expired.code == "SANDBOX_NOT_FOUND"
            assert other in containers(docker_client, ns)
            await s.ok("sandbox_create")  # the expired one freed its slot
    finally:
        server.stop()
    assert containers(docker_client, ns) == {}


async def test_container_removed_behind_our_back_is_reported(
    http_server: HttpServer, tokens: dict, docker_client: docker.DockerClient
) -> None:
    async with http_session(http_server.url, tokens["alice"]) as s:
        sid = (await s.ok("sandbox_create"))["sandboxId"]
        try:
            [c] = docker_client.containers.list(filters={"label": f"{labels.SANDBOX}={sid}"})
            c.remove(force=True)
            gone = await s.error("code_run", {"sandboxId": sid, "language": "bash", "code": "true"})
            # Gone, and said so once what the container left went with it (its workspace volume, disk
            # image and loop device) — also when the reaper noticed first or caught it mid-removal.
            assert gone.code == "SANDBOX_NOT_FOUND", gone.text
            assert docker_client.volumes.list(filters={"label": f"{labels.SANDBOX}={sid}"}) == []
            assert workspace_images(http_server, sid) == []
            assert sid not in {x["sandboxId"] for x in (await s.ok("sandbox_list"))["sandboxes"]}
        finally:  # the server is shared: what a failure here leaves must not fail the tests after it
            await s.call("sandbox_destroy", {"sandboxId": sid})
