"""Integration tests: a real Docker engine, the real sandbox image, the real MCP SDK client.

Every test server runs in its own namespace (BOXWRIGHT_NAMESPACE) and state dir, so tests never
touch a developer's sandboxes, and whatever a test leaves behind is removed at the end.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import httpx
import pytest

from host import labels
from tests.integration.mcp_helpers import BOXWRIGHT


@pytest.fixture(scope="session")
def docker_client() -> docker.DockerClient:
    return docker.from_env(timeout=120)


@pytest.fixture(scope="session")
def namespace(docker_client: docker.DockerClient) -> Iterator[str]:
    ns = f"test-{secrets.token_hex(4)}"
    yield ns
    remove_namespace(docker_client, ns)  # safety net: nothing of this run may outlive it


def remove_namespace(client: docker.DockerClient, ns: str) -> None:
    """Everything a test's servers made in namespace `ns`: containers, volumes, the network."""
    for c in client.containers.list(all=True, ignore_removed=True, filters={"label": f"{labels.NAMESPACE}={ns}"}):
        c.remove(force=True)
    for v in client.volumes.list(filters={"label": f"{labels.NAMESPACE}={ns}"}):
        v.remove(force=True)
    for n in client.networks.list(names=[f"boxwright-{ns}"]):
        n.remove()


def own_env(server_env: dict[str, str], suffix: str, state: Path, **extra: str) -> dict[str, str]:
    """A test server's environment in a namespace (`<run's>-<suffix>`) and state dir of its own; no token
    file, so an anonymous loopback server (owner `local`)."""
    env = dict(server_env)
    env.update(
        BOXWRIGHT_NAMESPACE=f"{server_env['BOXWRIGHT_NAMESPACE']}-{suffix}",
        BOXWRIGHT_STATE_DIR=str(state),
        XDG_CONFIG_HOME=str(state / "config"),
        **extra,
    )
    return env


@pytest.fixture(scope="session")
def image(boxwright_image: str) -> str:
    return boxwright_image


@pytest.fixture(scope="session")
def server_env(namespace: str, image: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    state = tmp_path_factory.mktemp("state")
    env = dict(os.environ)
    env.update(
        BOXWRIGHT_NAMESPACE=namespace,
        BOXWRIGHT_STATE_DIR=str(state),
        BOXWRIGHT_IMAGE=image,
        BOXWRIGHT_LOG_LEVEL="INFO",
        XDG_CONFIG_HOME=str(state / "config"),
        # Docker's default address pools: tests allowlist their own decoys and sandboxes on these bridges.
        BOXWRIGHT_INTERNAL_ALLOW_HOSTS=INTERNAL_ALLOWED,
        BOXWRIGHT_WORKSPACE_DIR=str(state / "workspaces"),  # the test run's workspace images stay in its tmp
    )
    return env


INTERNAL_ALLOWED = "172.16.0.0/12,192.168.0.0/16"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpServer:
    def __init__(
        self, env: dict[str, str], log_path: Path, extra: list[str] | None = None, *, host: str = "127.0.0.1"
    ) -> None:
        self.host = host
        self.env = env
        self.port = free_port()
        self.url = f"http://{host}:{self.port}/mcp"
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.proc = subprocess.Popen(
            [BOXWRIGHT, "serve", "--http", "--host", host, "--port", str(self.port), *(extra or [])],
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://{host}:{self.port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"HTTP server did not start:\n{log_path.read_text()}")
            time.sleep(0.1)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self._log.close()


@pytest.fixture(scope="session")
def tokens(server_env: dict[str, str]) -> dict[str, str]:
    """Bearer tokens of two owners, made with the real CLI (`boxwright token add`)."""
    out = {}
    for owner in ("alice", "bob"):
        proc = subprocess.run([BOXWRIGHT, "token", "add", owner], env=server_env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        out[owner] = proc.stdout.strip()
    return out


@pytest.fixture(scope="session")
def http_server(
    server_env: dict[str, str], tokens: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HttpServer]:
    server = HttpServer(server_env, tmp_path_factory.mktemp("http") / "server.log")
    yield server
    server.stop()
