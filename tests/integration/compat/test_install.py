"""Item 6: installing Boxwright must not break other test suites. A user's project venv gets a plain,
non-editable `pip install <boxwright>` (no test extra, so no testcontainers) and pytest; the
auto-registered pytest11 plugin must then load, and only a test that asks for the fixture hears
that testcontainers is missing."""

from __future__ import annotations

import shutil
import subprocess
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "venv", "node_modules", "__pycache__", "*.egg-info", "build", "dist", ".*_cache", ".build"
)

USER_TESTS = """
def test_unrelated():
    assert 6 * 7 == 42


def test_wants_a_sandbox(boxwright_sandbox):
    pass
"""


@pytest.fixture(scope="module")
def user_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("user")
    src = base / "boxwright-src"  # a copy, so the build leaves nothing in the checkout
    shutil.copytree(ROOT, src, ignore=COPY_IGNORE)
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    pip = subprocess.run(
        [env_dir / "bin" / "python", "-m", "pip", "install", "-q", str(src), "pytest"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert pip.returncode == 0, pip.stderr[-3000:]
    probe = subprocess.run([env_dir / "bin" / "python", "-c", "import testcontainers"], capture_output=True)
    assert probe.returncode != 0, "testcontainers is installed: the test would prove nothing"
    return env_dir


def run_pytest(env_dir: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_user.py").write_text(USER_TESTS)
    return subprocess.run(
        [env_dir / "bin" / "python", "-m", "pytest", "-p", "no:cacheprovider", *args, "test_user.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_plugin_loads_without_testcontainers(user_venv: Path, tmp_path: Path) -> None:
    proc = run_pytest(user_venv, tmp_path, "-k", "unrelated")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "1 passed" in proc.stdout
    # The plugin is really there (registered through the pytest11 entry point).
    fixtures = run_pytest(user_venv, tmp_path, "--fixtures")
    assert "boxwright_sandbox" in fixtures.stdout


def test_fixture_without_testcontainers_says_what_to_install(user_venv: Path, tmp_path: Path) -> None:
    proc = run_pytest(user_venv, tmp_path, "-k", "wants_a_sandbox")
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "testcontainers" in out and "boxwright[testing]" in out, out[-3000:]
    assert "ModuleNotFoundError" not in out, out[-3000:]
