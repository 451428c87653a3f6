"""An idle agent does not load the scrape engine nor Playwright (issue 12, density): they come with the
first scrape and the first browser launch."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from sandbox_image.config import SandboxSettings
from tests.unit.conftest import RUNNER_SECRET

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


RUNNER_CHECK = """
import sys
import sandbox_image.code.serving
unserved = ("rpc.methods", "rpc.models.browser", "rpc.models.tasks", "rpc.models.scrape", "rpc.models.templates")
print(sorted(m for m in unserved if m in sys.modules))
"""


def test_the_code_runner_loads_only_the_models_of_the_methods_it_serves() -> None:
    """Every sandbox start waits for the runner to boot on busy cores: it imports rpc.runner_methods, not
    the whole table with the browser, template and scrape models (issue 12, cold create)."""
    out = subprocess.run([sys.executable, "-c", RUNNER_CHECK], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


HANDSHAKE_CHECK = """
import sys
import sandbox_image.code.daemon
heavy = ("pydantic", "pydantic_settings", "asyncio", "argparse", "rpc.settings", "sandbox_image.config")
print(sorted(m for m in heavy if m in sys.modules))
"""


def test_the_code_runners_handshake_needs_only_the_standard_library() -> None:
    """The runner's entry takes over and says hello before it loads pydantic, the settings or asyncio: every
    sandbox start waits for that hello while the agent boots on the same cores (issue 12, cold create)."""
    out = subprocess.run([sys.executable, "-c", HANDSHAKE_CHECK], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_playwright_errors_caught_are_the_ones_it_raises() -> None:
    """sandbox_image.browser.errors takes them from the module that defines them (cheap to import)."""
    from playwright import async_api

    from sandbox_image.browser import errors

    assert errors.PlaywrightError is async_api.Error
    assert errors.PlaywrightTimeoutError is async_api.TimeoutError


def test_the_agent_and_the_runner_run_without_openssl(agent_config: SandboxSettings) -> None:
    """`python -m sandbox_image` and `python -m sandbox_image.code.daemon` keep `ssl` (and so libssl) out:
    neither speaks TLS (the agent plain HTTP, the runner the agent's Unix socket). Both started for real,
    the runner admitted by the agent (codeRunnerReady), then their memory maps read."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = agent_config.model_copy(update={"host": "127.0.0.1", "port": port})
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOXWRIGHT_")}
    for name in SandboxSettings.model_fields:
        value = getattr(config, name)
        if value is not None:
            env[SandboxSettings.env_name(name)] = str(value).lower() if isinstance(value, bool) else str(value)
    agent = subprocess.Popen([sys.executable, "-m", "sandbox_image"], env=env, stderr=subprocess.PIPE)
    runner: subprocess.Popen[bytes] | None = None
    try:
        for _ in range(200):
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                if health.status_code == 200:
                    if runner is None:
                        runner = subprocess.Popen(
                            [sys.executable, "-m", "sandbox_image.code.daemon"], env=env, stdin=subprocess.PIPE
                        )
                        assert runner.stdin is not None
                        runner.stdin.write(RUNNER_SECRET.encode() + b"\n")
                        runner.stdin.flush()
                    elif health.json()["codeRunnerReady"]:
                        break
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        else:
            raise AssertionError("the agent did not answer /healthz with its runner connected")
        assert runner is not None
        # The runner loads asyncio, then the settings (pydantic's core) after its hello: wait for the latter.
        for _ in range(600):
            if "_pydantic_core" in Path(f"/proc/{runner.pid}/maps").read_text():
                break
            time.sleep(0.05)
        for proc, marker in ((agent, "_http_parser"), (runner, "_pydantic_core")):
            maps = Path(f"/proc/{proc.pid}/maps").read_text()
            assert marker in maps
            assert "libssl" not in maps and "_ssl." not in maps, proc.args
    finally:
        for proc in (runner, agent):
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)
