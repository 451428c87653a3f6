"""Two Boxwright servers on one swarm, each with a warm pool: concurrent creates on both hand out
distinct sandboxes, every one of them working, and a pooled sandbox is taken through the backend's
claim (the versioned label update) before its agent is claimed."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import docker

from host import labels
from tests.integration.conftest import HttpServer
from tests.integration.mcp_helpers import http_session
from tests.swarm.cluster import SwarmCluster
from tests.swarm.conftest import leftovers, swarm_env

POOL = 2
CREATES_PER_SERVER = 3  # more than the pool: the rest start cold


def wait_pool_full(server: HttpServer, deadline_s: float = 120) -> None:
    deadline = time.monotonic() + deadline_s
    while f"({POOL} of {POOL})" not in server.log():
        assert server.proc.poll() is None and time.monotonic() < deadline, server.log()
        time.sleep(0.5)


async def test_two_servers_with_pools_hand_out_distinct_sandboxes(
    swarm_cluster: SwarmCluster, swarm_namespace: str, tmp_path: Path
) -> None:
    ns = f"{swarm_namespace}-pool"
    servers: list[HttpServer] = []
    try:
        for name in ("a", "b"):
            env = swarm_env(
                swarm_cluster,
                ns,
                tmp_path / name,
                BOXWRIGHT_POOL_SIZE=str(POOL),
                BOXWRIGHT_MEM_LIMIT="1g",
                BOXWRIGHT_STARTUP_TIMEOUT="120",
            )
            servers.append(HttpServer(env, tmp_path / f"{name}.log", ["--backend", "swarm"]))
        for server in servers:
            wait_pool_full(server)

        made: list[tuple[str, str, bool]] = []  # (server, sandbox, from the pool)

        async def create(index: int) -> None:
            async with http_session(servers[index].url) as s:
                got = await s.ok("sandbox_create", {})
                ran = await s.ok("code_run", {"language": "bash", "code": "echo $((6 * 7))"})
                assert ran["stdout"] == "42\n"
                made.append(("ab"[index], got["sandboxId"], got["fromPool"]))

        async with anyio.create_task_group() as tg:
            for _ in range(CREATES_PER_SERVER):
                for index in range(2):
                    tg.start_soon(create, index)
        ids = [sid for _, sid, _ in made]
        assert len(set(ids)) == len(ids) == 2 * CREATES_PER_SERVER, made
        assert sum(pooled for _, _, pooled in made) == 2 * POOL, made

        # Each pooled sandbox handed out carries the claim of the server that handed it out.
        mgr: docker.DockerClient = swarm_cluster.manager.docker
        server_ids = {name: json.loads((tmp_path / name / "identity.json").read_text())["serverId"] for name in "ab"}
        for name, sid, pooled in made:
            (service,) = mgr.services.list(filters={"label": f"{labels.SANDBOX}={sid}"})
            claimed = service.attrs["Spec"]["Labels"].get(labels.CLAIMED_BY, "")
            assert claimed.startswith(f"{server_ids[name]}/") if pooled else claimed == "", (name, sid, claimed)
    finally:
        for server in servers:
            server.stop()  # graceful: each removes its sandboxes and drains its pool
    assert leftovers(swarm_cluster, ns) == []
