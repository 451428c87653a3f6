"""SwarmBackend on a real two-node swarm: the SandboxManager, the real image, the real agent.

Lean on purpose (the fixture alone costs ~30–60 s): each test covers several facts at once.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import anyio
import docker
import docker.errors
import pytest

from host import labels
from host.backends.swarm_backend import SANDBOX_NODE_LABEL, SwarmBackend
from host.sandboxes.manager import SandboxManager
from host.sandboxes.models import Caller, SandboxRecord
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode
from rpc.methods import BROWSER_GOTO, CODE_RUN, FILE_READ, FILE_WRITE, SANDBOX_INFO
from rpc.models.browser import GotoParams
from rpc.models.code import CodeRunParams, CodeRunResult
from rpc.models.files import FileReadParams, FileWriteParams
from rpc.models.sandbox import SandboxInfoParams
from tests.swarm.cluster import Node, SwarmCluster
from tests.swarm.conftest import leftovers, swarm_settings

ALICE = Caller(owner="alice")


async def run(manager: SandboxManager, rec: SandboxRecord, code: str, **kw: object) -> CodeRunResult:
    params = CodeRunParams(language="python", code=code, **kw)  # type: ignore[arg-type]
    _, result = await manager.call(ALICE, rec.id, CODE_RUN, params, Deadline.after(30))
    return result


def node_of(backend: SwarmBackend, cluster: SwarmCluster, rec: SandboxRecord) -> Node:
    task = backend.task(rec.container_id or "")
    assert task is not None
    return cluster.node_by_id(task.node_id)


async def test_sandboxes_on_both_nodes_run_code_files_and_a_browser(
    swarm_cluster: SwarmCluster, swarm_backend: SwarmBackend, swarm_manager: SandboxManager
) -> None:
    recs: list[SandboxRecord] = []

    async def create() -> None:
        recs.append(await swarm_manager.create(ALICE))

    async with anyio.create_task_group() as tg:
        for _ in range(2):
            tg.start_soon(create)
    # Separate one-replica services are spread over the labelled nodes.
    assert {node_of(swarm_backend, swarm_cluster, r).name for r in recs} == {n.name for n in swarm_cluster.nodes}

    for rec in recs:
        assert rec.endpoint is not None and rec.endpoint.base_url.startswith("http://198.1")
        _, info = await swarm_manager.call(ALICE, rec.id, SANDBOX_INFO, SandboxInfoParams(), Deadline.after(5))
        assert info.user == "agent" and info.codeRunnerReady
        # Hardening that swarm cannot set per service comes from the node's engine.
        # The token's hash arrives as a secret only the agent's user can read.
        out = await run(
            swarm_manager,
            rec,
            "import os\n"
            "print([l for l in open('/proc/self/status') if l.startswith(('NoNewPrivs', 'CapEff'))])\n"
            "try:\n    open('/run/secrets/boxwright-token-sha256').read(); print('secret readable')\n"
            "except PermissionError:\n    print('secret denied')\n"
            "open('/tmp/x.sh', 'w').write('#!/bin/sh\\necho exec-ok\\n'); os.chmod('/tmp/x.sh', 0o755)\n"
            "shm = os.statvfs('/dev/shm')\n"
            "print(os.popen('/tmp/x.sh').read().strip(), shm.f_blocks * shm.f_frsize >> 20)",
        )
        assert out.exitCode == 0, out.stderr
        assert "NoNewPrivs:\\t1" in out.stdout and "CapEff:\\t0000000000000000" in out.stdout
        assert "secret denied" in out.stdout
        assert out.stdout.strip().endswith("exec-ok 256")
        await swarm_manager.call(
            ALICE, rec.id, FILE_WRITE, FileWriteParams(path="d/hello.txt", content=rec.id), Deadline.after(10)
        )
        _, read = await swarm_manager.call(
            ALICE, rec.id, FILE_READ, FileReadParams(path="d/hello.txt"), Deadline.after(10)
        )
        assert read.content == rec.id

    # The browser works under the swarm hardening (read-only root, tmpfs volumes, /dev/shm mount).
    rec = recs[0]
    served = await run(
        swarm_manager,
        rec,
        "import subprocess, sys\n"
        "open('index.html', 'w').write('<title>swarm page</title><p>hi</p>')\n"
        "subprocess.Popen([sys.executable, '-m', 'http.server', '8000', '--bind', '127.0.0.1'],"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)\n"
        "import socket, time\n"
        "for _ in range(100):\n"
        "    try:\n        socket.create_connection(('127.0.0.1', 8000), 0.2).close(); break\n"
        "    except OSError:\n        time.sleep(0.05)\n",
    )
    assert served.exitCode == 0, served.stderr
    _, page = await swarm_manager.call(
        ALICE, rec.id, BROWSER_GOTO, GotoParams(url="http://127.0.0.1:8000/"), Deadline.after(60)
    )
    assert page.status == 200 and page.title == "swarm page"

    for r in recs:
        await swarm_manager.destroy(ALICE, r.id)
    assert leftovers(swarm_cluster, swarm_backend.settings.namespace) == []


async def test_public_sandbox_cannot_reach_a_decoy_on_the_other_node(
    swarm_cluster: SwarmCluster, swarm_backend: SwarmBackend, swarm_manager: SandboxManager
) -> None:
    rec = await swarm_manager.create(ALICE)  # public: the default network mode
    here = node_of(swarm_backend, swarm_cluster, rec)
    there = next(n for n in swarm_cluster.nodes if n is not here)
    ns_label = {labels.NAMESPACE: swarm_backend.settings.namespace}
    image = swarm_cluster.image
    decoy = there.docker.containers.run(
        image,
        ["python3", "-c", DECOY],
        detach=True,
        user="agent",
        labels=ns_label,
        ports={"9000/tcp": (there.address, None)},
    )
    control = None
    try:
        decoy.reload()
        port = int(decoy.ports["9000/tcp"][0]["HostPort"])
        wait_listening(there.address, port)
        probe = (
            "import socket\n"
            "try:\n"
            f"    s = socket.create_connection(({there.address!r}, {port}), timeout=3); print('reached', s.recv(9))\n"
            "except OSError as e:\n    print('blocked', type(e).__name__)\n"
        )
        # Control: an unguarded container on the same node does reach the decoy (so the route exists).
        control = here.docker.containers.run(image, ["python3", "-c", probe], detach=True, labels=ns_label)
        control.wait(timeout=30)
        assert "reached b'decoy'" in control.logs().decode()
        out = await run(swarm_manager, rec, probe)
        assert out.stdout.startswith("blocked"), out.stdout
    finally:
        for c in (decoy, control):
            if c is not None:
                c.remove(force=True)
    await swarm_manager.destroy(ALICE, rec.id)
    assert leftovers(swarm_cluster, swarm_backend.settings.namespace) == []


DECOY = (
    "import socket\n"
    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('0.0.0.0', 9000)); s.listen()\n"
    "while True:\n    c, _ = s.accept(); c.sendall(b'decoy'); c.close()\n"
)


def wait_listening(host: str, port: int) -> None:
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


async def test_claim_is_compare_and_swap_and_leaves_the_task_running(
    swarm_cluster: SwarmCluster, swarm_backend: SwarmBackend, swarm_manager: SandboxManager
) -> None:
    rec = await swarm_manager.create(ALICE)
    service = rec.container_id or ""
    task_before = swarm_backend.task(service)
    barrier = threading.Barrier(2)
    won: dict[str, bool] = {}

    def claim(who: str) -> None:
        barrier.wait()
        won[who] = swarm_backend.try_claim(service, who)

    threads = [threading.Thread(target=claim, args=(w,)) for w in ("server-a", "server-b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(won.values()) == [False, True]
    winner = next(w for w, ok in won.items() if ok)
    assert swarm_backend.inspect(service).labels[labels.PREFIX + "claimed-by"] == winner  # type: ignore[union-attr]
    assert swarm_backend.try_claim(service, "server-c") is False
    # A label-only update does not replace the task: same container, agent still answering.
    task_after = swarm_backend.task(service)
    assert task_after is not None and task_before is not None
    assert (task_after.container_id, task_after.state) == (task_before.container_id, "running")
    _, info = await swarm_manager.call(ALICE, rec.id, SANDBOX_INFO, SandboxInfoParams(), Deadline.after(5))
    assert info.codeRunnerReady
    await swarm_manager.destroy(ALICE, rec.id)


async def test_a_restarted_server_adopts_from_labels(
    swarm_cluster: SwarmCluster, swarm_backend: SwarmBackend, tmp_path: Path
) -> None:
    settings = swarm_settings(
        swarm_backend.settings.namespace, swarm_cluster.image, swarm_backend.settings.state_dir, keep_on_exit=True
    )
    first = SandboxManager(settings, swarm_backend)
    await first.start()
    rec = await first.create(ALICE)
    await first.close()  # keeps the sandbox and lets go of its lock, as a killed server does
    second = SandboxManager(settings, swarm_backend)
    await second.start()
    try:
        adopted = second.get(ALICE, rec.id)
        assert adopted.adopted and adopted.endpoint == rec.endpoint
        out = await run(second, adopted, "print(6 * 7)")
        assert out.stdout == "42\n"
        await second.destroy(ALICE, rec.id)
    finally:
        await second.close()
    assert leftovers(swarm_cluster, settings.namespace) == []


async def test_clear_errors_for_a_misconfigured_fleet(
    swarm_cluster: SwarmCluster, swarm_backend: SwarmBackend, swarm_manager: SandboxManager
) -> None:
    # An engine that is not a manager.
    worker = SwarmBackend(swarm_backend.settings, manager=swarm_cluster.nodes[1].docker, engines=[])
    with pytest.raises(BoxwrightError) as err:
        worker.ping()
    assert err.value.code is ErrorCode.DOCKER_UNAVAILABLE and "swarm" in err.value.hint

    # An image the nodes do not have: rejected by the node, reported as such, nothing left.
    swarm_manager.settings = swarm_manager.settings.model_copy(update={"image": "boxwright-sandbox:not-on-nodes"})
    with pytest.raises(BoxwrightError) as err:
        await swarm_manager.create(ALICE)
    assert err.value.code is ErrorCode.IMAGE_NOT_FOUND and "push-nodes" in err.value.hint
    assert len(swarm_backend.nodes_missing_image("boxwright-sandbox:not-on-nodes")) == len(swarm_cluster.nodes)
    assert swarm_backend.nodes_missing_image(swarm_cluster.image) == []
    swarm_manager.settings = swarm_manager.settings.model_copy(update={"image": swarm_cluster.image})

    # No node labelled for sandboxes: said so with the command that fixes it.
    mgr = swarm_cluster.manager.docker
    try:
        _set_label(mgr, None)
        with pytest.raises(BoxwrightError) as err:
            await swarm_manager.create(ALICE)
        assert err.value.code is ErrorCode.SANDBOX_START_FAILED and SANDBOX_NODE_LABEL in err.value.hint
    finally:
        _set_label(mgr, "true")
    assert leftovers(swarm_cluster, swarm_backend.settings.namespace) == []


def _set_label(mgr: docker.DockerClient, value: str | None) -> None:
    for node in mgr.nodes.list():
        node.reload()
        spec = node.attrs["Spec"]
        node_labels = spec.setdefault("Labels", {})
        if value is None:
            node_labels.pop(SANDBOX_NODE_LABEL, None)
        else:
            node_labels[SANDBOX_NODE_LABEL] = value
        node.update(spec)
