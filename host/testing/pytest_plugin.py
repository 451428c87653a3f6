"""pytest plugin (auto-loaded via the `pytest11` entry point): a `boxwright_sandbox` fixture.

    def test_hello(boxwright_sandbox):
        assert boxwright_sandbox.run_code("print('hi')").stdout == "hi\\n"

pytest loads this module in every environment Boxwright is installed into, so it imports nothing
beyond pytest at load time: testcontainers (the `testing` extra) and the Docker SDK are imported
only when a test asks for a fixture, and a missing testcontainers is then a clear failure of that
test alone.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from host.testing import TESTING_EXTRA_HINT

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
def boxwright_sandbox(request: pytest.FixtureRequest) -> Iterator[BoxwrightContainer]:
    """A fresh hardened sandbox per test, removed afterwards."""
    if importlib.util.find_spec("testcontainers") is None:
        pytest.fail(f"the boxwright_sandbox fixture needs testcontainers: {TESTING_EXTRA_HINT}", pytrace=False)
    image: str = request.getfixturevalue("boxwright_image")  # checked first: no image build in vain
    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    from host.testing.container import BoxwrightContainer

    with BoxwrightContainer(image) as box:
        yield box
