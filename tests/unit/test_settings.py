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
    ],
)
def test_a_bad_value_is_refused_with_its_variable(monkeypatch: pytest.MonkeyPatch, var: str, value: str) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(SettingsError, match=var) as info:
        Settings.load()
    assert value not in str(info.value)  # values are not echoed (a variable may hold a secret)


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
