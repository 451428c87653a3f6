"""One settings object per side: names derived from fields, bad values refused by name, empties."""

from __future__ import annotations

import os
from pathlib import Path

import docker.errors
import pytest

from host.backends.hardening import Limits, hardened
from host.config import Settings
from host.image.build_context import find_ca_bundle
from host.image.builder import image_status
from rpc.agent import AGENT_PORT, agent_env
from rpc.auth import token_sha256
from rpc.settings import SettingsError
from sandbox_image.config import SandboxSettings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith("BOXWRIGHT_")]:
        monkeypatch.delenv(name)


def test_every_variable_is_named_after_its_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOXWRIGHT_IMAGE", "mine:1")
    monkeypatch.setenv("BOXWRIGHT_DEFAULT_TTL", "120")
    monkeypatch.setenv("BOXWRIGHT_NETWORK", "none")
    monkeypatch.setenv("BOXWRIGHT_CPUS", "0.5")
    monkeypatch.setenv("BOXWRIGHT_TOOLSETS", "code, files")
    monkeypatch.setenv("BOXWRIGHT_LOG_LEVEL", "debug")
    monkeypatch.setenv("BOXWRIGHT_DEBIAN_MIRROR", "http://mirror.example/debian")
    s = Settings.load()
    assert (s.image, s.default_ttl, s.network, s.toolsets) == ("mine:1", 120, "none", ["code", "files"])
    assert s.nano_cpus == 500_000_000 and s.log_level == "DEBUG"
    assert s.debian_mirror == "http://mirror.example/debian"
    assert "image" in s.model_fields_set and "namespace" not in s.model_fields_set


def test_the_swarm_backend_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOXWRIGHT_BACKEND", "swarm")
    monkeypatch.setenv("BOXWRIGHT_SWARM_MANAGER", "tcp://10.0.0.1:2376")
    monkeypatch.setenv("BOXWRIGHT_SWARM_ENGINES", "tcp://10.0.0.2:2376, tcp://10.0.0.3:2376,")
    s = Settings.load()
    assert (s.backend, s.swarm_manager) == ("swarm", "tcp://10.0.0.1:2376")
    assert s.swarm_engines == ["tcp://10.0.0.2:2376", "tcp://10.0.0.3:2376"]
    assert s.workspace_quota == "auto"  # means no limit there
    # A workspace limit swarm cannot give is refused at start, naming both variables.
    monkeypatch.setenv("BOXWRIGHT_WORKSPACE_QUOTA", "loop")
    with pytest.raises(SettingsError, match="BOXWRIGHT_WORKSPACE_QUOTA=loop is not available with BOXWRIGHT_BACKEND"):
        Settings.load()
    assert Settings.load(backend="docker").workspace_quota == "loop"  # a flag (--backend docker) wins


def test_flags_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOXWRIGHT_KEEP_ON_EXIT", "false")
    assert Settings.load(keep_on_exit=True, toolsets=None).keep_on_exit is True


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("BOXWRIGHT_MAX_SANDBOXES", "lots"),
        ("BOXWRIGHT_DEFAULT_TTL", "5"),
        ("BOXWRIGHT_NETWORK", "allowlist"),
        ("BOXWRIGHT_KEEP_ON_EXIT", "maybe"),
        ("BOXWRIGHT_NAMESPACE", "Has Spaces"),
        ("BOXWRIGHT_LOG_LEVEL", "chatty"),
        ("BOXWRIGHT_BACKEND", "kubernetes"),
        # Docker reads these as "no limit": a hardening setting must never turn into one.
        ("BOXWRIGHT_MEM_LIMIT", "0"),
        ("BOXWRIGHT_PIDS_LIMIT", "0"),
        ("BOXWRIGHT_PIDS_LIMIT", "-1"),
        ("BOXWRIGHT_PIDS_LIMIT", "-7"),
        ("BOXWRIGHT_CPUS", "1e-9"),
        ("BOXWRIGHT_CPUS", "1e-12"),
        ("BOXWRIGHT_TMP_SIZE", "0"),
        ("BOXWRIGHT_SHM_SIZE", "0"),
        # Accepted before, then every sandbox_create failed (Docker's 6 MB floor, an OverflowError).
        ("BOXWRIGHT_MEM_LIMIT", "1k"),
        ("BOXWRIGHT_MEM_LIMIT", "2t"),
        ("BOXWRIGHT_CPUS", "inf"),
        ("BOXWRIGHT_CPUS", "nan"),
        ("BOXWRIGHT_CPUS", "5000"),
        # Durations past datetime's range: sandbox_create failed INTERNAL_ERROR, a pool took the server down,
        # a huge grace stopped it at start with a traceback.
        ("BOXWRIGHT_MAX_TTL", "99999999999999"),
        ("BOXWRIGHT_DEFAULT_TTL", "99999999999999"),
        ("BOXWRIGHT_IDLE_TIMEOUT", "99999999999999"),
        ("BOXWRIGHT_FOREIGN_GRACE", "99999999999999"),
        ("BOXWRIGHT_RUN_RETENTION", "99999999999999"),
        ("BOXWRIGHT_LIVE_VIEW_LINK_TTL", "99999999999999"),
        ("BOXWRIGHT_LOGIN_TIMEOUT_MS", "99999999999999999"),
        ("BOXWRIGHT_SNAPSHOT_REFRESH_INTERVAL_MS", "99999999999999"),
        # Tiny or not finite: every create timed out, the reaper spun at 90% CPU.
        ("BOXWRIGHT_STARTUP_TIMEOUT", "0.000001"),
        ("BOXWRIGHT_STARTUP_TIMEOUT", "inf"),
        ("BOXWRIGHT_REAP_INTERVAL", "0.000001"),
        ("BOXWRIGHT_REAP_INTERVAL", "inf"),
        ("BOXWRIGHT_PULL_TIMEOUT", "inf"),
        ("BOXWRIGHT_POOL_REFILL_DELAY", "nan"),
        # Counts and sizes.
        ("BOXWRIGHT_MAX_SESSIONS_PER_OWNER", "99999999999999999999999"),
        ("BOXWRIGHT_MAX_SANDBOXES", "99999999999999999999999"),
        ("BOXWRIGHT_MAX_WORKSPACE_MB", "99999999999"),
        ("BOXWRIGHT_MAX_CPUS_PER_OWNER", "inf"),
        # Strings that only failed later, or meant nothing.
        ("BOXWRIGHT_IMAGE", "Bad Image!!"),
        ("BOXWRIGHT_BASE_IMAGE", "debian bookworm"),
        ("BOXWRIGHT_WORKSPACE_DIR", "relative/dir"),
        ("BOXWRIGHT_LIVE_VIEW_BASE_URL", "javascript:alert(1)"),
        ("BOXWRIGHT_DEBIAN_MIRROR", "deb.debian.org"),
        ("BOXWRIGHT_TOOLSETS", ","),
        ("BOXWRIGHT_ALLOWED_HOSTS", ","),
        ("BOXWRIGHT_SNAPSHOT_DIR_PERMISSION", "777"),
        ("BOXWRIGHT_SNAPSHOT_FILE_PERMISSION", "000"),
    ],
)
def test_a_bad_value_is_refused_with_its_variable(monkeypatch: pytest.MonkeyPatch, var: str, value: str) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(SettingsError, match=var) as info:
        Settings.load()
    assert value == "," or value not in str(info.value)  # not echoed (a variable may hold a secret)


def test_empty_is_unset_unless_empty_means_something(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BOXWRIGHT_MAX_SANDBOXES", "")
    monkeypatch.setenv("BOXWRIGHT_CPUS", "")
    assert Settings.load().max_sandboxes == 20
    monkeypatch.setenv("BOXWRIGHT_BUILD_CA_BUNDLE", "")
    assert find_ca_bundle(Settings.load()) is None  # empty: hand no CA to the build
    bundle = tmp_path / "ca.pem"
    bundle.write_text("x")
    monkeypatch.setenv("BOXWRIGHT_BUILD_CA_BUNDLE", str(bundle))
    assert find_ca_bundle(Settings.load()) == bundle
    monkeypatch.setenv("BOXWRIGHT_RUNNER_SOCKET_GROUP", "")
    assert SandboxSettings.load().runner_socket_group is None  # empty: leave the socket's group alone


def test_the_host_starts_an_agent_the_agent_can_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """What crosses from host to container — the hashes of the token and of the runner's secret, and the
    expiry — read by their fields."""
    for name, value in agent_env("sk-token", "runner-secret", expires_at=1234).items():
        monkeypatch.setenv(name, value)
    settings = SandboxSettings.load()
    assert settings.agent_token_sha256() == token_sha256("sk-token")
    assert settings.runner_secret_sha256 == token_sha256("runner-secret") and settings.expires_at == 1234


class _EngineWithoutImages:
    """Just enough of a docker client for image_status: it has no images."""

    class images:
        @staticmethod
        def get(tag: str) -> None:
            raise docker.errors.ImageNotFound(tag)


def test_the_image_tag_is_read_once_from_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOXWRIGHT_IMAGE", "from-env:1")
    settings = Settings.load(image="from-flag:2")
    status = image_status(_EngineWithoutImages(), settings)  # type: ignore[arg-type]
    assert status.tag == "from-flag:2" and not status.exists


def test_the_image_exposes_the_agent_port() -> None:
    dockerfile = (Path(__file__).resolve().parents[2] / "Dockerfile.sandbox").read_text()
    assert f"\nEXPOSE {AGENT_PORT}\n" in dockerfile
    assert SandboxSettings.model_fields["port"].default == AGENT_PORT


def test_scratch_mounts_fit_in_half_the_memory() -> None:
    """tmpfs pages are pinned memory no process owns: by default each mount gets an eighth of the memory
    limit, and explicit sizes that would leave the processes less than half of it are refused."""
    assert Settings.load(mem_limit="1g").scratch_sizes() == (128 << 20, 128 << 20)
    assert Settings.load(mem_limit="2g", tmp_size="300m", shm_size="100m").scratch_sizes() == (300 << 20, 100 << 20)
    with pytest.raises(SettingsError, match="BOXWRIGHT_TMP_SIZE") as refused:
        Settings.load(mem_limit="1g", tmp_size="512m")
    assert "half of mem_limit (512 MiB)" in str(refused.value)
    with pytest.raises(SettingsError, match="BOXWRIGHT_MEM_LIMIT"):
        Settings.load(mem_limit="lots")
    run = hardened(Limits.of(Settings.load(mem_limit="1g")))
    assert run["shm_size"] == str(128 << 20) and run["tmpfs"]["/tmp"].endswith(f"size={128 << 20}")


def test_every_contradiction_is_named_at_once() -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.load(workspace_mb=900, max_workspace_mb=100, max_cpus_per_owner=0.5, cpus=1)
    assert "BOXWRIGHT_WORKSPACE_MB" in str(caught.value) and "BOXWRIGHT_MAX_CPUS_PER_OWNER" in str(caught.value)


def test_the_smallest_limits_accepted_still_limit() -> None:
    run = hardened(Limits.of(Settings.load(mem_limit="128m", pids_limit=64, cpus=0.01)))
    assert run["pids_limit"] == 64 and run["nano_cpus"] == 10_000_000 and run["mem_limit"] == "128m"
    assert int(run["shm_size"]) == 16 << 20 and run["tmpfs"]["/tmp"].endswith(f"size={16 << 20}")
    for bad in (("1g", 0, "1m", "1m"), ("1g", -1, "1m", "1m"), ("1g", 512, "1m", "0"), ("0", 512, "1m", "1m")):
        with pytest.raises(ValueError, match="a sandbox needs a positive"):
            Limits(*bad)  # whoever builds the limits (the testing container does): none is ever lifted


def test_cpus_are_bounded_by_a_local_engines_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """Docker refuses more CPUs than its engine has (a 400 at every create). A local engine's are this
    host's; a remote engine's are unknown at load, so only the static ceiling holds there."""
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    assert Settings.load(cpus=4).cpus == 4
    with pytest.raises(SettingsError, match=r"BOXWRIGHT_CPUS .* exceeds this host's 4 CPUs"):
        Settings.load(cpus=4.5)
    monkeypatch.setenv("DOCKER_HOST", "tcp://10.0.0.9:2376")
    assert Settings.load(cpus=64).cpus == 64
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    monkeypatch.delenv("DOCKER_HOST")
    assert Settings.load().cpus == 1.0  # the default (2) on a host with fewer: what the engine can give


def test_the_longest_durations_still_fit_a_date() -> None:
    from datetime import UTC, datetime, timedelta

    from host.config import MAX_DURATION_S

    s = Settings.load(max_ttl=MAX_DURATION_S, default_ttl=MAX_DURATION_S, foreign_grace=MAX_DURATION_S)
    assert datetime.now(UTC) + timedelta(seconds=s.max_ttl + s.foreign_grace) < datetime.max.replace(tzinfo=UTC)


@pytest.mark.parametrize(
    "ref",
    [
        "boxwright-sandbox:latest",
        "localhost:5000/team/sandbox:1.2-rc_3",
        "Registry.Example.com/org/img",
        "ghcr.io/org/x@sha256:" + "a" * 64,
        "debian:bookworm-slim",
    ],
)
def test_image_references_docker_takes_are_accepted(ref: str) -> None:
    assert Settings.load(image=ref, base_image=ref).image == ref


def test_settings_that_only_work_together_are_checked_together(monkeypatch: pytest.MonkeyPatch) -> None:
    # An owner's total below one sandbox's limit refused every create (QUOTA_EXCEEDED).
    monkeypatch.setenv("BOXWRIGHT_MAX_MEMORY_PER_OWNER", "0")
    with pytest.raises(SettingsError, match="BOXWRIGHT_MAX_MEMORY_PER_OWNER is less than one sandbox's BOXWRIGHT_MEM"):
        Settings.load()
    monkeypatch.delenv("BOXWRIGHT_MAX_MEMORY_PER_OWNER")
    with pytest.raises(SettingsError, match=r"BOXWRIGHT_MAX_CPUS_PER_OWNER .* BOXWRIGHT_CPUS"):
        Settings.load(cpus=2, max_cpus_per_owner=1)
    assert Settings.load(mem_limit="1g", max_memory_per_owner="1g").max_memory_per_owner == "1g"
    # A default profile the configured pattern refuses: every `boxwright login` without --profile failed.
    with pytest.raises(SettingsError, match=r"BOXWRIGHT_DEFAULT_PROFILE_ID .*BOXWRIGHT_PROFILE_ID_REGEX"):
        Settings.load(profile_id_regex="^[a-z]{1,3}$")


def test_a_warm_pool_must_outlive_its_checks() -> None:
    """A pooled sandbox lives max_ttl and is replaced within a reap interval of its end: POOL_SIZE=1 with
    MAX_TTL=10 (and the 15 s interval) started and discarded a sandbox every ~2 s for ever."""
    with pytest.raises(SettingsError) as refused:
        Settings.load(pool_size=1, max_ttl=10)
    assert all(n in str(refused.value) for n in ("BOXWRIGHT_MAX_TTL", "BOXWRIGHT_REAP_INTERVAL", "BOXWRIGHT_POOL"))
    with pytest.raises(SettingsError, match="BOXWRIGHT_MAX_TTL"):
        Settings.load(pool_size=1, max_ttl=149)  # 10 x 15 s
    assert Settings.load(pool_size=1, max_ttl=150).max_ttl == 150
    assert Settings.load(pool_size=1, max_ttl=10, reap_interval=1).pool_size == 1
    assert Settings.load(max_ttl=10).max_ttl == 10  # no pool: a short maximum is only short


@pytest.mark.parametrize("under", ["/proc/1/x", "a-file/x"])
def test_an_unusable_state_dir_is_one_clear_error(tmp_path: Path, under: str) -> None:
    from host.identity import IdentityError, load_or_create

    (tmp_path / "a-file").write_text("not a directory")
    state_dir = Path(under) if under.startswith("/") else tmp_path / under
    with pytest.raises(IdentityError, match=f"cannot use the state dir {state_dir} .*set BOXWRIGHT_STATE_DIR"):
        load_or_create(state_dir)
