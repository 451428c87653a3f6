"""How every sandbox container is locked down, whoever starts it (DockerBackend, the testing
container): the agent runs as non-root `agent`, every capability dropped, no-new-privileges, a
read-only root filesystem with tmpfs scratch, pids/memory/CPU limits, and the agent port published
on 127.0.0.1 only — never reachable from the network."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from host.config import Settings, size_bytes
from rpc.agent import AGENT_PORT

# The users and group Dockerfile.sandbox creates.
AGENT_UID, RUNNER_UID, SANDBOX_GID = 1000, 1001, 1500
AGENT_PORT_SPEC = f"{AGENT_PORT}/tcp"
CODE_RUNNER_CMD = ["python3", "-m", "sandbox_image.code.daemon", "--take-over"]  # see host.backends.runner
# Docker's normal CPU weight. With BOXWRIGHT_POOL_CPU_SHARES every sandbox is given it explicitly rather than
# left unset (host.backends.docker_backend), so that a pooled sandbox raised to it at its claim weighs exactly
# what a cold one does — on cgroup v2 an explicit 1024 and "unset" map to different weights.
NORMAL_CPU_SHARES = 1024


@dataclass(frozen=True)
class Limits:
    mem_limit: str
    pids_limit: int
    shm_size: str
    tmp_size: str
    nano_cpus: int | None = None

    def __post_init__(self) -> None:
        """Docker reads 0 (or -1) as "no limit" and a tmpfs of size 0 as unbounded: a sandbox never starts
        without its limits, whoever builds them (Settings bounds its own at load)."""
        if self.pids_limit < 1 or (self.nano_cpus is not None and self.nano_cpus < 1):
            raise ValueError(f"a sandbox needs a positive pids and CPU limit, not {self.pids_limit}/{self.nano_cpus}")
        for size in (self.mem_limit, self.shm_size, self.tmp_size):
            if size_bytes(size) < 1:
                raise ValueError(f"a sandbox needs a positive memory and scratch size, not {size!r}")

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        """The settings' limits; the scratch mounts together fit in half the memory (Settings checks it)."""
        tmp, shm = settings.scratch_sizes()
        return cls(settings.mem_limit, settings.pids_limit, str(shm), str(tmp), settings.nano_cpus)


def tmpfs_mounts(size: str) -> dict[str, str]:
    """Scratch space on a read-only root. /tmp and runner's home allow exec (compilers, pip --user);
    /run/boxwright holds the agent's socket for its code runner: the agent's alone to write, group
    sandbox (the runner) may only connect (sandbox_image.code.channel)."""
    return {
        "/tmp": f"rw,exec,nosuid,nodev,size={size}",
        "/home/agent": f"rw,nosuid,nodev,size={size},uid={AGENT_UID},gid={AGENT_UID},mode=0700",
        "/home/runner": f"rw,exec,nosuid,nodev,size={size},uid={RUNNER_UID},gid={RUNNER_UID},mode=0700",
        "/run/boxwright": f"rw,nosuid,nodev,noexec,size=1m,uid={AGENT_UID},gid={SANDBOX_GID},mode=0750",
    }


def hardened(limits: Limits) -> dict[str, Any]:
    """The docker SDK `containers.run` arguments every sandbox is started with."""
    kwargs: dict[str, Any] = {
        "user": "agent",
        "read_only": True,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
        "tmpfs": tmpfs_mounts(limits.tmp_size),
        "shm_size": limits.shm_size,
        "pids_limit": limits.pids_limit,
        "mem_limit": limits.mem_limit,
        "memswap_limit": limits.mem_limit,
        "ports": {AGENT_PORT_SPEC: ("127.0.0.1", None)},
    }
    if limits.nano_cpus:
        kwargs["nano_cpus"] = limits.nano_cpus
    return kwargs
