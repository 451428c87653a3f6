"""The browser inside the agent's HTTP app: served over /rpc with the bearer token, launched lazily or
at start (the browser_prelaunch setting), and gone with the app."""

from __future__ import annotations

import asyncio

import pytest

from sandbox_image.agent import create_agent_app
from sandbox_image.config import SandboxSettings
from tests.unit.browser_harness import our_browser_pids
from tests.unit.conftest import ClientFactory

pytestmark = pytest.mark.chromium  # launches the host's Chromium

PAGE = "data:text/html,<title>Hello</title><button>Press me</button>"


async def rpc(client: object, headers: dict[str, str], method: str, **params: object) -> dict[str, object]:
    response = await client.post(  # type: ignore[attr-defined]
        "/rpc", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, headers=headers
    )
    body = await response.json()
    assert "result" in body, body
    return body["result"]


@pytest.mark.parametrize("prelaunch", ["0", "1"])
async def test_agent_serves_the_browser_and_closes_it(
    agent_config: SandboxSettings,
    make_client: ClientFactory,
    auth_headers: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    prelaunch: str,
) -> None:

    monkeypatch.setenv("BOXWRIGHT_BROWSER_PRELAUNCH", prelaunch)
    settings = SandboxSettings(**agent_config.model_dump(exclude={"browser_prelaunch"}))  # that one from the env
    client = await make_client(create_agent_app(settings))
    if prelaunch == "1":
        for _ in range(200):
            if our_browser_pids():
                break
            await asyncio.sleep(0.05)
        assert our_browser_pids(), "prelaunch starts Chromium with the agent"
    else:
        assert not our_browser_pids(), "lazy: no Chromium before the first browser call"
    goto = await rpc(client, auth_headers, "browser.goto", url=PAGE)
    assert goto["title"] == "Hello"
    snap = await rpc(client, auth_headers, "browser.snapshot")
    assert snap["elements"] == '[ref_1] button "Press me"'
    await client.close()
    assert not our_browser_pids(), "the agent's cleanup closes Chromium"
