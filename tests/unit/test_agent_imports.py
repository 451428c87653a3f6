"""An idle agent does not load the scrape engine nor Playwright (issue 12, density): they come with the
first scrape and the first browser launch."""

import subprocess
import sys

from sandbox_image.config import SandboxSettings

# A fresh interpreter: this test process has imported everything already.
CHECK = """
import sys
from sandbox_image.agent import create_agent_app
from sandbox_image.config import SandboxSettings
create_agent_app(SandboxSettings.model_validate_json(sys.argv[1]))
lazy = ("sandbox_image.scrape.service", "lxml", "html_to_markdown", "playwright.async_api", "greenlet", "pyee")
print(sorted(m for m in lazy if m in sys.modules))
"""


def test_the_agent_starts_without_the_scrape_engine_and_playwright(agent_config: SandboxSettings) -> None:
    config = agent_config.model_dump_json()
    out = subprocess.run([sys.executable, "-c", CHECK, config], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_playwright_errors_caught_are_the_ones_it_raises() -> None:
    """sandbox_image.browser.errors takes them from the module that defines them (cheap to import)."""
    from playwright import async_api

    from sandbox_image.browser import errors

    assert errors.PlaywrightError is async_api.Error
    assert errors.PlaywrightTimeoutError is async_api.TimeoutError
