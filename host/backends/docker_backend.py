"""DockerBackend: sandboxes as hardened Docker containers, through the docker SDK.

Each runs with the hardening of host.backends.hardening plus a named volume for /workspace. Sandboxes
sit on a namespace network with inter-container traffic disabled, so one sandbox cannot reach another.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import re
import secrets
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import docker
import docker.errors
from docker.models.containers import Container

from host import labels, netinfo
from host.backends.base import ContainerInfo, SandboxBackend, StartSpec
from host.backends.hardening import AGENT_PORT_SPEC, NORMAL_CPU_SHARES, Limits, hardened
from host.backends.runner import start_code_runner
from host.backends.workspace import WorkspaceDisks
from host.config import Settings
from rpc.agent import AGENT_PORT
from rpc.errors import BoxwrightError, ErrorCode, invalid_parameter
from rpc.models.network import NetworkPolicy
from rpc.netblocks import INTERNAL_HINT

log = logging.getLogger(__name__)

NETGUARD_CMD = ["python3", "-m", "sandbox_image.netguard"]
NETGUARD_TIMEOUT_S = 30
NETGUARD_REFUSED = 3  # sandbox_image.netguard.REFUSED_EXIT


def docker_client() -> docker.DockerClient:
    """A client for the engine in DOCKER_HOST (or the local socket), with a clear error when absent."""
    try:
        client = docker.from_env(timeout=60)
        client.ping()
    except docker.errors.DockerException as exc:
        raise BoxwrightError(
            ErrorCode.DOCKER_UNAVAILABLE,
            "cannot reach the Docker engine",
            details={"cause": str(exc).splitlines()[0][:300]},
        ) from exc
    return client


def _docker_time(value: str | None) -> datetime | None:
    """A time as the engine writes it (RFC 3339 with nanoseconds); None for its zero time or junk."""
    if not value or value.startswith("0001-"):
        return None
    try:
        return datetime.fromisoformat(re.sub(r"(\.\d{6})\d*", r"\1", value).replace("Z", "+00:00"))
    except ValueError:
        return None


def _start_failed(what: str, exc: BaseException) -> BoxwrightError:
    return BoxwrightError(ErrorCode.SANDBOX_START_FAILED, what, details={"cause": str(exc)[:500]})


def volume_name(sandbox_id: str) -> str:
    return f"boxwright-{sandbox_id}-workspace"


def opaque_name(role: str = "") -> str:
    """A container name unrelated to any sandbox id: names show to other sandboxes (a neighbour's address
    resolves back to its container's name through the engine's DNS), so they must not tell whose it is."""
    return f"boxwright-{role}{secrets.token_hex(8)}"


class DockerBackend(SandboxBackend):
    netguard_timeout_s: float = NETGUARD_TIMEOUT_S  # the swarm backend's node engines allow the start-up time

    def __init__(self, settings: Settings, client: docker.DockerClient | None = None) -> None:
        self.settings = settings
        self.client = client or docker_client()
        self._network_lock = threading.Lock()
        # Guards this process started and has not read yet: the reaper's sweep runs in another thread
        # every reap interval and must not take a just-finished guard whose report is being read.
        self._guards_in_flight: set[str] = set()
        self._guards_lock = threading.Lock()
        self.disks = WorkspaceDisks(
            self.client,
            settings.workspace_quota,
            settings.workspace_dir,
            engine_is_local=self.engine_is_local,
            image=settings.image,
            namespace=settings.namespace,
        )

    # -- engine -----------------------------------------------------------------------------
    def ping(self) -> None:
        try:
            self.client.ping()
        except docker.errors.DockerException as exc:
            raise BoxwrightError(ErrorCode.DOCKER_UNAVAILABLE, "the Docker engine does not answer") from exc

    def image_exists(self, image: str) -> bool:
        try:
            self.client.images.get(image)
        except docker.errors.ImageNotFound:
            return False
        return True

    def image_id(self, image: str) -> str | None:
        try:
            return self.client.images.get(image).id
        except docker.errors.ImageNotFound:
            return None

    def set_cpu_shares(self, container_id: str, shares: int) -> None:
        with contextlib.suppress(docker.errors.NotFound):  # removed meanwhile (e.g. it failed its claim)
            self.client.api.update_container(container_id, cpu_shares=shares)

    @property
    def network_name(self) -> str:
        return f"boxwright-{self.settings.namespace}"

    def _ensure_network(self) -> str:
        """One bridge network per namespace, inter-container communication off. Not cached: another
        server of the namespace removes it when its last sandbox goes."""
        name = self.network_name
        # One at a time in this server: two starts at once (a create while the warm pool refills) would
        # otherwise both make it, and the engine's duplicate check is racy — two networks of one name,
        # after which every start fails with "network … is ambiguous".
        with self._network_lock:
            if not self._network_exists(name):
                try:
                    self.client.networks.create(
                        name,
                        driver="bridge",
                        check_duplicate=True,
                        options={"com.docker.network.bridge.enable_icc": "false"},
                        labels={labels.NAMESPACE: self.settings.namespace},
                    )
                except docker.errors.APIError as exc:  # a concurrent server created it first
                    if not self._network_exists(name):
                        raise _start_failed(f"cannot create network {name}", exc) from exc
        return name

    def _network_exists(self, name: str) -> bool:
        """The engine's name filter matches substrings (namespace `a` would find `a-b`'s network): compare."""
        return any(net.name == name for net in self.client.networks.list(names=[name]))

    # -- lifecycle --------------------------------------------------------------------------
    def start(self, spec: StartSpec) -> ContainerInfo:
        if not self.image_exists(spec.image):
            # containers.run() would try to pull, and no registry may be reachable.
            raise BoxwrightError(
                ErrorCode.IMAGE_NOT_FOUND,
                f"sandbox image {spec.image} is not built",
                details={"image": spec.image},
            )
        vol = volume_name(spec.sandbox_id)
        size_mb = spec.workspace_mb or self.settings.workspace_mb
        try:
            disk = self.disks.prepare(spec.server_id, spec.sandbox_id, size_mb)
            self.client.volumes.create(name=vol, labels=spec.labels, driver="local", driver_opts=disk or None)
        except BaseException:
            self.remove(spec.sandbox_id, None)
            raise
        try:
            kwargs = self.run_kwargs(spec, vol)
            try:
                container = self.client.containers.run(spec.image, **kwargs)
            except docker.errors.NotFound as exc:
                if "network" not in str(exc):
                    raise
                # The network went away between ensuring and using it (its last sandbox was just
                # removed by another server of this namespace): make it again, once.
                self._remove_container(kwargs["name"])
                container = self.client.containers.run(spec.image, **self.run_kwargs(spec, vol))
        except docker.errors.DockerException as exc:
            self.remove(spec.sandbox_id, None)
            raise _start_failed("Docker refused to start the sandbox container", exc) from exc
        container.reload()
        return self._info(container)

    def run_kwargs(self, spec: StartSpec, volume: str) -> dict[str, Any]:
        """The `containers.run` arguments of a sandbox besides its image (hardening, limits, network).

        Public so that measurements (benchmarks/bench.py) start exactly the container a sandbox is.
        Creates the namespace network on first use.
        """
        kwargs = {
            **hardened(Limits.of(self.settings)),
            "detach": True,
            "name": opaque_name(),
            "hostname": "sandbox",
            "environment": spec.env,
            "labels": spec.labels,
            "volumes": {volume: {"bind": "/workspace", "mode": "rw"}},
            "network": self._ensure_network(),
            "restart_policy": {"Name": "no"},
        }
        if self.settings.pool_cpu_shares:  # pooled ones wait at a low weight: every other one gets the normal one
            kwargs["cpu_shares"] = spec.cpu_shares or NORMAL_CPU_SHARES
        return kwargs

    def start_code_runner(self, container_id: str, secret: str) -> None:
        """Start the code runner daemon as the `runner` user, handing it `secret` (host.backends.runner).

        A capability-less non-root agent cannot switch uid itself; the engine can, so the daemon
        that executes untrusted code runs as a different user than the agent and the browser.
        """
        start_code_runner(self.client.api, container_id, secret)

    def host_addresses(self) -> list[str]:
        """The engine host's own addresses, when the engine is on this machine (a local socket)."""
        return netinfo.local_addresses() if self.engine_is_local else []

    def host_networks(self) -> list[str]:
        """The subnets attached to the engine host's interfaces, when the engine is on this machine."""
        return netinfo.attached_networks() if self.engine_is_local else []

    @property
    def engine_is_local(self) -> bool:
        """The engine is reached through a local socket, so this machine is the engine's host."""
        return str(self.client.api.base_url).startswith("http+docker://")

    def apply_network_policy(
        self, sandbox_id: str, container_id: str, image: str, policy: NetworkPolicy, server_id: str
    ) -> str:
        """Load the policy's packet filter into the sandbox's network namespace; returns netguard's report.

        A throw-away container joins the sandbox's namespace with NET_ADMIN (and nothing else), runs
        `sandbox_image.netguard` and is removed. The sandbox never holds NET_ADMIN, so the rules are
        out of its reach. Raises SANDBOX_START_FAILED with netguard's message when it fails.
        """
        name = opaque_name("netguard-")
        with self._guards_lock:
            self._guards_in_flight.add(name)
        try:
            return self._run_guard(name, container_id, image, policy, server_id)
        finally:
            with self._guards_lock:
                self._guards_in_flight.discard(name)

    def _run_guard(self, name: str, container_id: str, image: str, policy: NetworkPolicy, server_id: str) -> str:
        try:
            guard = self.client.containers.run(
                image,
                [*NETGUARD_CMD, policy.model_dump_json()],
                detach=True,
                name=name,
                user="root",
                network_mode=f"container:{container_id}",
                cap_drop=["ALL"],
                cap_add=["NET_ADMIN"],
                security_opt=["no-new-privileges:true"],
                read_only=True,
                tmpfs={"/run": "rw,size=1m", "/tmp": "rw,size=1m"},
                labels={
                    labels.NAMESPACE: self.settings.namespace,
                    labels.ROLE: "netguard",
                    labels.SERVER: server_id,
                    labels.INSTANCE: self.settings.instance,
                },
                mem_limit="128m",
                pids_limit=32,
            )
        except docker.errors.DockerException as exc:
            raise _start_failed("cannot start the network guard", exc) from exc
        try:
            status = guard.wait(timeout=self.netguard_timeout_s).get("StatusCode", -1)
            out = guard.logs(stdout=True, stderr=False).decode("utf-8", "replace").strip()
            err = guard.logs(stdout=False, stderr=True).decode("utf-8", "replace").strip()
        except Exception as exc:  # requests' timeout or the engine failing mid-way
            raise _start_failed("the network guard did not finish", exc) from exc
        finally:
            # Off the critical path (~0.2 s): the guard has exited and holds nothing. Should this
            # process die first, reconcile's sweep_leftovers removes it.
            threading.Thread(target=self._remove_container, args=(guard.id or name,), daemon=True).start()
        if status == NETGUARD_REFUSED:  # an allowlist entry resolves to an internal address
            raise invalid_parameter("allowHosts", err.removeprefix("netguard: ")[-500:], hint=INTERNAL_HINT)
        if status != 0:
            raise BoxwrightError(
                ErrorCode.SANDBOX_START_FAILED,
                f"cannot apply network mode {policy.mode!r}: {err[-500:] or f'exit {status}'}",
                details={"networkMode": policy.mode},
            )
        return out

    def sweep_leftovers(self, server_id: str, live_ids: set[str], grace_s: float) -> None:
        self._remove_leftover_guards(server_id, grace_s)
        # The workspace directory may be shared with servers of other namespaces (its default is one path
        # per machine): a sandbox any of them runs, or a volume of one, keeps its image.
        self.disks.sweep(server_id, live_ids | self._sandbox_ids_anywhere(), grace_s)

    def _sandbox_ids_anywhere(self) -> set[str]:
        """Every sandbox id a container or volume on this engine carries, whatever its namespace."""
        found = self.client.containers.list(all=True, ignore_removed=True, filters={"label": [labels.SANDBOX]})
        ids = {(c.labels or {}).get(labels.SANDBOX, "") for c in found}
        for volume in self.client.volumes.list(filters={"label": [labels.SANDBOX]}):
            ids.add((volume.attrs.get("Labels") or {}).get(labels.SANDBOX, ""))
        return ids - {""}

    def _remove_leftover_guards(self, server_id: str, grace_s: float) -> None:
        """Finished guards of a server killed while one ran: ours, and others' finished `grace_s` ago
        (a live server may be reading its guard's report right now; running guards are never touched,
        nor are those this process is still reading: the sweep runs beside it every reap interval).
        Ours means this identity *and* this instance: on a swarm, servers on other hosts may share the
        identity, and one of them may be reading its just-finished guard on this node."""
        found = self.client.containers.list(
            all=True,
            ignore_removed=True,
            filters={
                "label": [f"{labels.ROLE}=netguard", f"{labels.NAMESPACE}={self.settings.namespace}"],
                "status": ["exited", "dead"],
            },
        )
        now = datetime.now(UTC)
        with self._guards_lock:
            reading = set(self._guards_in_flight)
        for c in found:
            if c.name in reading:  # this process is reading its report right now
                continue
            finished = _docker_time(c.attrs.get("State", {}).get("FinishedAt"))
            ours = c.labels.get(labels.SERVER) == server_id and c.labels.get(labels.INSTANCE) == self.settings.instance
            if ours or (finished and now - finished > timedelta(seconds=grace_s)):
                self._remove_container(c.id or "")

    def inspect(self, container_id: str) -> ContainerInfo | None:
        try:
            container = self.client.containers.get(container_id)
        except docker.errors.NotFound:
            return None
        return self._info(container)

    def try_claim(self, container_id: str, claimant: str) -> bool:
        """Always True: on one engine every server sharing a namespace is on this machine, and the pool
        holds the sandbox's ownership lock (a flock in the state dir) from its start to its claim."""
        return True

    def freeze(self, container_id: str) -> None:
        self._freezer(container_id, pause=True)

    def thaw(self, container_id: str) -> None:
        self._freezer(container_id, pause=False)

    def _freezer(self, container_id: str, *, pause: bool) -> None:
        try:
            container = self.client.containers.get(container_id)
            container.pause() if pause else container.unpause()
        except docker.errors.NotFound as exc:
            raise BoxwrightError(ErrorCode.SANDBOX_NOT_FOUND, "the sandbox's container is gone") from exc
        except docker.errors.APIError as exc:  # e.g. not running, or already (un)paused
            raise BoxwrightError(
                ErrorCode.SANDBOX_NOT_RUNNING,
                f"the engine cannot {'pause' if pause else 'resume'} the sandbox",
                details={"cause": str(exc)[:300]},
            ) from exc

    def remove(self, sandbox_id: str, container_id: str | None) -> None:
        """Remove the container and its workspace volume; a no-op for what is already gone."""
        if container_id:
            self._remove_container(container_id)
        else:  # found by its label: the container's name says nothing of its sandbox
            for found in self.client.containers.list(
                all=True, ignore_removed=True, filters={"label": f"{labels.SANDBOX}={sandbox_id}"}
            ):
                self._remove_container(found.id or "")
        self.remove_volume(volume_name(sandbox_id))
        self.disks.free(sandbox_id)  # its loop device and image, once the engine has unmounted it

    def _remove_container(self, target: str) -> None:
        try:
            self.client.containers.get(target).remove(force=True, v=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if exc.status_code != 409:  # 409: removal already in progress
                raise

    def remove_volume(self, name: str) -> None:
        with contextlib.suppress(docker.errors.NotFound):
            self.client.volumes.get(name).remove(force=True)

    def remove_network_if_unused(self) -> None:
        """Drop the namespace network once no container uses it (throw-away namespaces would pile up)."""
        for net in self.client.networks.list(names=[self.network_name]):
            if net.name != self.network_name:  # the filter matches substrings: another namespace's
                continue
            net.reload()
            if not net.attrs.get("Containers"):
                with contextlib.suppress(docker.errors.APIError):  # raced by a new sandbox: keep it
                    net.remove()

    def list_sandboxes(self, namespace: str) -> list[ContainerInfo]:
        found = self.client.containers.list(
            all=True, ignore_removed=True, filters={"label": [labels.SANDBOX, f"{labels.NAMESPACE}={namespace}"]}
        )
        return [self._info(c) for c in found]

    def list_orphan_volumes(self, namespace: str, live_ids: set[str]) -> list[tuple[str, dict[str, str]]]:
        vols = self.client.volumes.list(filters={"label": [labels.SANDBOX, f"{labels.NAMESPACE}={namespace}"]})
        found = [(v.name or "", dict(v.attrs.get("Labels") or {})) for v in vols]
        return [(name, lab) for name, lab in found if lab.get(labels.SANDBOX, "") not in live_ids]

    def logs_tail(self, container_id: str, lines: int = 40) -> str:
        try:
            raw: Any = self.client.containers.get(container_id).logs(tail=lines)
        except docker.errors.DockerException:
            return ""
        return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)

    # -- helpers ----------------------------------------------------------------------------
    def _info(self, container: Container) -> ContainerInfo:
        lab = dict(container.labels or {})
        return ContainerInfo(
            container_id=container.id or "",
            sandbox_id=lab.get(labels.SANDBOX, ""),
            status=container.status,
            labels=lab,
            agent_url=self._agent_url(container),
            image_id=str(container.attrs.get("Image") or ""),
        )

    def _agent_url(self, container: Container) -> str | None:
        return agent_url_of(
            container,
            self.network_name,
            attached=netinfo.attached_networks() if self.engine_is_local else [],
        )


def agent_url_of(container: Container, network_name: str, *, attached: list[str]) -> str | None:
    """Where the agent answers: its address on the namespace bridge when this machine routes there
    itself (`attached`: the subnets of this machine's interfaces, empty for a remote engine), else the
    port published on loopback; None until the container runs with one.

    The published port goes through dockerd's userland proxy (docker-proxy): one more process, two
    more socket copies and wake-ups on every call (~0.1 ms CPU and ~0.15 ms per round trip, measured).
    The bridge address is the one the proxy itself connects to, and the agent sees the same source
    (the bridge's gateway) either way, so nothing about what reaches the agent changes. The port stays
    published: it is the way in when the bridge is not this machine's (a remote engine, rootless
    Docker, a VM-hosted engine) and for anything that reads it."""
    published = None
    for b in (container.ports or {}).get(AGENT_PORT_SPEC) or []:
        if b.get("HostIp") in ("127.0.0.1", "") and b.get("HostPort"):
            published = f"http://127.0.0.1:{b['HostPort']}"
            break
    if published is None:
        return None
    networks = (container.attrs.get("NetworkSettings") or {}).get("Networks") or {}
    address = (networks.get(network_name) or {}).get("IPAddress") or ""
    return f"http://{address}:{AGENT_PORT}" if routed_here(address, attached) else published


def routed_here(address: str, attached: list[str]) -> bool:
    """`address` is an IPv4 address inside a subnet attached to one of this machine's interfaces (a
    bridge of the local engine shows up as one; rootless or VM-hosted engines' bridges do not)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return ip.version == 4 and any(ip in ipaddress.ip_network(net) for net in attached if ":" not in net)
