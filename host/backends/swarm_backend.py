"""SwarmBackend (prototype, issue 13 phase A): sandboxes as one-replica Docker Swarm services.

The manager engine schedules; each sandbox is a service with restart condition `none`, placed on
nodes labelled `boxwright.sandboxes=true` (swarm spreads services over them), reached at the node's
address and the task's host-mode published port (endpoint mode dnsrr: this kernel has no IPVS for
the routing mesh). What swarm cannot do goes to the engine of the node running the task, so the
backend needs each sandbox node's engine API too (BOXWRIGHT_SWARM_ENGINES): `docker exec` of the
code runner, the netguard container that joins the task's network namespace, and removal of the
task's container and volumes at once.

Hardening as DockerBackend where swarm allows it (docs/fleet-notes.md has the list): user agent,
every capability dropped, read-only root, pids/memory/CPU limits, ICC-off namespace network (a
swarm-scoped bridge made from a config-only network on every node), the token's hash also as a
swarm secret readable by `agent` only. no-new-privileges is not a service option: it comes from
`--no-new-privileges` / daemon.json on each node. Swarm's tmpfs mounts (API 1.41) take no uid, gid
or exec option, so the scratch dirs are local-driver volumes of type tmpfs, named per sandbox.

Handles: ContainerInfo.container_id is the *service* id; the task (node, container) behind it is
looked up when needed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import docker
import docker.errors
from docker.utils import parse_bytes

from host import labels
from host.backends.base import ContainerInfo, StartSpec
from host.backends.docker_backend import (
    AGENT_PORT,
    AGENT_UID,
    CODE_RUNNER_CMD,
    DockerBackend,
    container_name,
    local_host_addresses,
    tmpfs_mounts,
    volume_name,
)
from host.config import Settings
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.network import NetworkPolicy

log = logging.getLogger(__name__)

T = TypeVar("T")

SANDBOX_NODE_LABEL = "boxwright.sandboxes"  # node label: "true" on nodes that may run sandboxes
AGENT_ADDRESS_LABEL = "boxwright.agent-address"  # node label: reach published ports here, not at Status.Addr
TOKEN_SECRET_FILE = "boxwright-token-sha256"  # /run/secrets/<this>, mode 0400, owner agent
CLAIM_LABEL = labels.PREFIX + "claimed-by"  # service label: which server took a pooled sandbox
SERVICE_LABEL = "com.docker.swarm.service.name"  # set by swarm on task containers
AGENT_TARGET_PORT = int(AGENT_PORT.split("/")[0])
STOP_GRACE_NS = 2_000_000_000
POLL_S = 0.05
NO_NODE_GRACE_S = 5.0  # "no suitable node" for this long: no labelled node, not a passing state

# Task states (swarmkit's api.TaskState), mapped onto the container statuses ContainerInfo uses.
_BEFORE_RUNNING = {"new", "allocated", "pending", "assigned", "accepted", "preparing", "ready", "starting"}
_ENDED = {"complete", "shutdown", "failed", "rejected", "remove", "orphaned"}


@dataclass(frozen=True)
class SwarmOptions:
    """Where the swarm is: a manager's engine API, and the engine APIs of the sandbox nodes."""

    manager_url: str | None = None  # None: DOCKER_HOST / the local socket
    engine_urls: tuple[str, ...] = ()

    @classmethod
    def from_env(cls) -> SwarmOptions:
        urls = tuple(u.strip() for u in os.environ.get("BOXWRIGHT_SWARM_ENGINES", "").split(",") if u.strip())
        return cls(manager_url=os.environ.get("BOXWRIGHT_SWARM_MANAGER") or None, engine_urls=urls)


@dataclass(frozen=True)
class Task:
    service_id: str
    node_id: str
    container_id: str
    state: str
    error: str
    port: int | None


def scratch_volume_name(sandbox_id: str, target: str) -> str:
    return f"boxwright-{sandbox_id}-{target.strip('/').replace('/', '-')}"


def _connect(url: str | None) -> docker.DockerClient:
    try:
        client = docker.DockerClient(base_url=url, timeout=60) if url else docker.from_env(timeout=60)
        client.ping()
    except docker.errors.DockerException as exc:
        raise BoxwrightError(
            ErrorCode.DOCKER_UNAVAILABLE,
            f"cannot reach the Docker engine at {url or 'DOCKER_HOST'}",
            details={"cause": str(exc).splitlines()[0][:300]},
        ) from exc
    return client


def _retry(fn: Callable[[], T], what: str, timeout_s: float = 10.0) -> T:
    """Swarm lets go of secrets, volumes and networks a moment after their task is gone."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return fn()
        except docker.errors.APIError as exc:
            if exc.status_code == 404:
                raise
            if time.monotonic() >= deadline:
                log.warning("%s: %s", what, exc)
                raise
            time.sleep(0.1)


class SwarmBackend:
    def __init__(
        self,
        settings: Settings,
        options: SwarmOptions | None = None,
        *,
        manager: docker.DockerClient | None = None,
        engines: list[docker.DockerClient] | None = None,
    ) -> None:
        self.settings = settings
        self.options = options or SwarmOptions.from_env()
        self.manager = manager or _connect(self.options.manager_url)
        self._engine_list = engines if engines is not None else [_connect(u) for u in self.options.engine_urls]
        self._engines: dict[str, docker.DockerClient] = {}  # node id -> that node's engine

    # -- engines -----------------------------------------------------------------------------
    def _map_engines(self) -> None:
        self._engines = {}
        for client in self._engine_list:
            with contextlib.suppress(docker.errors.DockerException):
                node_id = client.info()["Swarm"]["NodeID"]
                if node_id:
                    self._engines[node_id] = client

    def engine(self, node_id: str) -> docker.DockerClient:
        """The engine API of one node (exec, netguard, container and volume removal happen there)."""
        if node_id not in self._engines:
            self._map_engines()
        try:
            return self._engines[node_id]
        except KeyError:
            raise BoxwrightError(
                ErrorCode.DOCKER_UNAVAILABLE,
                f"no engine API configured for swarm node {node_id}",
                hint="add the node's engine URL to BOXWRIGHT_SWARM_ENGINES and check `boxwright doctor`",
                details={"nodeId": node_id},
            ) from None

    def engines(self) -> Iterator[tuple[str, docker.DockerClient]]:
        if not self._engines:
            self._map_engines()
        yield from list(self._engines.items())

    def sandbox_nodes(self) -> list[dict[str, Any]]:
        """Ready, active nodes labelled for sandboxes (raw node objects)."""
        return [
            n.attrs
            for n in self.manager.nodes.list(filters={"node.label": f"{SANDBOX_NODE_LABEL}=true"})
            if n.attrs["Status"].get("State") == "ready" and n.attrs["Spec"].get("Availability") == "active"
        ]

    def node_address(self, node_id: str) -> str:
        attrs = self.manager.nodes.get(node_id).attrs
        return (attrs["Spec"].get("Labels") or {}).get(AGENT_ADDRESS_LABEL) or attrs["Status"]["Addr"]

    # -- engine ------------------------------------------------------------------------------
    def ping(self) -> None:
        try:
            info = self.manager.info()
        except docker.errors.DockerException as exc:
            raise BoxwrightError(ErrorCode.DOCKER_UNAVAILABLE, "the swarm manager does not answer") from exc
        if not info.get("Swarm", {}).get("ControlAvailable"):
            raise BoxwrightError(
                ErrorCode.DOCKER_UNAVAILABLE,
                "the Docker engine is not a swarm manager",
                hint="point BOXWRIGHT_SWARM_MANAGER (or DOCKER_HOST) at a manager node, or `docker swarm init`",
                details={"swarmState": info.get("Swarm", {}).get("LocalNodeState")},
            )

    def image_exists(self, image: str) -> bool:
        """On every sandbox node (a node without it rejects the task: no registry to pull from)."""
        return not self.nodes_missing_image(image)

    def nodes_missing_image(self, image: str) -> list[str]:
        missing = []
        for node in self.sandbox_nodes():
            try:
                self.engine(node["ID"]).images.get(image)
            except (docker.errors.ImageNotFound, BoxwrightError):
                missing.append(node["Description"]["Hostname"])
        return missing

    # -- network -----------------------------------------------------------------------------
    @property
    def network_name(self) -> str:
        return f"boxwright-{self.settings.namespace}"

    @property
    def network_config_name(self) -> str:
        return f"boxwright-{self.settings.namespace}-config"

    def _ensure_network(self) -> str:
        """A swarm-scoped bridge with inter-container traffic off, instantiated on each node from a
        config-only network of that node (the bridge driver has no swarm-wide options)."""
        ns_label = {labels.NAMESPACE: self.settings.namespace}
        for _, client in self.engines():
            if not _has_network(client, self.network_config_name):
                with contextlib.suppress(docker.errors.APIError):  # a concurrent server made it
                    _create_network(
                        client,
                        Name=self.network_config_name,
                        Options={"com.docker.network.bridge.enable_icc": "false"},
                        Labels=ns_label,
                        ConfigOnly=True,
                    )
        if not _has_network(self.manager, self.network_name):
            try:
                _create_network(
                    self.manager,
                    Name=self.network_name,
                    Driver="bridge",
                    Scope="swarm",
                    ConfigFrom={"Network": self.network_config_name},  # takes no labels or options of its own
                )
            except docker.errors.APIError as exc:
                if not _has_network(self.manager, self.network_name):
                    raise BoxwrightError(
                        ErrorCode.SANDBOX_START_FAILED,
                        f"cannot create swarm network {self.network_name}",
                        details={"cause": str(exc)[:300]},
                    ) from exc
        return self.network_name

    def remove_network_if_unused(self) -> None:
        if self.manager.services.list(filters={"label": f"{labels.NAMESPACE}={self.settings.namespace}"}):
            return
        for net in _networks(self.manager, self.network_name):
            with contextlib.suppress(docker.errors.APIError):  # raced by a new sandbox: keep it
                net.remove()
        for _, client in self.engines():
            for net in _networks(client, self.network_config_name):
                # The node lets go of the swarm network's local instance a moment after its removal.
                with contextlib.suppress(docker.errors.APIError):
                    _retry(net.remove, f"removing network {net.name}", timeout_s=5.0)

    # -- lifecycle ---------------------------------------------------------------------------
    def service_spec(self, spec: StartSpec, secret_id: str) -> dict[str, Any]:
        """The `create_service` arguments of a sandbox (public for measurements, like run_kwargs)."""
        s = self.settings
        sid = spec.sandbox_id
        scope = {labels.SANDBOX: sid, labels.NAMESPACE: s.namespace}
        mounts: list[dict[str, Any]] = [
            {
                "Type": "volume",
                "Source": volume_name(sid),
                "Target": "/workspace",
                "VolumeOptions": {"Labels": scope},
            },
            {"Type": "tmpfs", "Target": "/dev/shm", "TmpfsOptions": {"SizeBytes": parse_bytes(s.shm_size)}},
        ]
        for target, opts in tmpfs_mounts(s.tmp_size).items():
            mounts.append(
                {
                    "Type": "volume",
                    "Source": scratch_volume_name(sid, target),
                    "Target": target,
                    "VolumeOptions": {
                        "Labels": scope,
                        "DriverConfig": {"Name": "local", "Options": {"type": "tmpfs", "device": "tmpfs", "o": opts}},
                    },
                }
            )
        task_template = {
            "ContainerSpec": {
                "Image": spec.image,
                "Hostname": "sandbox",
                "User": "agent",
                "Env": [f"{k}={v}" for k, v in spec.env.items()],
                "Labels": spec.labels,
                "ReadOnly": True,
                "CapabilityDrop": ["ALL"],
                "Mounts": mounts,
                "Secrets": [
                    {
                        "File": {
                            "Name": TOKEN_SECRET_FILE,
                            "UID": str(AGENT_UID),
                            "GID": str(AGENT_UID),
                            "Mode": 0o400,
                        },
                        "SecretID": secret_id,
                        "SecretName": self.secret_name(sid),
                    }
                ],
                "StopGracePeriod": STOP_GRACE_NS,
            },
            "Resources": {
                # docker-py's Resources has no Pids: the raw dict carries it.
                "Limits": {"NanoCPUs": s.nano_cpus, "MemoryBytes": parse_bytes(s.mem_limit), "Pids": s.pids_limit}
            },
            "RestartPolicy": {"Condition": "none"},
            "Placement": {"Constraints": [f"node.labels.{SANDBOX_NODE_LABEL}==true"]},
            "Networks": [{"Target": self._ensure_network()}],
        }
        return {
            "task_template": task_template,
            "name": container_name(sid),
            "labels": spec.labels,
            "mode": {"Replicated": {"Replicas": 1}},
            "endpoint_spec": {
                "Mode": "dnsrr",
                "Ports": [{"Protocol": "tcp", "TargetPort": AGENT_TARGET_PORT, "PublishMode": "host"}],
            },
        }

    @staticmethod
    def secret_name(sandbox_id: str) -> str:
        return f"boxwright-{sandbox_id}-token"

    def start(self, spec: StartSpec) -> ContainerInfo:
        token_hash = spec.env.get("BOXWRIGHT_TOKEN_SHA256", "")
        scope = {labels.SANDBOX: spec.sandbox_id, labels.NAMESPACE: self.settings.namespace}
        try:
            secret = self.manager.secrets.create(
                name=self.secret_name(spec.sandbox_id), data=token_hash.encode(), labels=scope
            )
            created = self.manager.api.create_service(**self.service_spec(spec, secret.id or ""))
            task = self._wait_running(created["ID"], time.monotonic() + self.settings.startup_timeout_s)
        except BaseException as exc:
            with contextlib.suppress(Exception):
                self.remove(spec.sandbox_id, None)
            if isinstance(exc, BoxwrightError):
                raise
            if isinstance(exc, docker.errors.DockerException):
                raise BoxwrightError(
                    ErrorCode.SANDBOX_START_FAILED,
                    "the swarm refused to start the sandbox service",
                    details={"cause": str(exc)[:500]},
                ) from exc
            raise
        return ContainerInfo(
            container_id=created["ID"],
            sandbox_id=spec.sandbox_id,
            status="running",
            labels=spec.labels,
            agent_url=self._agent_url(task),
        )

    def _wait_running(self, service_id: str, deadline: float) -> Task:
        no_node_since: float | None = None
        while True:
            task = self.task(service_id)
            now = time.monotonic()
            if task is not None:
                if task.state == "running" and task.port:
                    return task
                if task.state in _ENDED:
                    code = (
                        ErrorCode.IMAGE_NOT_FOUND if "No such image" in task.error else ErrorCode.SANDBOX_START_FAILED
                    )
                    raise BoxwrightError(
                        code,
                        f"the sandbox task {task.state}: {task.error or 'no reason given'}",
                        hint="load the image on every node (`boxwright image push-nodes`)"
                        if code is ErrorCode.IMAGE_NOT_FOUND
                        else None,
                        details={"nodeId": task.node_id, "taskState": task.state},
                    )
                if "no suitable node" in task.error:
                    no_node_since = no_node_since or now
                    if now - no_node_since > NO_NODE_GRACE_S:
                        raise BoxwrightError(
                            ErrorCode.SANDBOX_START_FAILED,
                            f"no swarm node can take the sandbox: {task.error}",
                            hint=f"label sandbox nodes: docker node update --label-add {SANDBOX_NODE_LABEL}=true NODE",
                        )
            if now >= deadline:
                raise BoxwrightError(
                    ErrorCode.SANDBOX_START_TIMEOUT,
                    "the sandbox task did not start in time",
                    details={"taskState": task.state if task else "none", "error": task.error if task else ""},
                )
            time.sleep(POLL_S)

    def task(self, service_id: str) -> Task | None:
        """The newest task of a one-replica service (restart condition none: there is one)."""
        tasks = self.manager.api.tasks(filters={"service": service_id})
        if not tasks:
            return None
        return _task(max(tasks, key=lambda t: t.get("CreatedAt", "")))

    def _agent_url(self, task: Task) -> str | None:
        if task.state != "running" or not task.port:
            return None
        return f"http://{self.node_address(task.node_id)}:{task.port}"

    def _node_backend(self, service_id: str) -> tuple[DockerBackend, Task]:
        task = self.task(service_id)
        if task is None or not task.container_id:
            raise BoxwrightError(ErrorCode.SANDBOX_NOT_RUNNING, "the sandbox has no running task")
        return DockerBackend(self.settings, client=self.engine(task.node_id)), task

    def start_code_runner(self, container_id: str) -> None:
        """`docker exec` as `runner` on the engine of the node running the task (swarm has no exec)."""
        node, task = self._node_backend(container_id)
        node.client.containers.get(task.container_id).exec_run(
            CODE_RUNNER_CMD, user="runner", detach=True, workdir="/workspace"
        )

    def host_addresses(self) -> list[str]:
        """Addresses a `public` sandbox must not reach: every node's, and this machine's own."""
        found = set(local_host_addresses())
        for node in self.manager.nodes.list():
            attrs = node.attrs
            found.add(attrs["Status"].get("Addr", ""))
            found.add((attrs.get("ManagerStatus") or {}).get("Addr", "").rsplit(":", 1)[0])
            found.add((attrs["Spec"].get("Labels") or {}).get(AGENT_ADDRESS_LABEL, ""))
        return sorted(a for a in found if a and a not in ("0.0.0.0", "127.0.0.1"))

    def apply_network_policy(self, sandbox_id: str, container_id: str, image: str, policy: NetworkPolicy) -> str:
        """DockerBackend's netguard, run on the node's engine against the task's container."""
        node, task = self._node_backend(container_id)
        return node.apply_network_policy(sandbox_id, task.container_id, image, policy)

    def remove_leftover_guards(self) -> None:
        for _, client in self.engines():
            DockerBackend(self.settings, client=client).remove_leftover_guards()

    def inspect(self, container_id: str) -> ContainerInfo | None:
        try:
            service = self.manager.api.inspect_service(container_id)
        except docker.errors.NotFound:
            return None
        return self._info(service, self.task(service["ID"]))

    def remove(self, sandbox_id: str, container_id: str | None) -> None:
        """Service, task container, volumes and secret; a no-op for what is already gone.

        The task container is force-removed on its node at once (swarm would stop it gracefully
        and remove it some seconds later), so the volumes can go too.
        """
        with contextlib.suppress(docker.errors.NotFound):
            self.manager.api.remove_service(container_id or container_name(sandbox_id))
        for _, client in self.engines():
            for c in client.containers.list(
                all=True, filters={"label": f"{SERVICE_LABEL}={container_name(sandbox_id)}"}
            ):
                _force_remove(client, c.id or "")
            _force_remove(client, f"{container_name(sandbox_id)}-netguard")
            for vol in client.volumes.list(filters={"label": f"{labels.SANDBOX}={sandbox_id}"}):
                with contextlib.suppress(docker.errors.NotFound):
                    _retry(lambda v=vol: v.remove(force=True), f"removing volume {vol.name}")
        for secret in self.manager.secrets.list(filters={"label": f"{labels.SANDBOX}={sandbox_id}"}):
            with contextlib.suppress(docker.errors.NotFound):
                _retry(secret.remove, f"removing secret {secret.name}")

    def try_claim(self, container_id: str, claimant: str) -> bool:
        """Claim an unclaimed sandbox (a warm-pool one) for `claimant`; True only for the one caller
        whose label update landed. The update carries the version read just before, so the swarm's
        store rejects every other writer ("update out of sequence"): compare-and-swap across any
        number of Boxwright servers. A label-only update leaves the running task alone."""
        service = self.manager.api.inspect_service(container_id)
        spec = service["Spec"]
        current = dict(spec.get("Labels") or {})
        if current.get(CLAIM_LABEL):
            return False
        current[CLAIM_LABEL] = claimant
        try:
            self.manager.api.update_service(
                service["ID"],
                service["Version"]["Index"],
                task_template=spec["TaskTemplate"],
                name=spec["Name"],
                labels=current,
                mode=spec.get("Mode"),
                endpoint_spec=spec.get("EndpointSpec"),
                fetch_current_spec=False,  # exactly the spec read above, nothing merged in
            )
        except docker.errors.APIError as exc:
            if "out of sequence" in str(exc):
                return False
            raise
        return True

    def list_sandboxes(self, namespace: str) -> list[ContainerInfo]:
        services = self.manager.api.services(filters={"label": [labels.SANDBOX, f"{labels.NAMESPACE}={namespace}"]})
        if not services:
            return []
        newest: dict[str, Task] = {}
        for raw in sorted(self.manager.api.tasks(), key=lambda t: t.get("CreatedAt", "")):
            newest[raw["ServiceID"]] = _task(raw)
        return [self._info(s, newest.get(s["ID"])) for s in services]

    def list_orphan_volumes(self, namespace: str, live_ids: set[str]) -> list[str]:
        """One workspace-volume name per sandbox that left volumes or a secret behind but has no service.

        The manager derives the sandbox id from that name and calls remove_volume, which removes
        all of that sandbox's leftovers on every node (scratch volumes, secret) — the protocol's
        volume-shaped orphan sweep, until it grows a sandbox-shaped one.
        """
        flt = {"label": [labels.SANDBOX, f"{labels.NAMESPACE}={namespace}"]}
        found: set[str] = set()
        for _, client in self.engines():
            found |= {(v.attrs.get("Labels") or {}).get(labels.SANDBOX, "") for v in client.volumes.list(filters=flt)}
        found |= {
            (s.attrs["Spec"].get("Labels") or {}).get(labels.SANDBOX, "")
            for s in self.manager.secrets.list(filters=flt)
        }
        return sorted(volume_name(sid) for sid in found if sid and sid not in live_ids)

    def remove_volume(self, name: str) -> None:
        sid = name.removeprefix("boxwright-").removesuffix("-workspace")
        self.remove(sid, None)

    def logs_tail(self, container_id: str, lines: int = 40) -> str:
        try:
            node, task = self._node_backend(container_id)
        except BoxwrightError:
            return ""
        return node.logs_tail(task.container_id, lines)

    # -- helpers -----------------------------------------------------------------------------
    def _info(self, service: dict[str, Any], task: Task | None) -> ContainerInfo:
        lab = dict(service["Spec"].get("Labels") or {})
        if task is None or task.state in _BEFORE_RUNNING:
            status = "created"
        elif task.state == "running":
            status = "running"
        else:
            status = "exited"
        return ContainerInfo(
            container_id=service["ID"],
            sandbox_id=lab.get(labels.SANDBOX, ""),
            status=status,
            labels=lab,
            agent_url=self._agent_url(task) if task else None,
        )


def _task(raw: dict[str, Any]) -> Task:
    status = raw.get("Status") or {}
    ports = (status.get("PortStatus") or {}).get("Ports") or []
    return Task(
        service_id=raw.get("ServiceID", ""),
        node_id=raw.get("NodeID", ""),
        container_id=(status.get("ContainerStatus") or {}).get("ContainerID", ""),
        state=status.get("State", ""),
        error=status.get("Err", ""),
        port=next((p.get("PublishedPort") for p in ports if p.get("TargetPort") == AGENT_TARGET_PORT), None),
    )


def _networks(client: docker.DockerClient, name: str) -> list[Any]:
    """Networks named exactly `name` (the engine's name filter also matches longer names)."""
    return [n for n in client.networks.list(names=[name]) if n.name == name]


def _has_network(client: docker.DockerClient, name: str) -> bool:
    return bool(_networks(client, name))


def _create_network(client: docker.DockerClient, **body: Any) -> None:
    """POST /networks/create with fields docker-py's create_network lacks (ConfigOnly, ConfigFrom)."""
    api = client.api
    api._result(api._post_json(api._url("/networks/create"), data=body), json=True)


def _force_remove(client: docker.DockerClient, target: str) -> None:
    """Remove a container and its anonymous volumes now; gone already or being removed is fine."""
    try:
        client.containers.get(target).remove(force=True, v=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        if exc.status_code != 409:
            raise
