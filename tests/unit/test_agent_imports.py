"""An idle agent does not load the scrape engine (issue 12, density): it comes with the first scrape."""

import subprocess
import sys

from sandbox_image.config import SandboxSettings

# A fresh interpreter: this test process has imported everything already.
CHECK = """
import sys
from sandbox_image.agent import create_agent_app
from sandbox_image.config import SandboxSettings
create_agent_app(SandboxSettings.model_validate_json(sys.argv[1]))
print(sorted(m for m in ("sandbox_image.scrape.service", "lxml", "html_to_markdown") if m in sys.modules))
"""


def test_the_agent_starts_without_the_scrape_engine(agent_config: SandboxSettings) -> None:
    config = agent_config.model_dump_json()
    out = subprocess.run([sys.executable, "-c", CHECK, config], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
