"""The host's settings: one object, read once from the environment (`BOXWRIGHT_<FIELD>`, see
rpc.settings) and overridable by CLI flags. Everything the host does — serving, sandboxes, the image
build, logging — reads its configuration from here."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import NoDecode

from rpc.models.network import parse_allow_entry
from rpc.models.profiles import DEFAULT_PROFILE_ID, PROFILE_ID_PATTERN, profile_id_problem
from rpc.settings import EnvSettings

DEFAULT_IMAGE = "boxwright-sandbox:latest"
SIZE_PATTERN = r"^\d+(\.\d+)?\s*[bkmgtBKMGT]?[bB]?$"  # 512m, 2g, 1.5G, 1048576
SCRATCH_MOUNTS = 3  # /tmp, /home/agent, /home/runner (host.backends.hardening)
_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def size_bytes(size: str) -> int:
    """Bytes of a size as Docker writes them (binary units: 512m, 2g)."""
    value = size.strip().lower().removesuffix("b").strip()
    unit = value[-1] if value[-1:].isalpha() else ""
    return int(float(value.removesuffix(unit)) * _UNITS[unit])


def _mib(n: int) -> str:
    return f"{n // 2**20} MiB"


DEFAULT_MIRROR = "http://deb.debian.org/debian"


def _state_home() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "boxwright"


INSTANCE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


class Settings(EnvSettings):
    # Where sandboxes run.
    backend: Literal["docker", "swarm"] = Field(
        "docker",
        description="Where sandboxes run: `docker` (the one engine) or `swarm` (a Docker Swarm, docs/fleet.md)",
    )
    swarm_manager: str | None = Field(
        None, description="Engine API of a swarm manager, e.g. `tcp://10.0.0.1:2376` (default: `DOCKER_HOST`)"
    )
    swarm_engines: Annotated[list[str] | None, NoDecode] = Field(
        None,
        description="Engine APIs of the swarm's sandbox nodes, comma-separated (code runner, network guard and "
        "removal happen on the node running the sandbox)",
    )
    # Servers on several hosts sharing one identity (one state dir copied to each: docs/fleet.md).
    instance_id: str | None = Field(
        None,
        pattern=INSTANCE_PATTERN,
        description="This server's host among servers sharing one identity: it adopts and reaps only the sandboxes "
        "it made (sealed in their labels); default: derived from /etc/machine-id, else the hostname",
    )
    adopt_instances: Annotated[list[str] | None, NoDecode] = Field(
        None,
        description="Other instances of this identity whose sandboxes this server adopts too (e.g. of a host "
        "retired for good), comma-separated",
    )
    # Sandboxes.
    image: str = Field(DEFAULT_IMAGE, description="Sandbox image tag (built by Boxwright, or yours used as is)")
    namespace: str = Field(
        "default",
        pattern=r"^[a-z0-9][a-z0-9_.-]{0,62}$",
        description="Fleets sharing one Docker engine stay apart: a server only manages its namespace",
    )
    state_dir: Path = Field(
        default_factory=_state_home,
        description="The server's identity, ownership locks, template runs and their artifacts "
        "(default `$XDG_STATE_HOME/boxwright`)",
    )
    max_sandboxes: int = Field(
        20, ge=1, description="Sandboxes this server runs, all owners together, the warm pool's included"
    )
    max_sandboxes_per_owner: int = Field(5, ge=1, description="Sandboxes of one owner")
    max_memory_per_owner: str | None = Field(
        None,
        pattern=r"^\s*[0-9]+(\.[0-9]+)?\s*[bkmgtBKMGT]?\s*$",
        description="Memory limits of one owner's sandboxes together, e.g. `8g` (default: no total)",
    )
    max_cpus_per_owner: float | None = Field(
        None, gt=0, description="CPU limits of one owner's sandboxes together (default: no total)"
    )
    default_ttl: int = Field(3600, ge=10, description="Seconds a sandbox lives when sandbox_create names no TTL")
    max_ttl: int = Field(24 * 3600, ge=10, description="Seconds a sandbox may live at most")
    idle_timeout: int = Field(0, ge=0, description="Destroy (or pause) sandboxes unused this many seconds (0: never)")
    idle_action: Literal["destroy", "pause"] = Field(
        "destroy", description="What the idle timeout does: `destroy`, or `pause` (resumed by the next call)"
    )
    startup_timeout: float = Field(60.0, gt=0, description="Seconds from create to agent and code runner ready")
    reap_interval: float = Field(
        15.0, gt=0, description="Seconds between checks of TTLs and dead containers, and sweeps of expired runs"
    )
    foreign_grace: int = Field(
        600,
        ge=0,
        description="Seconds past its expiry after which a stopped sandbox of another server is removed by this one",
    )
    network: Literal["public", "none"] = Field(
        "public", description="Network mode of a sandbox created without one (`allowlist` needs hosts)"
    )
    pool_size: int = Field(
        0,
        ge=0,
        le=100,
        description="Sandboxes kept started and ready for sandbox_create and template runs, of the default "
        "network mode (0: no pool); counted in BOXWRIGHT_MAX_SANDBOXES, refilled only while there is room",
    )
    pool_browser: bool = Field(
        False,
        description="Pooled sandboxes launch Chromium and open their first tab ahead (about 130 MiB more each), "
        "so a claimed one's first browser call only navigates",
    )
    pool_concurrency: int = Field(
        1, ge=1, le=8, description="Pooled sandboxes started at once while the pool refills (live creates go first)"
    )
    pool_refill_delay: float = Field(
        2.0,
        ge=0,
        le=60,
        description="Seconds after a claim before the pool starts its replacement, so that the claimant's first "
        "calls do not share the CPUs with a sandbox starting",
    )
    pool_cpu_shares: int = Field(
        0,
        ge=0,
        le=1024,
        description="CPU weight (Docker `cpu_shares`, normal 1024) of a pooled sandbox while it waits, raised to "
        "the normal weight at its claim, e.g. 128 (0: the normal weight throughout; measured no gain on 2 cores)",
    )
    internal_allow_hosts: Annotated[list[str] | None, NoDecode] = Field(
        None,
        description="Internal ranges or hostnames (private, loopback, link-local, CGNAT, this host's) callers may "
        "allowlist, comma-separated; default none",
    )
    keep_on_exit: bool = Field(False, description="Leave sandboxes running when the server stops")
    toolsets: Annotated[list[str] | None, NoDecode] = Field(
        None,
        description="Comma-separated tool groups to offer (sandbox, code, files, browser, templates, scrape); "
        "default all",
    )
    http_trust_level: Literal["local", "remote"] = Field(
        "remote",
        description="Trust level of HTTP callers (stdio callers are local); runs inherit it, and `local` also "
        "allows browser_evaluate",
    )
    max_sessions_per_owner: int = Field(
        100,
        ge=1,
        description="Open MCP sessions of one owner over HTTP (clients of the 2025-11-25 protocol keep one each); "
        "one more is refused (503) until one ends or idles out",
    )
    # Template runs.
    max_runs_per_owner: int = Field(
        50,
        ge=1,
        description="Template runs of one owner not yet ended (queued or running); one more is QUOTA_EXCEEDED",
    )
    run_retention: int = Field(
        24 * 3600, ge=1, description="Seconds a finished template run's result and artifacts are kept after it ends"
    )
    # The HTTP server.
    allowed_hosts: Annotated[list[str] | None, NoDecode] = Field(
        None,
        description="Host headers the HTTP server accepts, comma-separated (`name`, `name:port`, `name:*`); "
        "default: the loopback names on a loopback address, else this machine's names and addresses",
    )
    allowed_origins: Annotated[list[str] | None, NoDecode] = Field(
        None, description="Origin headers the HTTP server accepts (default: http:// and https:// of each allowed host)"
    )
    # The workspace of each sandbox.
    workspace_mb: int = Field(2048, ge=16, description="Size limit of a sandbox's /workspace in MiB (default)")
    max_workspace_mb: int = Field(16384, ge=16, description="Largest workspace a sandbox_create may ask for, in MiB")
    workspace_quota: Literal["auto", "loop", "helper", "off"] = Field(
        "auto",
        description="How the size limit is enforced: loop (this process, root, local engine), helper (a brief "
        "privileged container), off (no limit); auto: loop if it can, else helper",
    )
    workspace_dir: Path = Field(
        Path("/var/lib/boxwright/workspaces"),
        description="Where workspace images live, on the engine's host (one sparse file per sandbox)",
    )
    # Limits of each sandbox container.
    mem_limit: str = Field("2g", pattern=SIZE_PATTERN, description="Memory (and memory + swap) of a sandbox")
    cpus: float = Field(2.0, gt=0, description="CPUs of a sandbox")
    pids_limit: int = Field(512, description="Processes and threads of a sandbox (-1: unlimited)")
    shm_size: str | None = Field(
        None,
        pattern=SIZE_PATTERN,
        description="/dev/shm of a sandbox (Chromium uses it); default an eighth of its memory",
    )
    tmp_size: str | None = Field(
        None,
        pattern=SIZE_PATTERN,
        description="Each tmpfs scratch mount (/tmp, the homes); default an eighth of its memory",
    )
    # Login profiles (seed 004 §2.8.2) and the live view.
    snapshot_root: Path | None = Field(
        None,
        description="Where login profiles are kept, per owner and profile (default: `profiles` in the state dir)",
    )
    default_profile_id: str = Field(
        DEFAULT_PROFILE_ID, description="Profile of `boxwright login` and `boxwright profile` without --profile"
    )
    profile_id_regex: str = Field(
        PROFILE_ID_PATTERN, description="Profile ids must match this too ('/', '\\' and '..' are refused anyway)"
    )
    max_profiles_per_owner: int = Field(
        100,
        ge=1,
        description="Login profiles one owner may have, the default one aside; a new one past it is QUOTA_EXCEEDED",
    )
    snapshot_refresh_on_request_end: bool = Field(
        True, description="Publish a profile session's state after each tool call on it (debounced)"
    )
    snapshot_refresh_debounce_ms: int = Field(
        500, ge=0, description="Calls this close together publish once, when they stop"
    )
    snapshot_refresh_interval_ms: int = Field(
        30_000, ge=1000, description="A profile session in use publishes at least this often (backstop)"
    )
    snapshot_publish_lock_timeout_ms: int = Field(500, ge=1, description="How long a publish waits for publish.lock")
    login_refresh_interval_ms: int = Field(
        5000, ge=500, description="`boxwright login` publishes the profile this often while you log in"
    )
    login_timeout_ms: int = Field(0, ge=0, description="`boxwright login` gives up after this long (0: never)")
    include_indexed_db_in_snapshot: bool = Field(False, description="Snapshots include IndexedDB (large)")
    snapshot_dir_permission: str = Field("700", pattern=r"^[0-7]{3}$", description="Mode of profile directories")
    snapshot_file_permission: str = Field("600", pattern=r"^[0-7]{3}$", description="Mode of state.json and meta.json")
    live_view_base_url: str | None = Field(
        None, description="Base of live view links (default: the HTTP server's own address, or the loopback listener's)"
    )
    live_view_port: int = Field(
        0, ge=0, le=65535, description="Port of the loopback live view listener of stdio and `boxwright login` (0: any)"
    )
    live_view_link_ttl: int = Field(600, ge=10, description="Seconds a live view link stays valid until its first use")
    # Logs.
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field(
        "INFO", description="Host log level (logs go to stderr)"
    )
    # Building the image.
    base_image: str | None = Field(
        None, description="Base image to build FROM (default debian:bookworm-slim, made with debootstrap if need be)"
    )
    pull_timeout: float = Field(60.0, gt=0, description="Seconds a base-image pull may go without progress")
    debian_mirror: str = Field(DEFAULT_MIRROR, description="Debian mirror for debootstrap")
    debian_security_mirror: str | None = Field(
        None, description="Security archive for debootstrap (default: Debian's with the default mirror; empty: none)"
    )
    scratch_dir: Path | None = Field(None, description="Where debootstrap makes the base's tree (default /var/tmp)")
    build_ca_bundle: str | None = Field(
        None,
        description="CA bundle handed to pip in the image build (default: the host's; empty: none)",
    )

    keep_empty: ClassVar[frozenset[str]] = frozenset({"debian_security_mirror", "build_ca_bundle"})

    @field_validator(
        "toolsets",
        "allowed_hosts",
        "allowed_origins",
        "internal_allow_hosts",
        "swarm_engines",
        "adopt_instances",
        mode="before",
    )
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("pool_cpu_shares")
    @classmethod
    def _docker_weight(cls, value: int) -> int:
        if value == 1:
            raise ValueError("Docker's smallest CPU weight is 2 (0: the normal weight throughout)")
        return value

    @field_validator("adopt_instances")
    @classmethod
    def _instance_ids(cls, value: list[str] | None) -> list[str] | None:
        for v in value or []:
            if not re.fullmatch(INSTANCE_PATTERN, v):
                raise ValueError(f"not an instance id: {v!r}")
        return value

    @field_validator("internal_allow_hosts")
    @classmethod
    def _allow_entries(cls, value: list[str] | None) -> list[str] | None:
        return [parse_allow_entry(v) for v in value] if value is not None else None

    @field_validator("log_level", mode="before")
    @classmethod
    def _level_name(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @field_validator("default_profile_id")
    @classmethod
    def _usable_profile_id(cls, value: str) -> str:
        problem = profile_id_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("profile_id_regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return value

    @property
    def instance(self) -> str:
        """This server's instance id (BOXWRIGHT_INSTANCE_ID, else one derived from the machine)."""
        from host.identity import machine_instance_id

        return self.instance_id or machine_instance_id()

    @property
    def adoptable_instances(self) -> frozenset[str]:
        """The instances whose sandboxes this server adopts: its own and the configured peers."""
        return frozenset({self.instance, *(self.adopt_instances or [])})

    @property
    def nano_cpus(self) -> int:
        return int(self.cpus * 1e9)

    @property
    def memory_bytes(self) -> int:
        return size_bytes(self.mem_limit)

    def scratch_sizes(self) -> tuple[int, int]:
        """(each of /tmp and the two homes, /dev/shm) in bytes: what the sandbox's tmpfs mounts may hold."""
        eighth = self.memory_bytes // 8
        tmp = size_bytes(self.tmp_size) if self.tmp_size else eighth
        shm = size_bytes(self.shm_size) if self.shm_size else eighth
        return tmp, shm

    @model_validator(mode="after")
    def _swarm_has_no_workspace_limit(self) -> Settings:
        """A swarm task lands on a node chosen after its volumes are described: no loop device can be made
        for it beforehand (docs/fleet.md), so only `auto` (meaning off there) and `off` are accepted."""
        if self.backend == "swarm" and self.workspace_quota in ("loop", "helper"):
            raise ValueError(
                f"{self.env_name('workspace_quota')}={self.workspace_quota} is not available with "
                f"{self.env_name('backend')}=swarm (workspaces on swarm have no size limit): use off or auto"
            )
        return self

    @model_validator(mode="after")
    def _workspace_within_maximum(self) -> Settings:
        if self.workspace_mb > self.max_workspace_mb:
            raise ValueError(
                f"{self.env_name('workspace_mb')} ({self.workspace_mb}) exceeds {self.env_name('max_workspace_mb')} "
                f"({self.max_workspace_mb})"
            )
        return self

    @model_validator(mode="after")
    def _scratch_fits_in_memory(self) -> Settings:
        """tmpfs pages are memory that no process owns and the OOM killer cannot free: together they may
        hold at most half of a sandbox's memory, the rest is for its processes (agent, browser, code)."""
        tmp, shm = self.scratch_sizes()
        if SCRATCH_MOUNTS * tmp + shm > self.memory_bytes // 2:
            raise ValueError(
                f"{SCRATCH_MOUNTS} x tmp_size + shm_size ({_mib(SCRATCH_MOUNTS * tmp + shm)}) must fit in half of "
                f"mem_limit ({_mib(self.memory_bytes // 2)}): lower {self.env_name('tmp_size')} / "
                f"{self.env_name('shm_size')} or raise {self.env_name('mem_limit')}"
            )
        return self

    @property
    def profiles_root(self) -> Path:
        return self.snapshot_root or self.state_dir / "profiles"
