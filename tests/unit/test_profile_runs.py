"""Template runs on login profiles, through the MCP tools over a FakeBackend (the real agent and the
host's Chromium): login_keep_session's publishToProfile saves a scripted login, and a run with
profileId works in a session opened from it — then saves back and closes it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from host.services import Services
from tests.unit.task_site import PASSWORD, TaskSite, serve
from tests.unit.test_template_runs_host import client

pytestmark = pytest.mark.chromium


@pytest.fixture(name="site")
async def site_fixture() -> AsyncIterator[TaskSite]:
    async for site in serve():
        yield site


async def test_a_scripted_login_is_saved_and_runs_reuse_it(services: Services, site: TaskSite) -> None:
    store = services.profiles.store
    login = {
        "loginUrl": site.url("/login"),
        "fields": [{"label": "Email", "value": "alice@example.com"}, {"selector": "#password", "value": PASSWORD}],
        "success": {"elementPresent": "#hello"},
        "publishToProfile": "shop",
    }
    async with services.running(), client(services) as mcp:
        run = await mcp.ok("run_task_template", {"templateId": "login_keep_session", "inputs": login})
        assert run["status"] == "succeeded" and run["profileId"] == "shop" and run["profileVersion"] == 1
        assert [c["name"] for c in store.read("local", "shop").state["cookies"]] == ["sid"]

        extract = {"urls": [site.url("/account")], "extract": {"content": False}}
        used = await mcp.ok(
            "run_task_template", {"templateId": "batch_extract_pages", "inputs": extract, "profileId": "shop"}
        )
        assert used["status"] == "succeeded" and used["result"]["items"][0]["title"] == "Account"
        assert used["profileId"] == "shop" and used["profileVersion"] == 1  # nothing new to save
        assert "sessionId" not in used  # the profile's session was the host's, and is closed
        fresh = await mcp.ok("run_task_template", {"templateId": "batch_extract_pages", "inputs": extract})
        assert fresh["result"]["items"][0]["title"] == "Login required"  # without the profile: not logged in
        assert store.read("local", "shop").version == 1
        assert services.profiles.publisher.bindings == {}

        both = await mcp.error(
            "run_task_template",
            {"templateId": "batch_extract_pages", "inputs": extract, "profileId": "shop", "sessionId": "s"},
        )
        assert both.code == "INVALID_PARAMETER"
        bad = await mcp.error(
            "run_task_template", {"templateId": "batch_extract_pages", "inputs": extract, "profileId": "../shop"}
        )
        assert bad.code == "INVALID_PARAMETER" and "profileId" in bad.data["details"]["errors"][0]["field"]
        wrong = await mcp.error(
            "run_task_template",
            {"templateId": "login_keep_session", "inputs": {**login, "publishToProfile": "a/b"}},
        )
        assert wrong.code == "INVALID_PARAMETER"
