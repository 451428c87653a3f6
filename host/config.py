"""Host settings, read once from the environment (BOXWRIGHT_*) and overridable by CLI flags."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field


def _state_home() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "boxwright"


class Settings(BaseModel):
    image: str = Field("boxwright-sandbox:latest", description="Sandbox image tag")
    namespace: str = Field(
        "default",
        pattern=r"^[a-z0-9][a-z0-9_.-]{0,62}$",
        description="Fleets sharing one Docker engine stay apart: a server only manages its namespace",
    )
    state_dir: Path = Field(default_factory=_state_home, description="Ownership locks of live sandboxes")
    max_sandboxes: int = Field(20, ge=1, description="Across all owners of this server")
    max_sandboxes_per_owner: int = Field(5, ge=1)
    default_ttl_s: int = Field(3600, ge=10)
    max_ttl_s: int = Field(24 * 3600, ge=10)
    idle_timeout_s: int = Field(0, ge=0, description="Destroy sandboxes unused this long (0: never)")
    startup_timeout_s: float = Field(60.0, gt=0, description="Create → agent and code runner ready")
    mem_limit: str = "2g"
    nano_cpus: int = 2_000_000_000
    pids_limit: int = 512
    shm_size: str = "256m"
    tmp_size: str = "512m"
    keep_on_exit: bool = Field(False, description="Leave sandboxes running when the server stops")
    toolsets: list[str] | None = Field(None, description="Tool groups to offer (sandbox, code, files, browser)")
    reap_interval_s: float = Field(15.0, gt=0, description="How often TTLs and dead containers are checked")
    default_network: Literal["public", "none"] = Field(
        "public", description="Network mode of a sandbox created without one (allowlist needs hosts)"
    )

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        env = os.environ
        values: dict[str, object] = {}
        mapping = {
            "image": "BOXWRIGHT_IMAGE",
            "namespace": "BOXWRIGHT_NAMESPACE",
            "state_dir": "BOXWRIGHT_STATE_DIR",
            "max_sandboxes": "BOXWRIGHT_MAX_SANDBOXES",
            "max_sandboxes_per_owner": "BOXWRIGHT_MAX_SANDBOXES_PER_OWNER",
            "default_ttl_s": "BOXWRIGHT_DEFAULT_TTL",
            "max_ttl_s": "BOXWRIGHT_MAX_TTL",
            "idle_timeout_s": "BOXWRIGHT_IDLE_TIMEOUT",
            "startup_timeout_s": "BOXWRIGHT_STARTUP_TIMEOUT",
            "mem_limit": "BOXWRIGHT_MEM_LIMIT",
            "pids_limit": "BOXWRIGHT_PIDS_LIMIT",
            "keep_on_exit": "BOXWRIGHT_KEEP_ON_EXIT",
            "reap_interval_s": "BOXWRIGHT_REAP_INTERVAL",
            "default_network": "BOXWRIGHT_NETWORK",
        }
        for field, var in mapping.items():
            if var in env and env[var] != "":
                values[field] = env[var]
        if env.get("BOXWRIGHT_TOOLSETS"):
            values["toolsets"] = [t.strip() for t in env["BOXWRIGHT_TOOLSETS"].split(",") if t.strip()]
        if "BOXWRIGHT_CPUS" in env:
            values["nano_cpus"] = int(float(env["BOXWRIGHT_CPUS"]) * 1e9)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(values)
