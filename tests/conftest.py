"""Test-wide settings. Tests that need a Docker engine (everything under integration/) or a host
Chromium (unit tests marked `chromium`) are skipped locally with the reason
when it is missing — but in CI (CI=true) a missing engine or browser is a failure, never a skip."""

from __future__ import annotations

import os

import pytest

# testcontainers' reaper image cannot be pulled on air-gapped machines.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")


def _docker_ok() -> str | None:
    try:
        import docker

        docker.from_env(timeout=10).ping()
    except Exception as exc:  # any failure means: no usable engine
        return f"{type(exc).__name__}: {exc}"
    return None


def _chromium_ok() -> str | None:
    path = os.environ.get("BOXWRIGHT_CHROMIUM", "/usr/bin/chromium")
    return None if os.access(path, os.X_OK) else f"no Chromium at {path} (apt-get install chromium)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "integration" in item.path.parts:
            item.add_marker(pytest.mark.docker)
    in_ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")
    for marker, check in (("docker", _docker_ok), ("chromium", _chromium_ok)):
        needing = [i for i in items if marker in i.keywords]
        problem = check() if needing else None
        if problem is None:
            continue
        if in_ci:
            raise pytest.UsageError(f"CI=true but {marker} is unavailable ({problem}); .ci/run must provide it")
        skip = pytest.mark.skip(reason=problem)
        for item in needing:
            item.add_marker(skip)
