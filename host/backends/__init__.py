"""Where sandboxes physically run: DockerBackend (the default, one engine) or SwarmBackend (a fleet)."""

from host.backends.base import ContainerInfo, SandboxBackend, StartSpec
from host.backends.docker_backend import DockerBackend
from host.config import Settings

__all__ = ["ContainerInfo", "DockerBackend", "SandboxBackend", "StartSpec", "make_backend"]


def make_backend(settings: Settings) -> SandboxBackend:
    """The backend `settings.backend` names (BOXWRIGHT_BACKEND / --backend)."""
    if settings.backend == "swarm":
        from host.backends.swarm_backend import SwarmBackend

        return SwarmBackend(settings)
    return DockerBackend(settings)
