"""Several servers on one engine and one namespace, each with its own state dir (two OS users): each
manages only what it provably made, and no secret is written where the engine shows it to others.

Server A and server B share a namespace; B reaps every second and removes another server's stopped
sandboxes as soon as they are expired (grace 0), so every rule gets exercised quickly."""

from __future__ import annotations

import os
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import docker
import httpx
import pytest

from host import identity, labels
from host.testing import BoxwrightContainer
from tests.integration.conftest import HttpServer, own_env, remove_namespace
from tests.integration.mcp_helpers import http_session
from tests.integration.test_lifecycle import containers

SHARED = "shared"


@pytest.fixture
def shared_namespace(server_env: dict, docker_client: docker.DockerClient):
    ns = f"{server_env['BOXWRIGHT_NAMESPACE']}-{SHARED}"
    yield ns
    remove_namespace(docker_client, ns)


B = {"BOXWRIGHT_FOREIGN_GRACE": "0"}


def server_in(server_env: dict, state: Path, **extra: str) -> dict:
    """A server of the shared namespace with a state dir of its own (another OS user's), reaping every second."""
    return own_env(server_env, SHARED, state, BOXWRIGHT_REAP_INTERVAL="1", **extra)


async def test_two_servers_never_adopt_or_destroy_each_others_sandboxes(
    server_env: dict, shared_namespace: str, tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    a = HttpServer(server_in(server_env, tmp_path / "a"), tmp_path / "a.log")
    b = None
    try:
        async with http_session(a.url) as s:
            mine = (await s.ok("sandbox_create", {"name": "a-one"}))["sandboxId"]
            await s.ok("file_write", {"path": "secret.txt", "content": "A's data"})
        b = HttpServer(server_in(server_env, tmp_path / "b", **B), tmp_path / "b.log")
        async with http_session(b.url) as s:
            assert (await s.ok("sandbox_list"))["sandboxes"] == []  # B adopted nothing of A's
            assert (await s.error("file_read", {"sandboxId": mine, "path": "secret.txt"})).code == "SANDBOX_NOT_FOUND"
            theirs = (await s.ok("sandbox_create", {"name": "b-one"}))["sandboxId"]
        await anyio.sleep(2.5)  # a few of B's reaper sweeps (and A's, on B's sandbox)
        async with http_session(a.url) as s:
            assert [x["sandboxId"] for x in (await s.ok("sandbox_list"))["sandboxes"]] == [mine]
            assert (await s.ok("file_read", {"path": "secret.txt"}))["content"] == "A's data"
        b.stop()  # graceful: destroys what B manages — only B's
        b = None
        assert set(containers(docker_client, shared_namespace)) == {mine}, theirs

        # A dies for good (SIGKILL): its sandbox keeps running, and B (restarted) leaves it alone.
        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait(10)
        b = HttpServer(server_in(server_env, tmp_path / "b", **B), tmp_path / "b2.log")
        await anyio.sleep(2.5)
        assert containers(docker_client, shared_namespace)[mine].status == "running"  # type: ignore[attr-defined]
        assert "adopted sandbox" not in b.log() and mine not in b.log()
    finally:
        for server in (a, b):
            if server:
                server.stop()


async def test_a_dead_servers_sandbox_ends_itself_and_is_then_removed(
    server_env: dict, shared_namespace: str, tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    """The agent is told its expiry and exits after it (so a dead server's sandbox does not live on); a
    stopped, expired sandbox of another server is removed by a live one."""
    a = HttpServer(server_in(server_env, tmp_path / "a"), tmp_path / "a.log")
    try:
        async with http_session(a.url) as s:
            sid = (await s.ok("sandbox_create", {"ttlSeconds": 10}))["sandboxId"]
        c = containers(docker_client, shared_namespace)[sid]
        env = dict(e.split("=", 1) for e in c.attrs["Config"]["Env"])  # type: ignore[attr-defined]
        assert env["BOXWRIGHT_EXPIRES_AT"] == c.labels[labels.EXPIRES_AT]  # type: ignore[attr-defined]
        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait(10)
    finally:
        a.stop()
    # Stand-in for its agent's own exit a minute after expiry (shown on a container of its own below).
    c.stop(timeout=1)  # type: ignore[attr-defined]
    b = HttpServer(server_in(server_env, tmp_path / "b", **B), tmp_path / "b.log")
    try:
        deadline = time.monotonic() + 30
        while sid in containers(docker_client, shared_namespace) and time.monotonic() < deadline:  # noqa: ASYNC110
            await anyio.sleep(0.5)
        assert sid not in containers(docker_client, shared_namespace), b.log()
        assert docker_client.volumes.list(filters={"label": f"{labels.SANDBOX}={sid}"}) == []
    finally:
        b.stop()


def test_the_agent_ends_its_sandbox_after_its_expiry(image: str) -> None:
    box = BoxwrightContainer(image)
    box.with_env("BOXWRIGHT_EXPIRES_AT", str(int(time.time()) + 10)).with_env("BOXWRIGHT_EXPIRY_GRACE", "1")
    with box:
        assert box.run_code("print(1)").stdout == "1\n"  # alive before its expiry
        container = box.get_wrapped_container()
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline:
            container.reload()
            if container.status != "running":
                break
            time.sleep(0.5)
        assert container.status == "exited", container.status
        assert "sandbox expired" in container.logs().decode()


async def test_no_secret_in_labels_inspect_or_events(
    server_env: dict, shared_namespace: str, tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    """Nothing the engine shows — labels, environment, the whole inspect document, the events — holds a
    token the agent accepts, or the server's secrets. Every string shown is tried as a bearer token."""
    since = datetime.now(UTC)
    state = tmp_path / "a"
    a = HttpServer(server_in(server_env, state), tmp_path / "a.log")
    try:
        async with http_session(a.url) as s:
            sid = (await s.ok("sandbox_create"))["sandboxId"]
            c = containers(docker_client, shared_namespace)[sid]
            port = c.ports["8080/tcp"][0]["HostPort"]  # type: ignore[attr-defined]
            inspected = docker_client.api.inspect_container(c.id)  # type: ignore[attr-defined]
            # docker-py floors both bounds to whole seconds: `until` is rounded up so that a create in
            # the same second as "now" is not cut off (this flaked once the cold create got faster).
            until = datetime.now(UTC) + timedelta(seconds=1)
            events = list(
                docker_client.events(
                    since=since, until=until, decode=True, filters={"label": f"{labels.SANDBOX}={sid}"}
                )
            )
            assert any(e.get("Action") == "create" for e in events)
            shown = set(strings(inspected)) | set(strings(events))
            for env in inspected["Config"]["Env"]:
                shown.add(env.split("=", 1)[1])

            call = {"jsonrpc": "2.0", "id": 1, "method": "sandbox.info", "params": {}}
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:

                async def accepted(token: str) -> bool:
                    r = await http.post("/rpc", json=call, headers={"Authorization": f"Bearer {token}"})
                    return r.status_code == 200

                candidates = [v for v in shown if 20 <= len(v) <= 200 and " " not in v and "," not in v]
                assert candidates  # e.g. the image id, the seal, the token's hash
                assert [v for v in candidates if await accepted(v)] == []
                server = identity.find(state)
                assert server is not None
                assert await accepted(server.sandbox_token(shared_namespace, sid))  # the probe can say yes
            for secret in (server.secret.hex(), server.runner_secret(shared_namespace, sid)):
                assert all(secret not in v for v in shown)
            assert c.labels[labels.SERVER] == server.server_id and labels.SEAL in c.labels  # type: ignore[attr-defined]
            await s.ok("sandbox_destroy", {"sandboxId": sid})
    finally:
        a.stop()


def strings(value: object) -> list[str]:
    """Every string in a JSON-like document (keys and values)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*strings(k), *strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def test_the_guard_sweep_takes_only_this_instances_finished_guards_at_once(
    namespace: str, image: str, docker_client: docker.DockerClient, tmp_path: Path
) -> None:
    """Finished network guards left by a killed server: the sweep removes its own at once — own meaning
    this identity *and* this host's instance, since on a swarm a server on another host with the same
    identity may be reading its just-finished guard on this node — and anyone else's only after the grace."""
    from host.backends.docker_backend import DockerBackend
    from host.config import Settings

    ns = f"{namespace}-guards"
    backend = DockerBackend(Settings(namespace=ns, state_dir=tmp_path / "state", instance_id="host-a"), docker_client)

    def finished_guard(server: str, instance: str, name: str | None = None) -> str:
        tags = {labels.NAMESPACE: ns, labels.ROLE: "netguard", labels.SERVER: server, labels.INSTANCE: instance}
        c = docker_client.containers.run(
            image, entrypoint=["true"], detach=True, network_mode="none", labels=tags, name=name
        )
        assert c.wait(timeout=60)["StatusCode"] == 0
        return c.id or ""

    def left() -> set[str]:
        in_ns = {"label": f"{labels.NAMESPACE}={ns}"}
        return {c.id or "" for c in docker_client.containers.list(all=True, ignore_removed=True, filters=in_ns)}

    try:
        ours = finished_guard("srv-x", "host-a")
        same_identity_other_host = finished_guard("srv-x", "host-b")
        other_server = finished_guard("srv-y", "host-a")
        # One of ours that this process is still reading (its guard exited, its report not read yet): the
        # reaper sweeps every interval beside the start that ran it, and took it once (CI, session 27).
        reading_name = f"{ns}-reading"
        reading = finished_guard("srv-x", "host-a", name=reading_name)
        backend._guards_in_flight.add(reading_name)
        assert left() == {ours, same_identity_other_host, other_server, reading}
        backend.sweep_leftovers("srv-x", set(), grace_s=600)
        assert left() == {same_identity_other_host, other_server, reading}
        backend.sweep_leftovers("srv-x", set(), grace_s=0)  # past the grace, anyone's finished guard goes
        assert left() == {reading}
        backend._guards_in_flight.discard(reading_name)  # read: a leftover like any other now
        backend.sweep_leftovers("srv-x", set(), grace_s=600)
        assert left() == set()
    finally:
        remove_namespace(docker_client, ns)


def test_the_workspace_sweep_keeps_images_of_sandboxes_in_other_namespaces(
    namespace: str, image: str, docker_client: docker.DockerClient, tmp_path: Path
) -> None:
    """The workspace directory's default is one path per machine: a server of another namespace freed the
    workspace image of a live sandbox of this one (its sweep only knew its own namespace's sandboxes)."""
    from host.backends.docker_backend import DockerBackend
    from host.config import Settings

    root = tmp_path / "workspaces"
    backend = DockerBackend(
        Settings(namespace=f"{namespace}-sweeper", state_dir=tmp_path / "state", workspace_dir=root), docker_client
    )
    other_ns = f"{namespace}-elsewhere"
    running = docker_client.containers.run(
        image, entrypoint=["sleep", "60"], detach=True, network_mode="none",
        labels={labels.SANDBOX: "sbx_elsewhere", labels.NAMESPACE: other_ns},
    )  # fmt: skip
    try:
        (root / "srv-other").mkdir(parents=True)
        kept, gone = root / "srv-other" / "sbx_elsewhere.img", root / "srv-other" / "sbx_gone.img"
        for path in (kept, gone):
            path.write_bytes(b"")
            os.utime(path, (time.time() - 3600, time.time() - 3600))
        backend.disks.mode = "loop"  # this test's own root, whatever the machine's default mode
        backend.sweep_leftovers("srv-sweeper", set(), grace_s=0)
        assert kept.exists() and not gone.exists()
    finally:
        running.remove(force=True)
        remove_namespace(docker_client, other_ns)
