"""`boxwright doctor --backend swarm`: what a swarm needs before it can run sandboxes, checked one by one
with the fix for each failure — a manager, labelled ready nodes, an engine API for each, the image (the
same one) on each, no-new-privileges on each engine (not a service option: each node's daemon must
set it), and each node's published ports reachable from this host."""

from __future__ import annotations

import contextlib
import time
import urllib.request
from collections.abc import Callable

import docker
import docker.errors
from docker.models.containers import Container

from host import labels
from host.backends.swarm_backend import LABEL_HINT, PUSH_HINT, SwarmBackend
from host.config import Settings
from rpc.errors import BoxwrightError

Report = Callable[[bool, str, str], None]  # (good, what, fix)

PROBE_TIMEOUT_S = 30
NNP_HINT = 'set "no-new-privileges": true in the node\'s /etc/docker/daemon.json (or dockerd --no-new-privileges)'
PORT_HINT = (
    "allow this host to the node's dynamic port range (Docker's 32768-60999) in the node's firewall, or set the "
    "node label boxwright.agent-address to an address this host reaches (docs/fleet.md)"
)


def check_swarm(settings: Settings, report: Report, local: docker.DockerClient | None) -> None:
    """Report every check; `local` is this machine's engine (where `boxwright image build` puts the image)."""
    try:
        backend = SwarmBackend(settings)
        backend.ping()
    except BoxwrightError as exc:
        report(False, f"swarm manager: {exc.message}", exc.hint)
        return
    report(True, "swarm manager reachable and a manager", "")
    nodes = backend.sandbox_nodes()
    report(bool(nodes), f"{len(nodes)} ready, active node(s) labelled for sandboxes", LABEL_HINT)
    want = _local_image_id(local, settings.image)
    for node in nodes:
        name = node["Description"]["Hostname"]
        try:
            engine = backend.node(node["ID"]).client
        except BoxwrightError as exc:
            report(False, f"node {name}: {exc.message}", exc.hint)
            continue
        report(True, f"node {name}: engine API configured", "")
        try:
            found = engine.images.get(settings.image).id
        except docker.errors.ImageNotFound:
            report(False, f"node {name}: image {settings.image} missing", PUSH_HINT)
            continue
        same = want is None or found == want
        report(same, f"node {name}: image {settings.image}" + ("" if same else " differs from this host's"), PUSH_HINT)
        nnp = _no_new_privileges(engine, settings)
        report(nnp is True, f"node {name}: no-new-privileges " + ("on" if nnp is True else f"off ({nnp})"), NNP_HINT)
        reached = _port_reachable(engine, settings, backend.node_address(node["ID"]))
        report(reached is True, f"node {name}: published ports reachable from here" + _why(reached), PORT_HINT)


def _why(result: bool | str) -> str:
    return "" if result is True else f" — no: {result}"


def _local_image_id(local: docker.DockerClient | None, image: str) -> str | None:
    if local is None:
        return None
    try:
        return local.images.get(image).id
    except docker.errors.DockerException:
        return None


def _probe(engine: docker.DockerClient, settings: Settings, command: list[str], **kwargs: object) -> Container:
    """A throw-away container of the sandbox image, as the sandbox user and with every capability dropped."""
    return engine.containers.run(
        settings.image,
        command,
        detach=True,
        user="agent",
        cap_drop=["ALL"],
        read_only=True,
        labels={labels.NAMESPACE: settings.namespace, labels.ROLE: "doctor"},
        mem_limit="128m",
        **kwargs,
    )


def _no_new_privileges(engine: docker.DockerClient, settings: Settings) -> bool | str:
    """Whether a container started without the option gets NoNewPrivs (only the daemon's flag gives it;
    `docker info` does not show it)."""
    try:
        probe = _probe(engine, settings, ["grep", "NoNewPrivs", "/proc/self/status"], network_mode="none")
    except docker.errors.DockerException as exc:
        return f"probe failed: {str(exc)[:200]}"
    try:
        probe.wait(timeout=PROBE_TIMEOUT_S)
        out = probe.logs().decode("utf-8", "replace")
    finally:
        with contextlib.suppress(docker.errors.DockerException):
            probe.remove(force=True)
    return True if out.split() == ["NoNewPrivs:", "1"] else out.strip() or "no answer"


def _port_reachable(engine: docker.DockerClient, settings: Settings, address: str) -> bool | str:
    """GET a page served by a container on the node, published like a sandbox's agent (a random port of
    the engine on every interface), at the address the backend would use."""
    try:
        probe = _probe(
            engine, settings, ["python3", "-m", "http.server", "8080", "--directory", "/etc"], ports={"8080/tcp": None}
        )
    except docker.errors.DockerException as exc:
        return f"probe failed: {str(exc)[:200]}"
    try:
        probe.reload()
        port = probe.ports["8080/tcp"][0]["HostPort"]
        deadline = time.monotonic() + PROBE_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(f"http://{address}:{port}/hostname", timeout=3) as answer:
                    return True if answer.status == 200 else f"HTTP {answer.status}"
            except OSError as exc:
                if time.monotonic() > deadline:
                    return f"{address}:{port}: {exc}"
                time.sleep(0.2)
    finally:
        with contextlib.suppress(docker.errors.DockerException):
            probe.remove(force=True)
