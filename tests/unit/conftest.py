"""Fixtures for the unit tests, none of which needs Docker: for the in-container agent, temp
workspaces, an in-process runner daemon on a temp Unix socket and an aiohttp test client; for the
host, a FakeBackend (real agents in this process) under real settings, manager and services."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import pwd
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the repository is not installed into the venv
    sys.path.insert(0, str(ROOT))

from aiohttp import web  # noqa: E402
from aiohttp.test_utils import TestClient, TestServer  # noqa: E402

from host.config import Settings  # noqa: E402
from host.sandboxes.manager import SandboxManager  # noqa: E402
from host.services import Services  # noqa: E402
from host.testing.fake_backend import FakeBackend  # noqa: E402
from sandbox_image.agent import create_agent_app  # noqa: E402
from sandbox_image.code.serving import RunnerDaemon  # noqa: E402
from sandbox_image.config import SandboxSettings  # noqa: E402
from tests.unit.browser_harness import browser_fixture, session_fixture, site_fixture  # noqa: E402, F401 (fixtures)

TOKEN = "unit-test-token-Ж"
RUNNER_SECRET = "unit-test-runner-secret"
TOKEN_SHA256 = hashlib.sha256(TOKEN.encode()).hexdigest()
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    return ws


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace holding a secret that must stay unreachable."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("top secret")
    return out


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    # Unix socket paths are limited to ~107 bytes: pytest's tmp_path can be longer.
    path = Path(tempfile.mkdtemp(prefix="bw-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def runner_config(workspace: Path, socket_dir: Path) -> SandboxSettings:
    return SandboxSettings(workspace=str(workspace), runner_socket=str(socket_dir / "runner.sock"))


async def connect_runner(settings: SandboxSettings, secret: str = RUNNER_SECRET) -> asyncio.Task[None]:
    """The code runner daemon, in-process, connecting to the agent listening on `settings.runner_socket`."""
    return asyncio.create_task(RunnerDaemon(settings).serve(secret, connect_within_s=10))


async def stop_runner(serving: asyncio.Task[None]) -> None:
    serving.cancel()
    with contextlib.suppress(BaseException):
        await serving


ClientFactory = Callable[..., Awaitable[TestClient[web.Request, web.Application]]]


@pytest.fixture
async def make_client() -> AsyncIterator[ClientFactory]:
    """Build a test client for any aiohttp app (closed after the test)."""
    clients: list[TestClient[web.Request, web.Application]] = []

    async def make(app: web.Application) -> TestClient[web.Request, web.Application]:
        client = TestClient(TestServer(app))
        await client.start_server()
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()


@pytest.fixture
def agent_config(workspace: Path, socket_dir: Path) -> SandboxSettings:
    return SandboxSettings(
        token_sha256=TOKEN_SHA256,
        workspace=str(workspace),
        runner_socket=str(socket_dir / "runner.sock"),
        runner_socket_group=None,
        runner_user=pwd.getpwuid(os.getuid()).pw_name,  # the daemon runs in this process, as us
        runner_secret_sha256=hashlib.sha256(RUNNER_SECRET.encode()).hexdigest(),
        max_body_bytes=64 * 1024,
    )


@pytest.fixture
async def agent(agent_config: SandboxSettings, make_client: ClientFactory) -> TestClient[web.Request, web.Application]:
    """The agent without a runner daemon."""
    return await make_client(create_agent_app(agent_config))


@pytest.fixture
async def agent_with_runner(
    agent_config: SandboxSettings, make_client: ClientFactory
) -> AsyncIterator[TestClient[web.Request, web.Application]]:
    """The agent with the runner daemon connected to it (admitted with the right secret)."""
    client = await make_client(create_agent_app(agent_config))
    serving = await connect_runner(agent_config)
    for _ in range(500):
        if (await (await client.get("/healthz")).json())["codeRunnerReady"]:
            break
        await asyncio.sleep(0.01)
    yield client
    await stop_runner(serving)


@pytest.fixture
def auth_headers() -> dict[str, str]:
    return dict(AUTH)


def _live_processes_matching(marker: str) -> list[int]:
    """Pids of non-zombie processes whose command line contains `marker`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        if marker in cmdline and stat[stat.rfind(b")") + 2 :][:1] not in (b"Z", b"X"):
            found.append(int(name))
    return found


@pytest.fixture
def find_processes() -> Callable[[str], list[int]]:
    """`find_processes(marker)`: live pids whose command line contains marker (checks nothing was left)."""
    return _live_processes_matching


# ---------------------------------------------------------------- the host, over a FakeBackend


@pytest.fixture
def fake() -> Iterator[FakeBackend]:
    with FakeBackend() as backend:
        yield backend


@pytest.fixture
def host_settings(tmp_path: Path) -> Settings:
    return Settings(state_dir=tmp_path / "state", namespace="unit", image="boxwright-sandbox:unit")


@pytest.fixture
async def sandbox_manager(host_settings: Settings, fake: FakeBackend) -> AsyncIterator[SandboxManager]:
    """A started manager; whatever the test leaves is destroyed at the end."""
    mgr = SandboxManager(host_settings, fake)
    await mgr.start()
    yield mgr
    await mgr.close()


@pytest.fixture
def services(host_settings: Settings, fake: FakeBackend) -> Services:
    """Not started: a test enters `services.running()` itself (anyio task groups must be entered and
    left by the same task, which an async fixture does not guarantee)."""
    return Services(host_settings, backend=fake)
