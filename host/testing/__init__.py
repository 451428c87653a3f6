"""Boxwright for test suites: a testcontainers container class and a pytest plugin.

from host.testing import BoxwrightContainer

with BoxwrightContainer() as box:
    assert box.run_code("print(6 * 7)").stdout == "42\\n"
"""

from host.testing.container import BoxwrightContainer

__all__ = ["BoxwrightContainer"]
