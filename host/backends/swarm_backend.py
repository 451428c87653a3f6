"""SwarmBackend: sandboxes as one-replica Docker Swarm services (BOXWRIGHT_BACKEND=swarm, docs/fleet.md).

The manager engine schedules; each sandbox is a service with restart condition `none`, placed on
nodes labelled `boxwright.sandboxes=true` (swarm spreads services over them), reached at the node's
address and the task's host-mode published port (endpoint mode dnsrr: without IPVS the routing mesh
does not work). What swarm cannot do goes to the engine of the node running the task, so the backend
needs each sandbox node's engine API too (BOXWRIGHT_SWARM_ENGINES): `docker exec` of the code runner,
the netguard container that joins the task's network namespace, and removal of the task's container
and volumes at once — through a DockerBackend bound to that node's engine, the same code as locally.

Hardening as host.backends.hardening where swarm allows it (docs/fleet-notes.md has the list): user
agent, every capability dropped, read-only root, pids/memory/CPU limits, an ICC-off namespace network
(a swarm-scoped bridge made from a config-only network on every node). no-new-privileges is not a
service option: it comes from `--no-new-privileges` / daemon.json on each node (`boxwright doctor
--backend swarm` checks it). Swarm's tmpfs mounts (API 1.41) take no uid, gid or exec option, so the
scratch dirs are local-driver volumes of type tmpfs, named per sandbox. The agent's hashes are not
in the service's environment (the spec shows it to anyone with the manager API) but in a swarm
secret mounted as a file only the agent's user can read (SandboxSettings.secrets_file).

Not on swarm: the workspace size limit (the volume is made on whichever node the task lands; the
loop-device filesystem would have to be made there first: host.sandboxes.limits refuses a workspaceMb),
swap equal to memory (swarm sets 2x).

Pause freezes the task's container on its node; swarm's task state stays `running`, so the pause is read
back from the node's engine (list_sandboxes, inspect) — a restarted server adopts it as paused.

Handles: ContainerInfo.container_id is the *service* id; the task (node, container) behind it is
looked up when needed. Service names are opaque like DockerBackend's container names.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import docker
import docker.errors

from host import labels, netinfo
from host.backends.base import ContainerInfo, SandboxBackend, StartSpec
from host.backends.docker_backend import DockerBackend, opaque_name, volume_name
from host.backends.hardening import AGENT_UID, Limits, tmpfs_mounts
from host.backends.runner import HANDSHAKE_TIMEOUT_S, start_code_runner
from host.config import Settings, size_bytes
from rpc.agent import AGENT_PORT, HASH_VARS
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.network import NetworkPolicy
from rpc.settings import EnvSettings

log = logging.getLogger(__name__)

T = TypeVar("T")

SANDBOX_NODE_LABEL = "boxwright.sandboxes"  # node label: "true" on nodes that may run sandboxes
AGENT_ADDRESS_LABEL = "boxwright.agent-address"  # node label: reach published ports here, not at Status.Addr
SECRETS_FILE = "boxwright-agent.env"  # /run/secrets/<this>, mode 0400, owner agent
SECRETS_PATH = f"/run/secrets/{SECRETS_FILE}"
STOP_GRACE_NS = 2_000_000_000
POLL_S = 0.05
NO_NODE_GRACE_S = 5.0  # "no suitable node" for this long: no labelled node, not a passing state
LABEL_HINT = f"label the sandbox nodes: docker node update --label-add {SANDBOX_NODE_LABEL}=true NODE"
ENGINES_HINT = (
    f"list every sandbox node's engine API in {Settings.env_name('swarm_engines')} and run "
    "`boxwright doctor --backend swarm`"
)
PUSH_HINT = "load the image on every sandbox node: `boxwright image push-nodes`"

# Task states (swarmkit's api.TaskState), mapped onto the container statuses ContainerInfo uses.
_BEFORE_RUNNING = {"new", "allocated", "pending", "assigned", "accepted", "preparing", "ready", "starting"}
_ENDED = {"complete", "shutdown", "failed", "rejected", "remove", "orphaned"}


START_ATTEMPTS = 2  # a task whose container never started is made once more (moby/moby#48783)
_NEVER_STARTED = "starting container failed"  # swarm's task error when the container never ran


class _NeverStarted(BoxwrightError):
    """SANDBOX_START_FAILED for a task that failed before its container ran: worth one more try."""


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


def connect(url: str | None, what: str) -> docker.DockerClient:
    """A client for the engine at `url` (None: DOCKER_HOST / the local socket), or DOCKER_UNAVAILABLE."""
    try:
        client = docker.DockerClient(base_url=url, timeout=60) if url else docker.from_env(timeout=60)
        client.ping()
    except docker.errors.DockerException as exc:
        raise BoxwrightError(
            ErrorCode.DOCKER_UNAVAILABLE,
            f"cannot reach the {what} at {url or 'DOCKER_HOST'}",
            hint=f"check {Settings.env_name('swarm_manager')} / {Settings.env_name('swarm_engines')}",
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


class SwarmBackend(SandboxBackend):
    def __init__(
        self,
        settings: Settings,
        *,
        manager: docker.DockerClient | None = None,
        engines: list[docker.DockerClient] | None = None,
    ) -> None:
        self.settings = settings
        # The node engines' DockerBackends run guards and exec and remove; they make no workspaces.
        self._node_settings = settings.replace(workspace_quota="off", backend="docker")
        self.manager = manager or connect(settings.swarm_manager, "swarm manager's engine")
        self._engine_list = (
            engines
            if engines is not None
            else [connect(u, "sandbox node's engine") for u in settings.swarm_engines or []]
        )
        self._nodes: dict[str, DockerBackend] = {}  # node id -> a DockerBackend on that node's engine
        self._lock = threading.Lock()
        self._network_lock = threading.Lock()

    # -- nodes -------------------------------------------------------------------------------
    def _map_engines(self) -> dict[str, DockerBackend]:
        found: dict[str, DockerBackend] = {}
        for client in self._engine_list:
            with contextlib.suppress(docker.errors.DockerException, KeyError):
                node_id = client.info()["Swarm"]["NodeID"]
                if node_id:
                    found[node_id] = node = DockerBackend(self._node_settings, client=client)
                    node.netguard_timeout_s = self._step_timeout_s
        return found

    def node(self, node_id: str) -> DockerBackend:
        """A DockerBackend on the engine of one node (exec, netguard, container and volume removal)."""
        with self._lock:
            if node_id not in self._nodes:
                self._nodes = self._map_engines()
            found = self._nodes.get(node_id)
        if found is None:
            raise BoxwrightError(
                ErrorCode.DOCKER_UNAVAILABLE,
                f"no engine API configured for swarm node {node_id}",
                hint=ENGINES_HINT,
                details={"nodeId": node_id},
            )
        return found

    def nodes(self) -> list[tuple[str, DockerBackend]]:
        with self._lock:
            if not self._nodes:
                self._nodes = self._map_engines()
            return list(self._nodes.items())

    def sandbox_nodes(self) -> list[dict[str, Any]]:
        """Ready, active nodes labelled for sandboxes (raw node objects)."""
        return [
            n.attrs
            for n in self.manager.nodes.list(filters={"node.label": f"{SANDBOX_NODE_LABEL}=true"})
            if n.attrs["Status"].get("State") == "ready" and n.attrs["Spec"].get("Availability") == "active"
        ]

    def node_engines(self) -> dict[str, docker.DockerClient]:
        """The engine of every sandbox node by hostname; SANDBOX_START_FAILED when no node is labelled,
        DOCKER_UNAVAILABLE when one has no engine configured."""
        nodes = self.sandbox_nodes()
        if not nodes:
            raise BoxwrightError(
                ErrorCode.SANDBOX_START_FAILED, "no ready node is labelled for sandboxes", hint=LABEL_HINT
            )
        return {n["Description"]["Hostname"]: self.node(n["ID"]).client for n in nodes}

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
                hint=f"point {Settings.env_name('swarm_manager')} (or DOCKER_HOST) at a manager node, "
                "or run `docker swarm init` there",
                details={"swarmState": info.get("Swarm", {}).get("LocalNodeState")},
            )

    def image_exists(self, image: str) -> bool:
        """On every sandbox node (a node without it rejects the task: no registry to pull from)."""
        return not self.nodes_missing_image(image)

    def image_id(self, image: str) -> str | None:
        """The id `image` names on every sandbox node (`boxwright image push-nodes` copies one image, id and
        all); None when a node lacks it or the nodes disagree, and the warm pool then judges no pooled
        sandbox by its image."""
        ids = set()
        for node in self.sandbox_nodes():
            try:
                ids.add(self.node(node["ID"]).client.images.get(image).id)
            except (docker.errors.ImageNotFound, BoxwrightError):
                return None
        return ids.pop() if len(ids) == 1 else None

    def set_cpu_shares(self, container_id: str, shares: int) -> None:
        """A no-op: a swarm service has no CPU weight (pooled sandboxes run at the normal one there)."""
        return None

    def nodes_missing_image(self, image: str) -> list[str]:
        """Hostnames of the sandbox nodes without `image` (or whose engine is not configured)."""
        missing = []
        for node in self.sandbox_nodes():
            try:
                self.node(node["ID"]).client.images.get(image)
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
        config-only network of that node (the bridge driver has no swarm-wide options). Under a lock:
        concurrent starts could both create a node's config-only network (the engine's duplicate check
        is racy), and two of one name make every later start fail as ambiguous."""
        with self._network_lock:
            return self._ensure_network_locked()

    def _ensure_network_locked(self) -> str:
        for _, node in self.nodes():
            if not _has_network(node.client, self.network_config_name):
                with contextlib.suppress(docker.errors.APIError):  # a concurrent server made it
                    _create_network(
                        node.client,
                        Name=self.network_config_name,
                        Options={"com.docker.network.bridge.enable_icc": "false"},
                        Labels={labels.NAMESPACE: self.settings.namespace},
                        ConfigOnly=True,
                        CheckDuplicate=True,
                    )
        if not _has_network(self.manager, self.network_name):
            try:
                _create_network(
                    self.manager,
                    Name=self.network_name,
                    Driver="bridge",
                    Scope="swarm",
                    ConfigFrom={"Network": self.network_config_name},  # takes no labels or options of its own
                    CheckDuplicate=True,
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
        for _, node in self.nodes():
            for net in _networks(node.client, self.network_config_name):
                # The node lets go of the swarm network's local instance a moment after its removal.
                with contextlib.suppress(docker.errors.APIError):
                    _retry(net.remove, f"removing network {net.name}", timeout_s=5.0)

    # -- lifecycle ---------------------------------------------------------------------------
    def service_spec(self, spec: StartSpec, secret_id: str, image_id: str | None = None) -> dict[str, Any]:
        """The `create_service` arguments of a sandbox (public for measurements, like run_kwargs)."""
        limits = Limits.of(self.settings)
        sid = spec.sandbox_id
        mounts: list[dict[str, Any]] = [
            {
                "Type": "volume",
                "Source": volume_name(sid),
                "Target": "/workspace",
                "VolumeOptions": {"Labels": spec.labels},  # sealed: reconcile tells its own orphans by them
            },
            {"Type": "tmpfs", "Target": "/dev/shm", "TmpfsOptions": {"SizeBytes": size_bytes(limits.shm_size)}},
        ]
        for target, opts in tmpfs_mounts(limits.tmp_size).items():
            mounts.append(
                {
                    "Type": "volume",
                    "Source": scratch_volume_name(sid, target),
                    "Target": target,
                    "VolumeOptions": {
                        "Labels": spec.labels,
                        "DriverConfig": {"Name": "local", "Options": {"type": "tmpfs", "device": "tmpfs", "o": opts}},
                    },
                }
            )
        env = {k: v for k, v in spec.env.items() if k not in HASH_VARS}
        env[EnvSettings.env_name("secrets_file")] = SECRETS_PATH
        task_template = {
            "ContainerSpec": {
                "Image": spec.image,
                "Hostname": "sandbox",
                "User": "agent",
                "Env": [f"{k}={v}" for k, v in env.items()],
                "Labels": spec.labels,
                "ReadOnly": True,
                "CapabilityDrop": ["ALL"],
                "Mounts": mounts,
                "Secrets": [
                    {
                        "File": {"Name": SECRETS_FILE, "UID": str(AGENT_UID), "GID": str(AGENT_UID), "Mode": 0o400},
                        "SecretID": secret_id,
                        "SecretName": self.secret_name(sid),
                    }
                ],
                "StopGracePeriod": STOP_GRACE_NS,
            },
            "Resources": {
                # docker-py's Resources has no Pids: the raw dict carries it.
                "Limits": {
                    "NanoCPUs": limits.nano_cpus or 0,
                    "MemoryBytes": size_bytes(limits.mem_limit),
                    "Pids": limits.pids_limit,
                }
            },
            "RestartPolicy": {"Condition": "none"},
            "Placement": {"Constraints": [f"node.labels.{SANDBOX_NODE_LABEL}==true"]},
            "Networks": [{"Target": self._ensure_network()}],
        }
        return {
            "task_template": task_template,
            "name": opaque_name(),
            "labels": {**spec.labels, labels.IMAGE_ID: image_id} if image_id else spec.labels,
            "mode": {"Replicated": {"Replicas": 1}},
            "endpoint_spec": {
                "Mode": "dnsrr",
                "Ports": [{"Protocol": "tcp", "TargetPort": AGENT_PORT, "PublishMode": "host"}],
            },
        }

    @staticmethod
    def secret_name(sandbox_id: str) -> str:
        return f"boxwright-{sandbox_id}-agent"

    def start(self, spec: StartSpec) -> ContainerInfo:
        """Service and secret, then the task running; a task whose container never started is tried once more.

        moby/moby#48783: now and then (about 1 start in 100-200 with a secret mounted, and every
        sandbox has one) a node fails a task with "starting container failed: unable to remount dir
        as readonly … device or resource busy". The container never ran, so nothing is lost by
        removing the service and making it again; a second failure is answered as it is.
        """
        deadline = time.monotonic() + self.settings.startup_timeout
        for _ in range(START_ATTEMPTS - 1):
            try:
                return self._start_once(spec, deadline)
            except _NeverStarted as exc:
                if time.monotonic() >= deadline:
                    raise
                log.warning("sandbox %s: %s; starting it again", spec.sandbox_id, exc.message)
        return self._start_once(spec, deadline)

    def _start_once(self, spec: StartSpec, deadline: float) -> ContainerInfo:
        hashes = "".join(f"{k}={v}\n" for k, v in spec.env.items() if k in HASH_VARS)
        try:
            secret = self.manager.secrets.create(
                name=self.secret_name(spec.sandbox_id), data=hashes, labels=spec.labels
            )
            image_id = self.image_id(spec.image)
            created = self.manager.api.create_service(**self.service_spec(spec, secret.id or "", image_id))
            task = self._wait_running(created["ID"], deadline)
        except BaseException as exc:
            with contextlib.suppress(Exception):
                self.remove(spec.sandbox_id, None)
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
            image_id=image_id or "",
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
                    missing = "No such image" in task.error
                    never_started = not missing and task.state == "failed" and task.error.startswith(_NEVER_STARTED)
                    raise (_NeverStarted if never_started else BoxwrightError)(
                        ErrorCode.IMAGE_NOT_FOUND if missing else ErrorCode.SANDBOX_START_FAILED,
                        f"the sandbox task {task.state}: {task.error or 'no reason given'}",
                        hint=PUSH_HINT if missing else None,
                        details={"nodeId": task.node_id, "taskState": task.state},
                    )
                if "no suitable node" in task.error:
                    no_node_since = no_node_since or now
                    if now - no_node_since > NO_NODE_GRACE_S:
                        raise BoxwrightError(
                            ErrorCode.SANDBOX_START_FAILED,
                            f"no swarm node can take the sandbox: {task.error}",
                            hint=LABEL_HINT,
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

    def _on_node(self, service_id: str) -> tuple[DockerBackend, Task]:
        task = self.task(service_id)
        if task is None or not task.container_id:
            raise BoxwrightError(ErrorCode.SANDBOX_NOT_RUNNING, "the sandbox has no running task")
        return self.node(task.node_id), task

    def start_code_runner(self, container_id: str, secret: str) -> None:
        """`docker exec` as `runner` on the engine of the node running the task (swarm has no exec).

        The handshake (like the network guard) may take the whole start-up time, not the one engine's fixed
        budget (HANDSHAKE_TIMEOUT_S): a fleet's starts come in bursts (20 at once from two servers), and every
        runner of a burst boots on a node's CPUs next to the agents and network guards of the others — ready
        only after all of them got their turn."""
        node, task = self._on_node(container_id)
        start_code_runner(node.client.api, task.container_id, secret, self._step_timeout_s)

    @property
    def _step_timeout_s(self) -> float:
        """How long one start-up step on a node may take (the code runner's handshake, the network guard):
        the whole start-up time rather than the one engine's fixed budgets — see start_code_runner."""
        return max(HANDSHAKE_TIMEOUT_S, self.settings.startup_timeout)

    def host_addresses(self) -> list[str]:
        """Addresses a `public` sandbox must not reach: every node's, and this machine's own."""
        found = set(netinfo.local_addresses())
        for node in self.manager.nodes.list():
            attrs = node.attrs
            found.add(attrs["Status"].get("Addr", ""))
            found.add((attrs.get("ManagerStatus") or {}).get("Addr", "").rsplit(":", 1)[0])
            found.add((attrs["Spec"].get("Labels") or {}).get(AGENT_ADDRESS_LABEL, ""))
        return sorted(a for a in found if a and a not in ("0.0.0.0", "127.0.0.1"))

    def host_networks(self) -> list[str]:
        """Unknown for remote nodes (private ranges are blocked in `public` mode anyway; docs/fleet.md)."""
        return []

    def apply_network_policy(
        self, sandbox_id: str, container_id: str, image: str, policy: NetworkPolicy, server_id: str
    ) -> str:
        """DockerBackend's netguard, run on the node's engine against the task's container."""
        node, task = self._on_node(container_id)
        return node.apply_network_policy(sandbox_id, task.container_id, image, policy, server_id)

    def sweep_leftovers(self, server_id: str, live_ids: set[str], grace_s: float) -> None:
        for _, node in self.nodes():
            node.sweep_leftovers(server_id, live_ids, grace_s)

    def inspect(self, container_id: str) -> ContainerInfo | None:
        try:
            service = self.manager.api.inspect_service(container_id)
        except docker.errors.NotFound:
            return None
        task = self.task(service["ID"])
        return self._info(service, task, paused=task is not None and self._is_paused(task))

    def remove(self, sandbox_id: str, container_id: str | None) -> None:
        """Service, task container, volumes and secret; a no-op for what is already gone.

        The task container is force-removed on its node at once (swarm would stop it gracefully
        and remove it some seconds later), so the volumes can go too.
        """
        mine = f"{labels.SANDBOX}={sandbox_id}"
        services = [container_id] if container_id else []
        services += [s["ID"] for s in self.manager.api.services(filters={"label": mine}) if s["ID"] not in services]
        for service in services:
            with contextlib.suppress(docker.errors.NotFound):
                self.manager.api.remove_service(service)
        for _, node in self.nodes():
            node.remove(sandbox_id, None)  # its task container (by label) and workspace volume
            for vol in node.client.volumes.list(filters={"label": mine}):  # the scratch volumes
                with contextlib.suppress(docker.errors.NotFound):
                    _retry(functools.partial(vol.remove, force=True), f"removing volume {vol.name}")
        for secret in self.manager.secrets.list(filters={"label": mine}):
            with contextlib.suppress(docker.errors.NotFound):
                _retry(secret.remove, f"removing secret {secret.name}")

    def freeze(self, container_id: str) -> None:
        node, task = self._on_node(container_id)
        node.freeze(task.container_id)

    def thaw(self, container_id: str) -> None:
        node, task = self._on_node(container_id)
        node.thaw(task.container_id)

    def try_claim(self, container_id: str, claimant: str) -> bool:
        """Claim an unclaimed sandbox (a warm-pool one) for `claimant`; True only for the one caller
        whose label update landed. The update carries the version read just before, so the swarm's
        store rejects every other writer ("update out of sequence"): compare-and-swap across any
        number of Boxwright servers. A label-only update leaves the running task alone."""
        service = self.manager.api.inspect_service(container_id)
        spec = service["Spec"]
        current = dict(spec.get("Labels") or {})
        if current.get(labels.CLAIMED_BY):
            return False
        current[labels.CLAIMED_BY] = claimant
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
        paused = self._paused_containers(namespace)
        return [
            self._info(s, task := newest.get(s["ID"]), paused=task is not None and task.container_id in paused)
            for s in services
        ]

    def _paused_containers(self, namespace: str) -> set[str]:
        """Ids of the namespace's paused task containers on every node. Swarm's task state stays `running`
        while the container is frozen, so the pause is read where it is kept: the node engine's freezer."""
        found: set[str] = set()
        for _, node in self.nodes():
            with contextlib.suppress(docker.errors.DockerException):
                for c in node.client.api.containers(
                    filters={"label": f"{labels.NAMESPACE}={namespace}", "status": "paused"}, quiet=True
                ):
                    found.add(c["Id"])
        return found

    def _is_paused(self, task: Task) -> bool:
        if task.state != "running" or not task.container_id:
            return False
        try:
            state = self.node(task.node_id).client.api.inspect_container(task.container_id)["State"]
        except (docker.errors.DockerException, BoxwrightError):
            return False
        return bool(state.get("Paused"))

    def list_orphan_volumes(self, namespace: str, live_ids: set[str]) -> list[tuple[str, dict[str, str]]]:
        """One entry per sandbox without a service that left volumes (on any node) or a secret behind:
        its workspace volume's name and the sealed labels. remove_volume then removes all of it."""
        flt = {"label": [labels.SANDBOX, f"{labels.NAMESPACE}={namespace}"]}
        found: dict[str, dict[str, str]] = {}
        for _, node in self.nodes():
            for vol in node.client.volumes.list(filters=flt):
                lab = dict(vol.attrs.get("Labels") or {})
                found.setdefault(lab.get(labels.SANDBOX, ""), lab)
        for secret in self.manager.secrets.list(filters=flt):
            lab = dict(secret.attrs["Spec"].get("Labels") or {})
            found.setdefault(lab.get(labels.SANDBOX, ""), lab)
        return [(volume_name(sid), lab) for sid, lab in sorted(found.items()) if sid and sid not in live_ids]

    def remove_volume(self, name: str) -> None:
        self.remove(name.removeprefix("boxwright-").removesuffix("-workspace"), None)

    def logs_tail(self, container_id: str, lines: int = 40) -> str:
        try:
            node, task = self._on_node(container_id)
        except BoxwrightError:
            return ""
        return node.logs_tail(task.container_id, lines)

    # -- helpers -----------------------------------------------------------------------------
    def _info(self, service: dict[str, Any], task: Task | None, *, paused: bool = False) -> ContainerInfo:
        lab = dict(service["Spec"].get("Labels") or {})
        if task is None or task.state in _BEFORE_RUNNING:
            status = "created"
        elif task.state == "running":
            status = "paused" if paused else "running"
        else:
            status = "exited"
        return ContainerInfo(
            container_id=service["ID"],
            sandbox_id=lab.get(labels.SANDBOX, ""),
            status=status,
            labels=lab,
            agent_url=self._agent_url(task) if task else None,
            image_id=lab.get(labels.IMAGE_ID, ""),
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
        port=next((p.get("PublishedPort") for p in ports if p.get("TargetPort") == AGENT_PORT), None),
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
