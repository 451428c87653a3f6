"""The fleet's command line on the two-node swarm: `boxwright image push-nodes` and `boxwright doctor
--backend swarm`, on a good configuration and on misconfigured ones (each error with its fix)."""

from __future__ import annotations

import contextlib
import io
import secrets
import subprocess
import tarfile
from pathlib import Path

import docker
import docker.errors

from tests.integration.mcp_helpers import BOXWRIGHT
from tests.swarm.cluster import SwarmCluster
from tests.swarm.conftest import swarm_env


def boxwright(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([BOXWRIGHT, *args], env=env, capture_output=True, text=True, timeout=300, check=False)


def tiny_image(client: docker.DockerClient, tag: str) -> None:
    """An image of one small file on this machine's engine (a push costs a moment, not a 1.2 GiB copy)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in (("Dockerfile", b"FROM scratch\nCOPY hello /hello\n"), ("hello", b"hello " * 50_000)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    client.images.build(fileobj=buf, custom_context=True, tag=tag, rm=True)


def test_push_nodes_and_doctor(swarm_cluster: SwarmCluster, swarm_namespace: str, tmp_path: Path) -> None:
    env = swarm_env(swarm_cluster, f"{swarm_namespace}-cli", tmp_path / "state")
    main = docker.from_env(timeout=60)
    tag = f"boxwright-swarm-push-test:{secrets.token_hex(3)}"
    tiny_image(main, tag)
    try:
        pushed = boxwright({**env, "BOXWRIGHT_IMAGE": tag}, "image", "push-nodes")
        assert pushed.returncode == 0, pushed.stderr
        names = sorted(n.hostname for n in swarm_cluster.nodes)
        assert pushed.stdout.strip() == f"{tag} loaded on: {', '.join(names)}", pushed.stdout
        assert "100% of" in pushed.stderr  # progress
        ids = {n.docker.images.get(tag).id for n in swarm_cluster.nodes}
        assert ids == {main.images.get(tag).id}
        again = boxwright({**env, "BOXWRIGHT_IMAGE": tag}, "image", "push-nodes")
        assert again.returncode == 0 and again.stdout.strip() == f"{tag} was on every node", again
    finally:
        main.images.remove(tag, force=True)
        for node in swarm_cluster.nodes:
            with contextlib.suppress(docker.errors.ImageNotFound):
                node.docker.images.remove(tag, force=True)

    # Everything in place: every check passes, the node probes included.
    doctor = boxwright(env, "doctor", "--backend", "swarm")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    lines = doctor.stdout.splitlines()
    assert all(line.startswith("[ok]") for line in lines), doctor.stdout
    for node in swarm_cluster.nodes:
        for check in ("engine API configured", "no-new-privileges on", "published ports reachable from here"):
            assert f"[ok] node {node.hostname}: {check}" in lines, doctor.stdout
    assert "[ok] 2 ready, active node(s) labelled for sandboxes" in lines

    # A node whose engine the server was not given: that node fails, with the fix.
    one_engine = {**env, "BOXWRIGHT_SWARM_ENGINES": swarm_cluster.nodes[0].docker_url}
    doctor = boxwright(one_engine, "doctor", "--backend", "swarm")
    worker = swarm_cluster.nodes[1].hostname
    assert doctor.returncode == 1 and f"[FAIL] node {worker}: no engine API configured" in doctor.stdout
    assert "fix: list every sandbox node's engine API in BOXWRIGHT_SWARM_ENGINES" in doctor.stdout

    # A worker given as the manager: a clear error with its code and hint, for doctor and push-nodes.
    not_manager = {**env, "BOXWRIGHT_SWARM_MANAGER": swarm_cluster.nodes[1].docker_url}
    doctor = boxwright(not_manager, "doctor", "--backend", "swarm")
    assert doctor.returncode == 1 and "[FAIL] swarm manager: the Docker engine is not a swarm manager" in doctor.stdout
    pushed = boxwright(not_manager, "image", "push-nodes")
    assert pushed.returncode == 1 and "[DOCKER_UNAVAILABLE]" in pushed.stderr and "hint: point" in pushed.stderr

    # An unreachable manager, and a workspace limit swarm cannot give: refused at start, naming the variable.
    gone = boxwright({**env, "BOXWRIGHT_SWARM_MANAGER": f"unix://{tmp_path}/none.sock"}, "ls", "--backend", "swarm")
    assert gone.returncode == 1 and "cannot reach the swarm manager's engine" in gone.stderr, gone.stderr
    quota = boxwright({**env, "BOXWRIGHT_WORKSPACE_QUOTA": "loop"}, "ls", "--backend", "swarm")
    assert quota.returncode == 2 and "BOXWRIGHT_WORKSPACE_QUOTA=loop is not available" in quota.stderr, quota.stderr
