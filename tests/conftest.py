"""Test-wide settings. Docker-backed tests are marked `docker`; without an engine they are skipped
locally with a reason, but in CI (CI=true) a missing engine is a failure, never a silent skip."""

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "integration" in item.path.parts:
            item.add_marker(pytest.mark.docker)
    needs_docker = [i for i in items if "docker" in i.keywords]
    if not needs_docker:
        return
    problem = _docker_ok()
    if problem is None:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        raise pytest.UsageError(f"CI=true but no Docker engine answers ({problem}); .ci/run must start one")
    skip = pytest.mark.skip(reason=f"no Docker engine: {problem}")
    for item in needs_docker:
        item.add_marker(skip)
