"""The sandbox's settings: one object for the agent, the code runner daemon and the browser, read
from the environment (`BOXWRIGHT_<FIELD>`, see rpc.settings).

The bearer token itself never enters the container's environment (every `docker exec`'d process,
user code included, would inherit it): the agent only gets its SHA-256 (rpc.agent.agent_env).
"""

from __future__ import annotations

import sys
from typing import Any, ClassVar

from pydantic import Field, field_validator

from rpc.agent import AGENT_PORT
from rpc.settings import EnvSettings, SettingsError
from sandbox_image.code.channel import RUNNER_SOCKET, RUNNER_USER

DEFAULT_CHROMIUM = "/usr/bin/chromium"
DEFAULT_FILTER_LISTS = "/opt/boxwright/filters"  # EasyList and EasyPrivacy (Dockerfile.sandbox)


class SandboxSettings(EnvSettings):
    # The agent.
    token_sha256: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{64}$",
        description="SHA-256 (hex) of the agent's bearer token; the agent refuses to start without it",
    )
    pooled: bool = Field(
        False, description="Started for the server's warm pool: accepts one sandbox.claim, which replaces its token"
    )
    secrets_file: str | None = Field(
        None,
        description="A file of `BOXWRIGHT_…=value` lines only the agent reads, on top of its environment (how "
        "the swarm backend hands over the hashes: a swarm secret, mode 0400, the agent's alone)",
    )
    host: str = Field("0.0.0.0", description="Address the agent listens on inside the container")
    port: int = Field(AGENT_PORT, gt=0, lt=65536, description="Port the agent listens on")
    workspace: str = Field("/workspace", description="The workspace every file path is confined to")
    expires_at: int | None = Field(
        None,
        ge=0,
        description="Epoch second the sandbox expires (set by the server); the agent ends it after a grace",
    )
    expiry_grace: float = Field(
        60.0, ge=0, description="Seconds past its expiry before the agent exits, stopping the sandbox"
    )
    max_body_bytes: int = Field(32 * 1024 * 1024, gt=0, description="Largest request body (agent and runner)")
    log_level: str = Field("INFO", description="Log level of the agent and the runner")
    # The code runner daemon.
    runner_socket: str = Field(RUNNER_SOCKET, description="Unix socket the agent listens on for its code runner daemon")
    runner_socket_group: str | None = Field(
        "sandbox", description="Group the socket is handed to (the runner's, so it may connect; empty: leave it)"
    )
    runner_user: str = Field(RUNNER_USER, description="The only user whose process the agent admits as its code runner")
    runner_secret_sha256: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{64}$",
        description="SHA-256 (hex) of the secret the code runner proves itself with; without it none is admitted",
    )
    runner_scratch: str | None = Field(None, description="Where per-run script directories go (default $TMPDIR)")
    python: str = Field("/usr/bin/python3", description="Interpreter of `python` runs (the system's, not the agent's)")
    bash: str = Field("/bin/bash", description="Interpreter of `bash` runs")
    # The browser.
    chromium: str = Field(DEFAULT_CHROMIUM, description="The Chromium Playwright drives")
    # Lazy by default. Measured in the sandbox image (docs/benchmarks.md): a prelaunched Chromium with its
    # spare context and tab (browser.spare) adds ~130 MiB to every sandbox (61 → 190 MiB), browsing or not;
    # launching lazily costs the first browser call the launch, the context and the tab once.
    browser_prelaunch: bool = Field(False, description="Launch Chromium when the agent starts, not on first use")
    filter_lists: str = Field(
        DEFAULT_FILTER_LISTS,
        description="Directory of the ad and tracker filter lists blockAds uses (*.txt, Adblock Plus syntax), or "
        "of their engine serialized at image build (engine.dat)",
    )

    keep_empty: ClassVar[frozenset[str]] = frozenset({"runner_socket_group"})

    @field_validator("token_sha256", "runner_secret_sha256", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("runner_socket_group")
    @classmethod
    def _empty_is_none(cls, value: str | None) -> str | None:
        return value or None

    def agent_token_sha256(self) -> str:
        """The token hash the agent checks every request against; SettingsError when there is none."""
        if self.token_sha256 is None:
            raise SettingsError(
                f"{self.env_name('token_sha256')} is not set: the agent refuses to start without the SHA-256 (hex) "
                "of its bearer token"
            )
        return self.token_sha256


def load_or_exit(who: str, *, agent: bool = False) -> SandboxSettings:
    """The settings of a process of the sandbox, or exit 2 naming the variable at fault."""
    try:
        settings = SandboxSettings.load()
        if agent and settings.secrets_file:
            settings = with_secrets_file(settings.secrets_file)
        if agent:
            settings.agent_token_sha256()
    except SettingsError as exc:
        print(f"boxwright {who}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    return settings


def with_secrets_file(path: str) -> SandboxSettings:
    """The settings with `path`'s lines read too (the environment wins); SettingsError if it is unreadable —
    pydantic-settings would skip a missing file silently, and the agent would then start without its token."""
    try:
        with open(path, encoding="utf-8"):
            pass
    except OSError as exc:
        raise SettingsError(f"{SandboxSettings.env_name('secrets_file')}: cannot read {path}: {exc.strerror}") from None
    return SandboxSettings.load(_env_file=path)
