"""The swarm backend's tests run on a two-node swarm made for the session (tests/swarm/cluster.py).

Marked `swarm` (and `docker`). Where the fixture cannot be made (not root, no `ip netns`, no
dockerd binary) they are skipped with the reason — except under CI=true, where that is a failure.
The cluster is removed at the end of the session, also after a failure, Ctrl-C or SIGTERM
(`timeout`); a run killed harder is swept by the next one.
"""

from __future__ import annotations

import os
import secrets
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import FrameType

import docker
import pytest

from host import labels
from host.backends.swarm_backend import SwarmBackend
from host.config import Settings
from host.sandboxes.manager import SandboxManager
from tests.swarm.cluster import Node, SwarmCluster, prerequisites, sweep_stale

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mine = [i for i in items if _HERE in i.path.parents]
    for item in mine:
        item.add_marker(pytest.mark.swarm)
        item.add_marker(pytest.mark.docker)
    problem = prerequisites() if mine else None
    if problem is None:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        raise pytest.UsageError(f"CI=true but the two-node swarm fixture cannot be made here: {problem}")
    skip = pytest.mark.skip(reason=f"two-node swarm fixture impossible here: {problem}")
    for item in mine:
        item.add_marker(skip)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session")
def swarm_cluster(request: pytest.FixtureRequest, boxwright_image: str) -> Iterator[SwarmCluster]:
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")

    def progress(msg: str) -> None:
        if reporter is not None:
            reporter.write_line(msg)

    sweep_stale(progress)
    # `timeout` and CI runners stop with SIGTERM: make it unwind like Ctrl-C, through the teardown.
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        with SwarmCluster(boxwright_image, progress=progress) as cluster:
            yield cluster
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.fixture(scope="session")
def swarm_namespace(swarm_cluster: SwarmCluster) -> str:
    return f"test-swarm-{secrets.token_hex(3)}"


def swarm_settings(namespace: str, image: str, state_dir: Path, **extra: object) -> Settings:
    return Settings(namespace=namespace, image=image, state_dir=state_dir, backend="swarm", startup_timeout=60, **extra)


def swarm_env(cluster: SwarmCluster, namespace: str, state: Path, **extra: str) -> dict[str, str]:
    """The environment of a `boxwright serve --backend swarm` of the tests: the fixture's manager and
    node engines, a namespace and state dir of its own."""
    env = dict(os.environ)
    env.update(
        BOXWRIGHT_SWARM_MANAGER=cluster.manager.docker_url,
        BOXWRIGHT_SWARM_ENGINES=",".join(n.docker_url for n in cluster.nodes),
        BOXWRIGHT_IMAGE=cluster.image,
        BOXWRIGHT_NAMESPACE=namespace,
        BOXWRIGHT_STATE_DIR=str(state),
        BOXWRIGHT_LOG_LEVEL="INFO",
        XDG_CONFIG_HOME=str(state / "config"),
        **extra,
    )
    return env


@pytest.fixture
def swarm_backend(swarm_cluster: SwarmCluster, swarm_namespace: str, tmp_path: Path) -> SwarmBackend:
    settings = swarm_settings(swarm_namespace, swarm_cluster.image, tmp_path / "state")
    return SwarmBackend(settings, manager=swarm_cluster.manager.docker, engines=[n.docker for n in swarm_cluster.nodes])


def node_of(cluster: SwarmCluster, sandbox_id: str) -> Node:
    """The node running a sandbox's task container."""
    for node in cluster.nodes:
        if node.docker.containers.list(filters={"label": f"{labels.SANDBOX}={sandbox_id}"}):
            return node
    raise AssertionError(f"no node runs {sandbox_id}")


@pytest.fixture
async def swarm_manager(swarm_backend: SwarmBackend) -> AsyncIterator[SandboxManager]:
    manager = SandboxManager(swarm_backend.settings, swarm_backend)
    await manager.start()
    try:
        yield manager
    finally:
        await manager.close()


def leftovers(cluster: SwarmCluster, namespace: str) -> list[str]:
    """Everything of `namespace` still on the swarm or on any node (empty when all is clean)."""
    mine = f"{labels.NAMESPACE}={namespace}"
    mgr: docker.DockerClient = cluster.manager.docker
    found = [f"service {s.name}" for s in mgr.services.list(filters={"label": mine})]
    found += [f"secret {s.name}" for s in mgr.secrets.list(filters={"label": mine})]
    for node in cluster.nodes:
        found += [
            f"{node.name} container {c.name}" for c in node.docker.containers.list(all=True, filters={"label": mine})
        ]
        found += [f"{node.name} volume {v.name}" for v in node.docker.volumes.list(filters={"label": mine})]
    return found
