"""Configuration of the agent and the runner daemon, read from the environment.

The bearer token itself never enters the container's environment (every `docker exec`'d process,
user code included, would inherit it): the agent only gets its SHA-256.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_PORT = 8080
DEFAULT_WORKSPACE = "/workspace"
DEFAULT_RUNNER_SOCKET = "/run/boxwright/runner.sock"
DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
DEFAULT_PYTHON = "/usr/bin/python3"  # the system python, not the agent's venv
DEFAULT_BASH = "/bin/bash"
DEFAULT_SOCKET_GROUP = "sandbox"  # shared by users agent and runner

_SHA256_HEX = re.compile(r"[0-9a-fA-F]{64}")


class ConfigError(Exception):
    """The environment does not allow starting; the message says what to set."""


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if value <= 0:
        raise ConfigError(f"{name} must be positive, got {value}")
    return value


@dataclass(frozen=True)
class AgentConfig:
    token_sha256: str
    host: str = "0.0.0.0"
    port: int = DEFAULT_PORT
    workspace: str = DEFAULT_WORKSPACE
    runner_socket: str = DEFAULT_RUNNER_SOCKET
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AgentConfig:
        env = os.environ if env is None else env
        token_hash = env.get("BOXWRIGHT_TOKEN_SHA256", "").strip()
        if not token_hash:
            raise ConfigError(
                "BOXWRIGHT_TOKEN_SHA256 is not set: the agent refuses to start without the SHA-256 (hex) "
                "of its bearer token"
            )
        if not _SHA256_HEX.fullmatch(token_hash):
            raise ConfigError("BOXWRIGHT_TOKEN_SHA256 must be 64 hex digits (the SHA-256 of the bearer token)")
        return cls(
            token_sha256=token_hash.lower(),
            host=env.get("BOXWRIGHT_HOST", "0.0.0.0"),
            port=_int(env, "BOXWRIGHT_PORT", DEFAULT_PORT),
            workspace=env.get("BOXWRIGHT_WORKSPACE") or DEFAULT_WORKSPACE,
            runner_socket=env.get("BOXWRIGHT_RUNNER_SOCKET") or DEFAULT_RUNNER_SOCKET,
            max_body_bytes=_int(env, "BOXWRIGHT_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES),
        )


@dataclass(frozen=True)
class RunnerConfig:
    workspace: str = DEFAULT_WORKSPACE
    socket: str = DEFAULT_RUNNER_SOCKET
    python: str = DEFAULT_PYTHON
    bash: str = DEFAULT_BASH
    scratch_dir: str | None = None  # where per-run script dirs go; None = $TMPDIR or /tmp
    socket_group: str | None = DEFAULT_SOCKET_GROUP  # None/empty: leave the socket's group alone
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RunnerConfig:
        env = os.environ if env is None else env
        return cls(
            workspace=env.get("BOXWRIGHT_WORKSPACE") or DEFAULT_WORKSPACE,
            socket=env.get("BOXWRIGHT_RUNNER_SOCKET") or DEFAULT_RUNNER_SOCKET,
            python=env.get("BOXWRIGHT_PYTHON") or DEFAULT_PYTHON,
            bash=env.get("BOXWRIGHT_BASH") or DEFAULT_BASH,
            scratch_dir=env.get("BOXWRIGHT_RUNNER_SCRATCH") or None,
            socket_group=env.get("BOXWRIGHT_RUNNER_SOCKET_GROUP", DEFAULT_SOCKET_GROUP) or None,
            max_body_bytes=_int(env, "BOXWRIGHT_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES),
        )
