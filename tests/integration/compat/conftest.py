"""Client compatibility: Boxwright as MCP clients nobody here wrote see it (TypeScript SDK v1 and v2,
MCP Inspector CLI), installed from npm by .ci/run (see npm_clients.py).

Lean on purpose: one scripted session per client and transport runs a whole plan against one
sandbox (the HTTP sessions share the integration suite's HTTP server); the tests then assert on
the recorded answers.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from typing import Any

import pytest

from tests.integration.compat.npm_clients import INSTALL_HINT, NpmClients, locate
from tests.integration.mcp_helpers import BOXWRIGHT

CLIENT_TIMEOUT_S = 300
CONNECT_TIMEOUT_MS = (
    "120000"  # the Inspector gives a server 15 s to initialize by default: not enough on a busy CI machine
)


@pytest.fixture(scope="session")
def npm_clients() -> NpmClients:
    clients = locate()
    if clients is None:
        message = f"the MCP clients from npm are not installed: {INSTALL_HINT}"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI=true but {message}; .ci/run must install them")
        pytest.skip(message)
    return clients


@dataclass
class Step:
    """One recorded answer of the scripted TypeScript client."""

    ok: bool
    result: dict[str, Any]
    error: dict[str, Any]

    @property
    def text(self) -> str:
        content = self.result.get("content") or [{}]
        return content[0].get("text", "")

    @property
    def is_error(self) -> bool:
        return bool(self.result.get("isError"))

    @property
    def body(self) -> dict[str, Any]:
        """The uniform error body, read the way a client without structuredContent reads it."""
        return json.loads(self.text.rsplit("\n", 1)[-1])

    @property
    def data(self) -> dict[str, Any]:
        return self.result.get("structuredContent") or {}


@dataclass
class Recording:
    steps: dict[str, Step]
    closed: bool
    stderr: str

    def __getitem__(self, key: str) -> Step:
        return self.steps[key]


def run_ts_client(
    clients: NpmClients,
    sdk: str,
    target: list[str],
    plan: list[tuple[str, dict[str, Any]]],
    env: dict[str, str],
) -> Recording:
    """Run the scripted client (`target`: ['--http', URL, ...] or ['--stdio', CMD, ...]) through `plan`."""
    proc = subprocess.run(
        [str(clients.node), str(clients.script), "--sdk", sdk, *target],
        input=json.dumps([step for _, step in plan]),
        capture_output=True,
        text=True,
        env=clients.env(env),
        timeout=CLIENT_TIMEOUT_S,
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and lines, f"client failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    answers, tail = lines[:-1], lines[-1]
    assert len(answers) == len(plan), proc.stderr[-4000:]
    steps = {
        key: Step(a["ok"], a.get("result") or {}, a.get("error") or {})
        for (key, _), a in zip(plan, answers, strict=True)
    }
    return Recording(steps, bool(tail.get("closed")), proc.stderr)


@dataclass
class InspectorAnswer:
    returncode: int
    out: dict[str, Any]
    stderr: str

    @property
    def result(self) -> dict[str, Any]:
        return self.out.get("result") or {}

    @property
    def text(self) -> str:
        return (self.result.get("content") or [{}])[0].get("text", "")


def run_inspector(clients: NpmClients, target: list[str], *args: str, env: dict[str, str]) -> InspectorAnswer:
    """One MCP Inspector CLI call (`--format json`): its result or its error envelope, parsed."""
    proc = subprocess.run(
        [
            str(clients.node),
            str(clients.inspector),
            "--cli",
            "--connect-timeout",
            CONNECT_TIMEOUT_MS,
            *target,
            "--format",
            "json",
            *args,
        ],
        capture_output=True,
        text=True,
        env=clients.env(env),
        timeout=CLIENT_TIMEOUT_S,
    )
    # The result goes to stdout; a failure is an {"error": ...} envelope on stderr's last JSON line.
    candidates = [proc.stdout.strip(), *reversed(proc.stderr.strip().splitlines())]
    out: dict[str, Any] = {}
    for raw in candidates:
        if raw.startswith("{"):
            try:
                out = json.loads(raw)
                break
            except json.JSONDecodeError:
                continue
    return InspectorAnswer(proc.returncode, out, proc.stderr)


def inspector_stdio_target(env: dict[str, str]) -> list[str]:
    """The Inspector starts the server itself and passes on only the variables given with -e."""
    ours = {k: v for k, v in env.items() if k.startswith(("BOXWRIGHT_", "XDG_"))}
    return [*(arg for k, v in ours.items() for arg in ("-e", f"{k}={v}")), BOXWRIGHT, "serve"]
