"""pytest plugin (auto-loaded via the `pytest11` entry point): a `boxwright_sandbox` fixture.

    def test_hello(boxwright_sandbox):
        assert boxwright_sandbox.run_code("print('hi')").stdout == "hi\\n"

Imports are lazy so that merely having Boxwright installed costs other test suites nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from host.testing.container import BoxwrightContainer


@pytest.fixture(scope="session")
def boxwright_image() -> str:
    """The sandbox image tag, built (with progress on stderr) if missing or out of date."""
    from host.backends.docker_backend import docker_client
    from host.config import Settings
    from host.image.builder import ensure_image

    return ensure_image(docker_client(), Settings.load(), progress=lambda line: print(line, flush=True))


@pytest.fixture
def boxwright_sandbox(boxwright_image: str) -> Iterator[BoxwrightContainer]:
    """A fresh hardened sandbox per test, removed afterwards."""
    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    from host.testing.container import BoxwrightContainer

    with BoxwrightContainer(boxwright_image) as box:
        yield box
