"""The host's settings: one object, read once from the environment (`BOXWRIGHT_<FIELD>`, see
rpc.settings) and overridable by CLI flags. Everything the host does — serving, sandboxes, the image
build, logging — reads its configuration from here."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator
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


def _iec(n: int) -> str:
    """A round binary size in its largest whole unit (1 TiB, 128 MiB)."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} bytes"


# Bounds of the settings: a value outside them is refused at load, naming its variable, rather than failing
# every sandbox_create later (or, for the limits, silently lifting one: Docker reads 0 as "no limit").
MAX_DURATION_S = 10 * 365 * 24 * 3600  # ten years: far past any use, well inside datetime's range
MIN_MEMORY = 128 * 2**20  # the agent alone needs tens of MiB (Docker's own floor is 6 MiB)
MAX_MEMORY = 2**40  # 1 TiB
MIN_SCRATCH = 2**20  # a tmpfs of size 0 has no limit at all
MIN_CPUS = 0.01  # Docker's smallest CPU limit; NanoCpus of 0 means none
MAX_CPUS = 1024.0  # the ceiling for an engine elsewhere (its own count is not known at load)
MIN_PIDS, MAX_PIDS = 64, 32768  # below 64 the agent and its browser cannot start; 0 and -1 mean unlimited
MAX_COUNT = 10_000
MAX_WORKSPACE_MB = 16 * 2**20  # 16 TiB: ext4's largest file (each workspace is one sparse image)
POOL_LIFETIME_CHECKS = 10  # a pooled sandbox lives at least this many reap intervals (pool.healthy)
# A Docker image reference (distribution/reference's grammar): [registry[:port]/]path[:tag][@digest].
_DOMAIN = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE_REFERENCE = re.compile(
    rf"(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*(?::[\w][\w.-]{{0,127}})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?"
)


def image_reference_problem(ref: str) -> str | None:
    """Why `ref` is not an image reference Docker would take, or None (checked at load: the engine answers
    a bad one with a 400 on whichever call first names it)."""
    if len(ref) > 255 or not IMAGE_REFERENCE.fullmatch(ref):
        return "not a Docker image reference ([registry/]name[:tag][@digest], the name in lower case)"
    return None


def _local_engine() -> bool:
    """Whether the Docker engine is this machine's (DOCKER_HOST unset or a unix socket), so that its CPUs
    are this machine's."""
    host = os.environ.get("DOCKER_HOST", "")
    return not host or host.startswith("unix://")


def _default_cpus() -> float:
    return min(2.0, float(os.cpu_count() or 1))


DEFAULT_MIRROR = "http://deb.debian.org/debian"
MIRROR_PATTERN = r"^(https?|file)://\S+$"


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
        20, ge=1, le=MAX_COUNT, description="Sandboxes this server runs, all owners together, the warm pool's included"
    )
    max_sandboxes_per_owner: int = Field(5, ge=1, le=MAX_COUNT, description="Sandboxes of one owner")
    max_memory_per_owner: str | None = Field(
        None,
        pattern=r"^\s*[0-9]+(\.[0-9]+)?\s*[bkmgtBKMGT]?\s*$",
        description="Memory limits of one owner's sandboxes together, e.g. `8g`, at least one sandbox's "
        "(default: no total)",
    )
    max_cpus_per_owner: float | None = Field(
        None,
        gt=0,
        le=MAX_COUNT * MAX_CPUS,
        allow_inf_nan=False,
        description="CPU limits of one owner's sandboxes together, at least one sandbox's (default: no total)",
    )
    default_ttl: int = Field(
        3600, ge=10, le=MAX_DURATION_S, description="Seconds a sandbox lives when sandbox_create names no TTL"
    )
    max_ttl: int = Field(
        24 * 3600,
        ge=10,
        le=MAX_DURATION_S,
        description="Seconds a sandbox may live at most (with a warm pool: at least 10 reap intervals, the "
        "pooled sandboxes' lifetime)",
    )
    idle_timeout: int = Field(
        0, ge=0, le=MAX_DURATION_S, description="Destroy (or pause) sandboxes unused this many seconds (0: never)"
    )
    idle_action: Literal["destroy", "pause"] = Field(
        "destroy", description="What the idle timeout does: `destroy`, or `pause` (resumed by the next call)"
    )
    startup_timeout: float = Field(
        60.0,
        ge=1,
        le=3600,
        allow_inf_nan=False,
        description="Seconds from create to agent and code runner ready (1 to 3600)",
    )
    reap_interval: float = Field(
        15.0,
        ge=0.05,
        le=3600,
        allow_inf_nan=False,
        description="Seconds between checks of TTLs and dead containers, and sweeps of expired runs (0.05 to 3600)",
    )
    foreign_grace: int = Field(
        600,
        ge=0,
        le=MAX_DURATION_S,
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
        allow_inf_nan=False,
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
        le=MAX_COUNT,
        description="Open MCP sessions of one owner over HTTP (clients of the 2025-11-25 protocol keep one each); "
        "one more is refused (503) until one ends or idles out",
    )
    # Template runs.
    max_runs_per_owner: int = Field(
        50,
        ge=1,
        le=MAX_COUNT,
        description="Template runs of one owner not yet ended (queued or running); one more is QUOTA_EXCEEDED",
    )
    run_retention: int = Field(
        24 * 3600,
        ge=1,
        le=MAX_DURATION_S,
        description="Seconds a finished template run's result and artifacts are kept after it ends",
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
    workspace_mb: int = Field(
        2048, ge=16, le=MAX_WORKSPACE_MB, description="Size limit of a sandbox's /workspace in MiB (default)"
    )
    max_workspace_mb: int = Field(
        16384,
        ge=16,
        le=MAX_WORKSPACE_MB,
        description="Largest workspace a sandbox_create may ask for, in MiB (at most 16 TiB)",
    )
    workspace_quota: Literal["auto", "loop", "helper", "off"] = Field(
        "auto",
        description="How the size limit is enforced: loop (this process, root, local engine), helper (a brief "
        "privileged container), off (no limit); auto: loop if it can, else helper",
    )
    workspace_dir: Path = Field(
        Path("/var/lib/boxwright/workspaces"),
        description="Where workspace images live, on the engine's host (one sparse file per sandbox; an absolute path)",
    )
    # Limits of each sandbox container.
    mem_limit: str = Field(
        "2g", pattern=SIZE_PATTERN, description="Memory (and memory + swap) of a sandbox, 128m to 1t"
    )
    cpus: float = Field(
        default_factory=_default_cpus,
        ge=MIN_CPUS,
        le=MAX_CPUS,
        allow_inf_nan=False,
        description="CPUs of a sandbox, from 0.01 up to the engine's CPUs (default 2, or this host's CPUs if "
        "fewer; with a local engine more than this host's are refused at start)",
    )
    pids_limit: int = Field(
        512,
        ge=MIN_PIDS,
        le=MAX_PIDS,
        description="Processes and threads of a sandbox, 64 to 32768 (a sandbox always has a limit)",
    )
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
        le=MAX_COUNT,
        description="Login profiles one owner may have, the default one aside; a new one past it is QUOTA_EXCEEDED",
    )
    snapshot_refresh_on_request_end: bool = Field(
        True, description="Publish a profile session's state after each tool call on it (debounced)"
    )
    snapshot_refresh_debounce_ms: int = Field(
        500, ge=0, le=60_000, description="Calls this close together publish once, when they stop"
    )
    snapshot_refresh_interval_ms: int = Field(
        30_000,
        ge=1000,
        le=24 * 3600 * 1000,
        description="A profile session in use publishes at least this often (backstop)",
    )
    snapshot_publish_lock_timeout_ms: int = Field(
        500, ge=1, le=60_000, description="How long a publish waits for publish.lock"
    )
    login_refresh_interval_ms: int = Field(
        5000, ge=500, le=3600 * 1000, description="`boxwright login` publishes the profile this often while you log in"
    )
    login_timeout_ms: int = Field(
        0, ge=0, le=MAX_DURATION_S * 1000, description="`boxwright login` gives up after this long (0: never)"
    )
    include_indexed_db_in_snapshot: bool = Field(False, description="Snapshots include IndexedDB (large)")
    snapshot_dir_permission: str = Field(
        "700",
        pattern=r"^[0-7]{3}$",
        description="Mode of profile directories (the owner's rwx, never others'; profiles hold cookies)",
    )
    snapshot_file_permission: str = Field(
        "600",
        pattern=r"^[0-7]{3}$",
        description="Mode of state.json and meta.json (the owner's rw, never others')",
    )
    live_view_base_url: str | None = Field(
        None,
        pattern=r"^https?://[^\s/?#]+[^\s?#]*$",
        description="Base of live view links, an http(s) URL (default: the HTTP server's own address, or the "
        "loopback listener's)",
    )
    live_view_port: int = Field(
        0, ge=0, le=65535, description="Port of the loopback live view listener of stdio and `boxwright login` (0: any)"
    )
    live_view_link_ttl: int = Field(
        600, ge=10, le=7 * 24 * 3600, description="Seconds a live view link stays valid until its first use"
    )
    # Logs.
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field(
        "INFO", description="Host log level (logs go to stderr)"
    )
    # Building the image.
    base_image: str | None = Field(
        None, description="Base image to build FROM (default debian:bookworm-slim, made with debootstrap if need be)"
    )
    pull_timeout: float = Field(
        60.0, ge=1, le=3600, allow_inf_nan=False, description="Seconds a base-image pull may go without progress"
    )
    debian_mirror: str = Field(DEFAULT_MIRROR, pattern=MIRROR_PATTERN, description="Debian mirror for debootstrap")
    debian_security_mirror: str | None = Field(
        None,
        pattern=rf"{MIRROR_PATTERN}|^$",
        description="Security archive for debootstrap (default: Debian's with the default mirror; empty: none)",
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

    @field_validator("toolsets", "allowed_hosts")
    @classmethod
    def _not_an_empty_list(cls, value: list[str] | None) -> list[str] | None:
        """ "," names nothing: no tool offered, or no Host header accepted, is a server nobody can use."""
        if value is not None and not value:
            raise ValueError("names nothing (leave it unset for the default)")
        return value

    @field_validator("image", "base_image")
    @classmethod
    def _image_reference(cls, value: str | None) -> str | None:
        problem = None if value is None else image_reference_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("mem_limit", "tmp_size", "shm_size")
    @classmethod
    def _size_within_bounds(cls, value: str | None, info: ValidationInfo) -> str | None:
        """Docker reads a limit of 0 as none and a tmpfs of size 0 as unbounded: a hardening setting must
        never turn into that, and a memory limit too small for the agent only fails every create later."""
        if value is None:
            return value
        low, high = (MIN_MEMORY, MAX_MEMORY) if info.field_name == "mem_limit" else (MIN_SCRATCH, MAX_MEMORY)
        if not low <= size_bytes(value) <= high:
            raise ValueError(f"must be from {_iec(low)} to {_iec(high)}")
        return value

    @field_validator("workspace_dir")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        """A path on the engine's host, handed to Docker as a volume: a relative one means nothing there."""
        if not value.is_absolute():
            raise ValueError("must be an absolute path (on the engine's host)")
        return value

    @field_validator("snapshot_dir_permission", "snapshot_file_permission")
    @classmethod
    def _private_mode(cls, value: str, info: ValidationInfo) -> str:
        """Profiles hold logged-in cookies: others may never read them, and the server must read its own."""
        mode, owner = int(value, 8), 0o700 if info.field_name == "snapshot_dir_permission" else 0o600
        if mode & 0o007 or mode & owner != owner:
            raise ValueError(f"must give the owner at least {owner:o} and others nothing")
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
    def _consistent(self) -> Settings:
        """Settings that are each valid may still contradict one another: every contradiction is named at
        once, so that one start finds them all."""
        checks = (
            self._swarm_has_no_workspace_limit,
            self._workspace_within_maximum,
            self._scratch_fits_in_memory,
            self._cpus_within_the_engine,
            self._owner_totals_fit_one_sandbox,
            self._pool_outlives_its_checks,
            self._default_profile_matches,
        )
        problems = [problem for check in checks if (problem := check()) is not None]
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def _swarm_has_no_workspace_limit(self) -> str | None:
        """A swarm task lands on a node chosen after its volumes are described: no loop device can be made
        for it beforehand (docs/fleet.md), so only `auto` (meaning off there) and `off` are accepted."""
        if self.backend == "swarm" and self.workspace_quota in ("loop", "helper"):
            return (
                f"{self.env_name('workspace_quota')}={self.workspace_quota} is not available with "
                f"{self.env_name('backend')}=swarm (workspaces on swarm have no size limit): use off or auto"
            )
        return None

    def _workspace_within_maximum(self) -> str | None:
        if self.workspace_mb > self.max_workspace_mb:
            return (
                f"{self.env_name('workspace_mb')} ({self.workspace_mb}) exceeds {self.env_name('max_workspace_mb')} "
                f"({self.max_workspace_mb})"
            )
        return None

    def _scratch_fits_in_memory(self) -> str | None:
        """tmpfs pages are memory that no process owns and the OOM killer cannot free: together they may
        hold at most half of a sandbox's memory, the rest is for its processes (agent, browser, code)."""
        tmp, shm = self.scratch_sizes()
        if SCRATCH_MOUNTS * tmp + shm > self.memory_bytes // 2:
            return (
                f"{SCRATCH_MOUNTS} x tmp_size + shm_size ({_mib(SCRATCH_MOUNTS * tmp + shm)}) must fit in half of "
                f"mem_limit ({_mib(self.memory_bytes // 2)}): lower {self.env_name('tmp_size')} / "
                f"{self.env_name('shm_size')} or raise {self.env_name('mem_limit')}"
            )
        return None

    def _cpus_within_the_engine(self) -> str | None:
        """Docker refuses a CPU limit above its engine's CPUs (a 400 at every create). A local engine's are
        this machine's, so it is checked here; a remote engine's or a swarm node's cannot be known at load."""
        cpus = os.cpu_count()
        if self.backend == "docker" and _local_engine() and cpus is not None and self.cpus > cpus:
            return (
                f"{self.env_name('cpus')} ({self.cpus:g}) exceeds this host's {cpus} CPUs: the Docker engine "
                "refuses a sandbox more CPUs than it has"
            )
        return None

    def _owner_totals_fit_one_sandbox(self) -> str | None:
        """A total smaller than one sandbox's limit would refuse every sandbox_create (QUOTA_EXCEEDED)."""
        if self.max_memory_per_owner is not None and size_bytes(self.max_memory_per_owner) < self.memory_bytes:
            return (
                f"{self.env_name('max_memory_per_owner')} is less than one sandbox's {self.env_name('mem_limit')} "
                f"({self.mem_limit}): no sandbox could be created"
            )
        if self.max_cpus_per_owner is not None and self.max_cpus_per_owner < self.cpus:
            return (
                f"{self.env_name('max_cpus_per_owner')} ({self.max_cpus_per_owner:g}) is less than one sandbox's "
                f"{self.env_name('cpus')} ({self.cpus:g}): no sandbox could be created"
            )
        return None

    def _pool_outlives_its_checks(self) -> str | None:
        """A pooled sandbox lives max_ttl and is replaced once it is within a reap interval of its end
        (pool.healthy): with a max_ttl close to the interval the pool starts and discards sandboxes forever."""
        if self.pool_size > 0 and self.max_ttl < POOL_LIFETIME_CHECKS * self.reap_interval:
            return (
                f"with {self.env_name('pool_size')}={self.pool_size}, {self.env_name('max_ttl')} ({self.max_ttl}) "
                f"must be at least {POOL_LIFETIME_CHECKS} x {self.env_name('reap_interval')} "
                f"({POOL_LIFETIME_CHECKS * self.reap_interval:g} s): pooled sandboxes live max_ttl and are "
                "replaced within a reap interval of its end"
            )
        return None

    def _default_profile_matches(self) -> str | None:
        problem = profile_id_problem(self.default_profile_id, self.profile_id_regex)
        if problem is not None:
            return (
                f"{self.env_name('default_profile_id')} ({self.default_profile_id}) {problem} "
                f"({self.env_name('profile_id_regex')})"
            )
        return None

    @property
    def profiles_root(self) -> Path:
        return self.snapshot_root or self.state_dir / "profiles"
