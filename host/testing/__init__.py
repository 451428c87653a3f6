"""Boxwright for test suites: a testcontainers container class and a pytest plugin.

from host.testing import BoxwrightContainer

with BoxwrightContainer() as box:
    assert box.run_code("print(6 * 7)").stdout == "42\\n"

The container class needs testcontainers (`pip install 'boxwright[testing]'`). It is imported on
first use, not here: this package is also where pytest loads the auto-registered plugin from, in
every environment Boxwright is installed into, and that must work without testcontainers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from host.testing.container import BoxwrightContainer

__all__ = ["BoxwrightContainer"]

TESTING_EXTRA_HINT = "pip install 'boxwright[testing]'"


def __getattr__(name: str) -> Any:
    if name == "BoxwrightContainer":
        from host.testing.container import BoxwrightContainer

        return BoxwrightContainer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
