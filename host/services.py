"""The host's object graph — settings, backend, image, sandbox manager, template runs, login profiles,
live view — and its background work (TTL reaper, warm pool refill, run sweeper, image pre-build, profile
publishing, the live view's listener). Every entry point (stdio, HTTP, CLI, tests) runs inside
`Services.running()`, so sandboxes are reconciled on start and cleaned up on stop exactly once."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import anyio.to_thread
import docker

from host.backends import make_backend
from host.backends.base import SandboxBackend
from host.backends.docker_backend import DockerBackend
from host.config import Settings
from host.image.builder import ensure_image
from host.live import LiveViewService
from host.profiles import ProfileSessions
from host.readings import Readings
from host.runs.manager import RunManager
from host.sandboxes.jobs import JobSandboxes
from host.sandboxes.manager import SandboxManager
from rpc.errors import BoxwrightError, ErrorCode

log = logging.getLogger(__name__)


class ImageProvider:
    """Builds (or checks) the sandbox image once per process; concurrent callers share the result."""

    def __init__(self, client: docker.DockerClient, settings: Settings, progress: Callable[[str], None]) -> None:
        self._client = client
        self._settings = settings
        self._progress = progress
        self._lock = anyio.Lock()
        self._tag: str | None = None

    async def ensure(self) -> str:
        async with self._lock:
            if self._tag is None:
                self._tag = await self._ensure()
            return self._tag

    async def _ensure(self) -> str:
        try:
            return await anyio.to_thread.run_sync(
                lambda: ensure_image(self._client, self._settings, progress=self._progress)
            )
        except BoxwrightError:
            raise
        except Exception as exc:
            raise BoxwrightError(ErrorCode.IMAGE_BUILD_FAILED, f"building the sandbox image failed: {exc}") from exc


class Services:
    """`backend` defaults to the one `settings.backend` names. Docker's image is built on first use; on
    swarm it must be on the nodes already (`boxwright image push-nodes`), like with a backend passed in
    (tests: host.testing.fake_backend.FakeBackend), which is used as it is, images included."""

    def __init__(
        self, settings: Settings, *, backend: SandboxBackend | None = None, prebuild_image: bool = True
    ) -> None:
        self.settings = settings
        self.image: ImageProvider | None = None
        if backend is None and settings.backend != "docker":
            backend = make_backend(settings)
        if backend is None:
            docker_backend = DockerBackend(settings)
            self.image = ImageProvider(
                docker_backend.client, settings, progress=lambda line: log.info("image: %s", line)
            )
            backend = docker_backend
        self.backend = backend
        self.manager = SandboxManager(settings, backend, image_provider=self.image.ensure if self.image else None)
        self.profiles = ProfileSessions(settings, self.manager)
        self.live = LiveViewService(settings, self.manager, self.profiles.publisher)
        self.jobs = JobSandboxes(self.manager)
        self.readings = Readings()  # scrape's readings, kept for a long text's next parts and for maxAge
        self.runs = RunManager(settings, self.manager, self.jobs, profiles=self.profiles)
        self.manager.activity.sources.append(self.runs.uses_sandbox)  # the idle timeout keeps their sandboxes
        self.manager.activity.sources.append(self.live.views.watched)  # and those a person is driving
        self._prebuild = prebuild_image and self.image is not None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Services]:
        await self.manager.start()
        try:
            await self.runs.start()  # after the manager adopted what a previous server left
            async with self.live.running(), anyio.create_task_group() as tg:
                await tg.start(self.runs.serve)
                tg.start_soon(self.manager.run_reaper)
                tg.start_soon(self.manager.pool.run)
                tg.start_soon(self.profiles.publisher.run)
                if self._prebuild:
                    tg.start_soon(self._prebuild_image)
                try:
                    yield self
                finally:
                    tg.cancel_scope.cancel()
        finally:
            await self.profiles.publisher.flush_all()
            await self.manager.close()

    async def _prebuild_image(self) -> None:
        """Start building at server start, so the first sandbox_create does not wait as long."""
        if self.image is None:
            return
        try:
            await self.image.ensure()
        except BoxwrightError as exc:
            log.error("sandbox image is not available: %s (%s)", exc.message, exc.hint)
