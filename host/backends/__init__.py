"""Where sandboxes physically run. DockerBackend is the default."""

from host.backends.base import ContainerInfo, SandboxBackend, StartSpec
from host.backends.docker_backend import DockerBackend

__all__ = ["ContainerInfo", "DockerBackend", "SandboxBackend", "StartSpec"]
