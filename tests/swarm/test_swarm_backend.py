"""SwarmBackend on a real two-node swarm, below the MCP server: the claim primitive of a pool shared by
several servers, and the errors of a misconfigured fleet (test_swarm_mcp.py has the end-to-end path).

Lean on purpose (the fixture alone costs ~30–60 s): each test covers several facts at once.
"""

from __future__ import annotations

import io
import logging
import threading

import docker
import docker.errors
import pytest

from host import labels
from host.backends.swarm_backend import SANDBOX_NODE_LABEL, SwarmBackend
from host.sandboxes.manager import SandboxManager
from host.sandboxes.models import Caller, SandboxRecord
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode
from rpc.methods import CODE_RUN, SANDBOX_INFO
from rpc.models.code import CodeRunParams, CodeRunResult
from rpc.models.sandbox import SandboxInfoParams
from tests.swarm.cluster import SwarmCluster
from tests.swarm.conftest import leftovers

ALICE = Caller(owner="alice")


async def run(manager: SandboxManager, rec: SandboxRecord, code: str, **kw: object) -> CodeRunResult:
    params = CodeRunParams(language="python", code=code, **kw)  # type: ignore[arg-type]
    _, result = await manager.call(ALICE, rec.id, CODE_RUN, params, Deadline.after(30))
    return result


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


async def test_clear_errors_for_a_misconfigured_fleet(
    swarm_cluster: SwarmCluster,
    swarm_backend: SwarmBackend,
    swarm_manager: SandboxManager,
    caplog: pytest.LogCaptureFixture,
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

    # A container that cannot start (its entrypoint is missing): the task fails before the container
    # runs, which is tried once more (moby/moby#48783 fails such starts now and then), then answered
    # with the node's reason; neither attempt leaves anything behind.
    broken = "boxwright-sandbox:entrypoint-missing"
    dockerfile = f'FROM {swarm_cluster.image}\nENTRYPOINT ["/no-such-entrypoint"]\n'.encode()
    for node in swarm_cluster.nodes:
        node.docker.images.build(fileobj=io.BytesIO(dockerfile), tag=broken, rm=True)
    swarm_manager.settings = swarm_manager.settings.model_copy(update={"image": broken})
    caplog.set_level(logging.WARNING, logger="host.backends.swarm_backend")
    try:
        with pytest.raises(BoxwrightError) as err:
            await swarm_manager.create(ALICE)
    finally:
        swarm_manager.settings = swarm_manager.settings.model_copy(update={"image": swarm_cluster.image})
        for node in swarm_cluster.nodes:
            node.docker.images.remove(broken, force=True)
    assert err.value.code is ErrorCode.SANDBOX_START_FAILED
    assert "starting container failed" in err.value.message and "no-such-entrypoint" in err.value.message
    retries = [r for r in caplog.records if "starting it again" in r.getMessage()]
    assert len(retries) == 1 and "no-such-entrypoint" in retries[0].getMessage()
    assert leftovers(swarm_cluster, swarm_backend.settings.namespace) == []

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
