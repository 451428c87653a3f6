"""A SandboxBackend without Docker, so everything above the backend — the manager, the MCP tools, the
server, the CLI — gets fast tests that still talk to a real agent.

Each "container" is the real in-container agent (sandbox_image's aiohttp app) served on a 127.0.0.1
port, with the real code runner daemon on a Unix socket once `start_code_runner` is called, and a
directory of its own as workspace. They run on an event loop thread of the backend's own, as a
container runs beside the host: the caller's loop may block waiting on them.

What it leaves out: isolation (no users, namespaces or limits: code runs as the test's user), network
policies (recorded in `policies`, not enforced) and images (every image exists unless `images` says
which do). What it adds, for tests: `stop`, `pause` / `unpause`, `vanish` and `kill_code_runner` do
to a sandbox what a crash, `docker pause` or `docker rm` would.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import secrets
import shutil
import tempfile
import threading
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self, TypeVar

from aiohttp import web

from host import labels
from host.backends.base import ContainerInfo, SandboxBackend, StartSpec
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.network import NetworkPolicy
from rpc.settings import ENV_PREFIX
from sandbox_image.agent import create_agent_app
from sandbox_image.code.serving import RunnerDaemon
from sandbox_image.config import SandboxSettings

T = TypeVar("T")
IMAGE_LABELS = {"org.opencontainers.image.title": "boxwright-sandbox", labels.PREFIX + "source-hash": "sha256:0"}
CALL_TIMEOUT_S = 60.0


@dataclass
class FakeContainer:
    container_id: str
    sandbox_id: str
    labels: dict[str, str]
    settings: SandboxSettings
    volume: str
    status: str = "running"
    agent: web.AppRunner | None = None
    agent_url: str | None = None
    runner: RunnerDaemon | None = None
    serving: asyncio.Task[None] | None = None
    unpaused: asyncio.Event = field(default_factory=asyncio.Event)

    image_id: str = ""
    cpu_shares: int | None = None

    def info(self) -> ContainerInfo:
        url = self.agent_url if self.status in ("running", "paused") else None
        return ContainerInfo(self.container_id, self.sandbox_id, self.status, dict(self.labels), url, self.image_id)


class FakeBackend(SandboxBackend):
    def __init__(self, root: Path | None = None, *, images: set[str] | None = None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="bw-fake-", dir="/tmp")) if root is None else root
        self.images = images
        self.image_ids: dict[str, str] = {}  # image -> its id (default: derived from the name); tests re-point one
        self.policies: dict[str, NetworkPolicy] = {}  # sandbox id -> the policy it was given
        self.volumes: dict[str, dict[str, str]] = {}  # volume name -> its labels
        self._containers: dict[str, FakeContainer] = {}
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-backend", daemon=True)
        self._thread.start()

    # -- test controls -----------------------------------------------------------------------
    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every agent and runner, then the loop; delete the workspaces."""
        for container in list(self._containers.values()):
            self._run(self._shut_down(container))
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def container(self, sandbox_id: str) -> FakeContainer:
        return next(c for c in self._containers.values() if c.sandbox_id == sandbox_id)

    def stop(self, sandbox_id: str) -> None:
        """The container exited (its processes died): it stays, stopped."""
        container = self.container(sandbox_id)
        self._run(self._shut_down(container))
        container.status = "exited"

    def pause(self, sandbox_id: str) -> None:
        """Like `docker pause`: the agent accepts connections but answers nothing."""
        container = self.container(sandbox_id)
        self._loop.call_soon_threadsafe(container.unpaused.clear)
        container.status = "paused"

    def unpause(self, sandbox_id: str) -> None:
        container = self.container(sandbox_id)
        container.status = "running"
        self._loop.call_soon_threadsafe(container.unpaused.set)

    def vanish(self, sandbox_id: str) -> None:
        """Removed behind Boxwright's back (`docker rm -f`: its volume stays)."""
        container = self.container(sandbox_id)
        with self._lock:
            del self._containers[container.container_id]
        self._run(self._shut_down(container))

    def kill_code_runner(self, sandbox_id: str) -> None:
        container = self.container(sandbox_id)
        self._run(self._stop_runner(container))

    def add_volume(self, name: str, volume_labels: dict[str, str]) -> None:
        """A workspace volume left behind without its container."""
        with self._lock:
            self.volumes[name] = dict(volume_labels)

    # -- SandboxBackend ----------------------------------------------------------------------
    def ping(self) -> None:
        return None

    def image_exists(self, image: str) -> bool:
        return self.images is None or image in self.images

    def image_id(self, image: str) -> str | None:
        return self.image_ids.get(image, f"sha256:{image}") if self.image_exists(image) else None

    def set_cpu_shares(self, container_id: str, shares: int) -> None:
        container = self._containers.get(container_id)
        if container is not None:
            container.cpu_shares = shares

    def start(self, spec: StartSpec) -> ContainerInfo:
        if not self.image_exists(spec.image):
            raise BoxwrightError(ErrorCode.IMAGE_NOT_FOUND, f"sandbox image {spec.image} is not built")
        home = self.root / spec.sandbox_id
        (home / "workspace").mkdir(parents=True)
        sockets = Path(tempfile.mkdtemp(prefix="bw-", dir="/tmp"))  # a Unix socket path must stay short
        # The spec's environment, read by field name, wins over this process's (the agent shares it).
        from_env: dict[str, Any] = {name.removeprefix(ENV_PREFIX).lower(): value for name, value in spec.env.items()}
        settings = SandboxSettings(
            **from_env,
            workspace=str(home / "workspace"),
            runner_socket=str(sockets / "runner.sock"),
            runner_socket_group=None,
            runner_user=pwd.getpwuid(os.getuid()).pw_name,  # the daemon runs in this process, as us
        )
        container = FakeContainer(
            container_id="fake_" + secrets.token_hex(6),
            sandbox_id=spec.sandbox_id,
            labels={**IMAGE_LABELS, **spec.labels},  # the engine adds the image's labels to the container's
            settings=settings,
            volume=f"boxwright-{spec.sandbox_id}-workspace",
            image_id=self.image_id(spec.image) or "",
            cpu_shares=spec.cpu_shares,
        )
        container.unpaused.set()
        self._run(self._serve_agent(container))
        with self._lock:
            self.volumes[container.volume] = dict(spec.labels)
            self._containers[container.container_id] = container
        return container.info()

    def start_code_runner(self, container_id: str, secret: str) -> None:
        container = self._containers[container_id]
        self._run(self._stop_runner(container))  # a new daemon replaces the old one, as take-over does
        self._run(self._start_runner(container, secret))

    def host_addresses(self) -> list[str]:
        return []

    def host_networks(self) -> list[str]:
        return []

    def apply_network_policy(
        self, sandbox_id: str, container_id: str, image: str, policy: NetworkPolicy, server_id: str
    ) -> str:
        self.policies[sandbox_id] = policy
        return f'{{"mode": "{policy.mode}", "enforced": false}}'

    def sweep_leftovers(self, server_id: str, live_ids: set[str], grace_s: float) -> None:
        return None

    def inspect(self, container_id: str) -> ContainerInfo | None:
        container = self._containers.get(container_id)
        return container.info() if container is not None else None

    def try_claim(self, container_id: str, claimant: str) -> bool:
        return True

    def freeze(self, container_id: str) -> None:
        container = self._live(container_id)
        self.pause(container.sandbox_id)

    def thaw(self, container_id: str) -> None:
        container = self._live(container_id)
        if container.status != "paused":
            raise BoxwrightError(ErrorCode.SANDBOX_NOT_RUNNING, f"container {container_id} is not paused")
        self.unpause(container.sandbox_id)

    def _live(self, container_id: str) -> FakeContainer:
        container = self._containers.get(container_id)
        if container is None:
            raise BoxwrightError(ErrorCode.SANDBOX_NOT_FOUND, f"no container {container_id}")
        if container.status not in ("running", "paused"):
            raise BoxwrightError(ErrorCode.SANDBOX_NOT_RUNNING, f"container {container_id} is {container.status}")
        return container

    def remove(self, sandbox_id: str, container_id: str | None) -> None:
        with self._lock:
            found = [c for c in self._containers.values() if c.sandbox_id == sandbox_id]
            for container in found:
                del self._containers[container.container_id]
            self.volumes.pop(f"boxwright-{sandbox_id}-workspace", None)
        for container in found:
            self._run(self._shut_down(container))
        shutil.rmtree(self.root / sandbox_id, ignore_errors=True)

    def list_sandboxes(self, namespace: str) -> list[ContainerInfo]:
        return [c.info() for c in self._containers.values() if c.labels.get(labels.NAMESPACE) == namespace]

    def list_orphan_volumes(self, namespace: str, live_ids: set[str]) -> list[tuple[str, dict[str, str]]]:
        with self._lock:
            found = [(n, dict(lab)) for n, lab in self.volumes.items() if lab.get(labels.NAMESPACE) == namespace]
        return [(name, lab) for name, lab in found if lab.get(labels.SANDBOX, "") not in live_ids]

    def remove_volume(self, name: str) -> None:
        with self._lock:
            self.volumes.pop(name, None)

    def logs_tail(self, container_id: str, lines: int = 40) -> str:
        return ""

    def remove_network_if_unused(self) -> None:
        return None

    # -- on the backend's loop ---------------------------------------------------------------
    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(CALL_TIMEOUT_S)

    async def _serve_agent(self, container: FakeContainer) -> None:
        app = create_agent_app(container.settings)
        app.middlewares.append(_freezable(container))
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        host, port = runner.addresses[0][:2]
        container.agent, container.agent_url = runner, f"http://{host}:{port}"

    async def _start_runner(self, container: FakeContainer, secret: str) -> None:
        daemon = RunnerDaemon(container.settings)
        container.runner, container.serving = daemon, asyncio.create_task(daemon.serve(secret, connect_within_s=10))

    async def _stop_runner(self, container: FakeContainer) -> None:
        serving, container.serving, container.runner = container.serving, None, None
        if serving is not None:
            serving.cancel()
            with contextlib.suppress(BaseException):
                await serving

    async def _shut_down(self, container: FakeContainer) -> None:
        container.unpaused.set()  # let paused requests finish so the app can close
        await self._stop_runner(container)
        agent, container.agent = container.agent, None
        if agent is not None:
            await agent.cleanup()
        shutil.rmtree(Path(container.settings.runner_socket).parent, ignore_errors=True)


def _freezable(container: FakeContainer) -> Callable[..., Awaitable[web.StreamResponse]]:
    """Middleware standing in for a frozen process: while paused, requests wait."""

    @web.middleware
    async def wait_while_paused(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        await container.unpaused.wait()
        return await handler(request)

    return wait_while_paused
