"""The backend interface the SandboxManager depends on (Docker today, a distributed engine later).

Methods are synchronous: the docker SDK is blocking, and the manager runs them in worker threads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from rpc.models.network import NetworkPolicy


@dataclass(frozen=True)
class StartSpec:
    sandbox_id: str
    image: str
    labels: dict[str, str]
    env: dict[str, str] = field(repr=False)
    server_id: str = ""
    workspace_mb: int | None = None  # the workspace's size limit (None: the backend's default)
    cpu_shares: int | None = None  # its CPU weight while it waits in the warm pool (None: the normal weight)


@dataclass(frozen=True)
class ContainerInfo:
    container_id: str
    sandbox_id: str
    status: str  # docker's: created, running, paused, restarting, exited, dead, removing
    labels: dict[str, str] = field(repr=False)
    agent_url: str | None  # when running: http://<bridge address>:8080 or http://127.0.0.1:<published port>
    image_id: str = ""  # the id of the image it runs ("": the backend cannot tell)


class SandboxBackend(Protocol):
    def ping(self) -> None: ...

    def image_exists(self, image: str) -> bool: ...

    def image_id(self, image: str) -> str | None:
        """The id the image name stands for now (None: missing, or the backend cannot tell): the warm pool
        hands out no sandbox of another image id."""
        ...

    def set_cpu_shares(self, container_id: str, shares: int) -> None:
        """Change a running sandbox's CPU weight (a claimed pooled sandbox gets the normal one back)."""
        ...

    def start(self, spec: StartSpec) -> ContainerInfo: ...

    def start_code_runner(self, container_id: str, secret: str) -> None:
        """Start the sandbox's code runner daemon, handing it `secret` (see sandbox_image.code.channel)."""
        ...

    def host_addresses(self) -> list[str]: ...

    def host_networks(self) -> list[str]:
        """The subnets attached to the engine's host (its LAN), where known."""
        ...

    def apply_network_policy(
        self, sandbox_id: str, container_id: str, image: str, policy: NetworkPolicy, server_id: str
    ) -> str: ...

    def sweep_leftovers(self, server_id: str, live_ids: set[str], grace_s: float) -> None:
        """Remove what sandboxes no longer in `live_ids` left behind (finished network guards, workspace
        images): `server_id`'s, and other servers' that are more than `grace_s` old."""
        ...

    def inspect(self, container_id: str) -> ContainerInfo | None: ...

    def freeze(self, container_id: str) -> None:
        """Pause every process of the sandbox (no CPU, memory kept): the engine's freezer."""
        ...

    def thaw(self, container_id: str) -> None: ...

    def try_claim(self, container_id: str, claimant: str) -> bool:
        """Take a pooled sandbox for `claimant` before its agent is claimed; False when another process
        took it first (it is theirs then: leave it alone). Exactly one of concurrent callers wins."""
        ...

    def remove(self, sandbox_id: str, container_id: str | None) -> None: ...

    def list_sandboxes(self, namespace: str) -> list[ContainerInfo]: ...

    def list_orphan_volumes(self, namespace: str, live_ids: set[str]) -> list[tuple[str, dict[str, str]]]:
        """Workspace volumes of the namespace whose sandbox is not in `live_ids`: (volume, its labels)."""
        ...

    def remove_volume(self, name: str) -> None: ...

    def logs_tail(self, container_id: str, lines: int = 40) -> str: ...

    def remove_network_if_unused(self) -> None: ...
