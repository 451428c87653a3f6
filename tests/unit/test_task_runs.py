"""Template runs in the agent, end to end through its dispatcher (task.* methods), on the host's Chromium
against pages served on 127.0.0.1 by the test."""

from __future__ import annotations

import base64
import json
import logging
import socket
from collections.abc import AsyncIterator
from typing import Any

import jsonschema
import pytest
from aiohttp import web

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.tasks import TERMINAL_STATUSES
from sandbox_image import browser as browser_feature
from sandbox_image import tasks as tasks_feature
from sandbox_image.config import SandboxSettings
from sandbox_image.dispatcher import Dispatcher
from tests.unit.browser_harness import CHROMIUM, BrowserDriver
from tests.unit.task_site import PASSWORD, TaskSite, serve

pytestmark = pytest.mark.chromium  # launches the host's Chromium


@pytest.fixture(scope="module", name="site")
async def site_fixture() -> AsyncIterator[TaskSite]:
    async for site in serve():
        yield site


@pytest.fixture(scope="module", name="agent")
async def agent_fixture() -> AsyncIterator[BrowserDriver]:
    """The agent's browser and task features on one dispatcher, as agent.py assembles them."""
    dispatcher = Dispatcher("agent")
    service = browser_feature.register(dispatcher, SandboxSettings(chromium=CHROMIUM))
    task_service = tasks_feature.register(dispatcher, service)
    yield BrowserDriver(service, dispatcher)
    await task_service.on_cleanup(web.Application())
    await service.on_cleanup(web.Application())


def refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def start(agent: BrowserDriver, template: str, inputs: dict[str, Any], **params: Any) -> str:
    started = await agent.call("task.start", templateId=template, inputs=inputs, trustLevel="remote", **params)
    assert started["status"] in ("queued", "running") and started["templateId"] == template
    return started["runId"]


async def finish(agent: BrowserDriver, run_id: str, **params: Any) -> dict[str, Any]:
    """Long-poll task.status until the run ends."""
    status = await agent.call("task.status", runId=run_id)
    for _ in range(120):
        if status["status"] in TERMINAL_STATUSES:
            break
        status = await agent.call("task.status", runId=run_id, waitMs=5000, afterVersion=status["version"], **params)
    assert status["status"] in TERMINAL_STATUSES
    return await agent.call("task.status", runId=run_id, includeSteps=True)


async def read_artifact(agent: BrowserDriver, run_id: str, artifact_id: str, limit: int | None = None) -> bytes:
    data, offset, chunks = b"", 0, 0
    while True:
        extra = {"limit": limit} if limit else {}
        chunk = await agent.call("task.artifact_read", runId=run_id, artifactId=artifact_id, offset=offset, **extra)
        assert chunk["offset"] == offset and chunk["artifactId"] == artifact_id
        data += base64.b64decode(chunk["data"])
        offset += chunk["bytesReturned"]
        chunks += 1
        if chunk["complete"]:
            assert len(data) == chunk["size"]
            return data
        assert chunks < 1000


async def conforms(agent: BrowserDriver, status: dict[str, Any]) -> None:
    """The run's result validates against its template's published outputsSchema."""
    templates = {t["templateId"]: t for t in (await agent.call("task.templates"))["templates"]}
    jsonschema.validate(status["result"], templates[status["templateId"]]["outputsSchema"])


async def session_ids(agent: BrowserDriver) -> set[str]:
    return {s["sessionId"] for s in (await agent.call("browser.sessions"))["sessions"]}


async def test_partial_success_keeps_input_order(agent: BrowserDriver, site: TaskSite) -> None:
    refused = f"http://127.0.0.1:{refused_port()}/"
    bad = {2: site.url("/missing/2"), 5: refused, 8: site.url("/missing/8"), 11: refused}
    urls = [bad.get(i, site.url(f"/p/{i}")) for i in range(12)]
    before = await session_ids(agent)
    run_id = await start(agent, "batch_extract_pages", {"urls": urls})
    status = await finish(agent, run_id)

    assert status["status"] == "partial_success" and "error" not in status
    await conforms(agent, status)
    assert status["result"]["summary"] == {"total": 12, "succeeded": 8, "failed": 4, "skipped": 0}
    assert status["progress"] == {"totalSteps": 12, "doneSteps": 12}
    items = status["result"]["items"]
    assert [i["url"] for i in items] == urls
    for index, item in enumerate(items):
        if index in bad:
            assert not item["success"] and item["status"] == "failed"
            assert item["errorCode"] == "NAVIGATION_FAILED" and item["failedStep"] == "navigate"
            assert item["attempts"] == 1  # not a retryable failure
        else:
            assert item["success"] and item["title"] == f"Page {index}" and item["pageType"]
            assert item["content"][0]["heading"] == f"Page {index}" and item["elementCount"] >= 0
    # The run made its own session and closed it; all its tabs went with it.
    assert await session_ids(agent) == before
    # Artifacts: the complete result as JSON (same as the inline one) and a CSV of the items.
    kinds = {a["name"]: a for a in status["artifacts"]}
    assert set(kinds) == {"result.json", "items.csv"}
    full = json.loads(await read_artifact(agent, run_id, kinds["result.json"]["artifactId"]))
    assert full["items"] == [{k: v for k, v in i.items() if v is not None} for i in items]
    csv_rows = (await read_artifact(agent, run_id, kinds["items.csv"]["artifactId"])).decode().splitlines()
    assert len(csv_rows) == 13 and csv_rows[0].startswith("url,success,status")
    assert status["result"]["artifactId"] == kinds["result.json"]["artifactId"] and not status["result"]["truncated"]


async def test_batch_markdown_by_the_scrape_engine(agent: BrowserDriver, site: TaskSite) -> None:
    urls = [site.url("/shop/a"), site.url("/missing/1"), site.url("/shop/b")]
    extract = {"markdown": True, "pageInfo": False, "content": False}
    status = await finish(agent, await start(agent, "batch_extract_pages", {"urls": urls, "extract": extract}))
    assert status["status"] == "partial_success"
    await conforms(agent, status)
    acme, missing, bolt = status["result"]["items"]
    assert acme["markdown"].startswith("# Acme Widget\n\n## Price\n\nOnly $19.99 today")
    assert "## Reviews" in acme["markdown"] and acme["markdownLength"] == len(acme["markdown"])
    assert not acme["markdownTruncated"] and "content" not in acme and "pageType" not in acme
    assert bolt["markdown"].startswith("# Bolt Widget") and bolt["title"] == "Bolt Store"
    assert not missing["success"] and missing.get("markdown") is None
    capped = {**extract, "maxContentLength": 100}
    status = await finish(agent, await start(agent, "batch_extract_pages", {"urls": urls[:1], "extract": capped}))
    [cut] = status["result"]["items"]
    assert cut["markdownTruncated"] and len(cut["markdown"]) <= 100 and cut["markdownLength"] == acme["markdownLength"]
    assert acme["markdown"].startswith(cut["markdown"])


async def test_too_many_failures_fail_the_run(agent: BrowserDriver, site: TaskSite) -> None:
    urls = [site.url(f"/missing/{i}") if i % 12 < 7 else site.url(f"/p/{i}") for i in range(12)]
    status = await finish(agent, await start(agent, "batch_extract_pages", {"urls": urls, "concurrency": 5}))
    assert status["status"] == "failed"
    assert status["result"]["summary"] == {"total": 12, "succeeded": 5, "failed": 7, "skipped": 0}
    error = status["error"]
    assert error["errorCode"] == "STEP_EXECUTION_FAILED" and error["recoverHint"]
    assert error["details"]["runId"] == status["runId"]
    assert error["details"]["failedStep"] == "navigate" and error["details"]["stepErrorCode"] == "NAVIGATION_FAILED"


async def test_navigation_timeout_is_retried_once(agent: BrowserDriver, site: TaskSite) -> None:
    urls = [site.url("/flaky/once"), site.url("/p/1")]
    inputs = {"urls": urls, "navigationTimeoutMs": 1000, "extract": {"pageInfo": False}}
    status = await finish(agent, await start(agent, "batch_extract_pages", inputs))
    assert status["status"] == "succeeded"
    flaky = status["result"]["items"][0]
    assert flaky["success"] and flaky["attempts"] == 2 and flaky["title"] == "Flaky"
    assert "pageType" not in flaky and flaky["content"][0]["heading"] == "Loaded at last"
    assert site.hits["/flaky/once"] == 2


async def test_the_window_really_runs_tabs_in_parallel(agent: BrowserDriver, site: TaskSite) -> None:
    site.max_in_flight = 0
    urls = [site.url(f"/slow/w{i}") for i in range(7)]
    status = await finish(agent, await start(agent, "batch_extract_pages", {"urls": urls, "concurrency": 3}))
    assert status["status"] == "succeeded"
    assert site.max_in_flight == 3  # observed at the server: three loads overlapped, never four


async def test_cancel_finishes_the_current_step_and_skips_the_rest(agent: BrowserDriver, site: TaskSite) -> None:
    urls = [site.url(f"/slow/c{i}") for i in range(8)]
    run_id = await start(agent, "batch_extract_pages", {"urls": urls, "concurrency": 1})
    status = await agent.call("task.status", runId=run_id)
    while status["progress"]["doneSteps"] < 1:  # long-poll: answers when progress moves
        previous = status["version"]
        status = await agent.call("task.status", runId=run_id, waitMs=10_000, afterVersion=previous, partial=True)
        assert status["version"] != previous
    assert status["result"]["summary"]["succeeded"] >= 1  # partial results while running
    cancel = await agent.call("task.cancel", runId=run_id)
    assert cancel == {"cancelRequested": True, "currentStatus": "running"}

    status = await finish(agent, run_id)
    assert status["status"] == "canceled" and status["cancelRequested"]
    assert status["error"]["errorCode"] == "RUN_CANCELED"
    steps = [s["status"] for s in status["steps"]]
    done = steps.count("succeeded")
    assert 1 <= done <= 3 and steps == ["succeeded"] * done + ["skipped"] * (8 - done)
    summary = status["result"]["summary"]
    assert summary == {"total": 8, "succeeded": done, "failed": 0, "skipped": 8 - done}
    assert [i["status"] for i in status["result"]["items"]] == steps
    assert status["progress"] == {"totalSteps": 8, "doneSteps": done}
    again = await agent.call("task.cancel", runId=run_id)  # terminal states are irreversible
    assert again == {"cancelRequested": False, "currentStatus": "canceled"}


async def test_run_deadline(agent: BrowserDriver, site: TaskSite) -> None:
    # Three pages load, one never does: finished items are kept, the unfinished one fails with RUN_TIMEOUT.
    urls = [site.url("/p/1"), site.url("/never/1"), site.url("/p/2"), site.url("/p/3")]
    inputs = {"urls": urls, "concurrency": 4, "extract": {"pageInfo": False}}
    # 6 s: three local pages must load in time even on a loaded 2-core CI machine; the fourth never does.
    status = await finish(agent, await start(agent, "batch_extract_pages", inputs, runTimeoutMs=6000))
    assert status["status"] == "partial_success" and status["timeoutMs"] == 6000
    assert [i["success"] for i in status["result"]["items"]] == [True, False, True, True]
    assert status["result"]["items"][1]["errorCode"] == "RUN_TIMEOUT"
    assert status["result"]["items"][1]["attempts"] == 1  # no retry past the deadline

    # Too few finish in time: the run fails with RUN_TIMEOUT; the pending URL never started.
    urls = [site.url("/never/2"), site.url("/never/3"), site.url("/p/4")]
    inputs = {"urls": urls, "concurrency": 2, "extract": {"pageInfo": False}}
    status = await finish(agent, await start(agent, "batch_extract_pages", inputs, runTimeoutMs=1500))
    assert status["status"] == "failed"
    assert status["error"]["errorCode"] == "RUN_TIMEOUT" and status["error"]["details"]["timeoutMs"] == 1500
    assert [i["errorCode"] for i in status["result"]["items"]] == ["RUN_TIMEOUT"] * 3
    assert [s["attempts"] for s in status["steps"]] == [1, 1, 0]


async def test_bad_requests_open_nothing(agent: BrowserDriver, site: TaskSite) -> None:
    before = await session_ids(agent)
    url = site.url("/p/1")
    cases = [
        ({"templateId": "nope", "inputs": {"urls": [url]}}, ErrorCode.TEMPLATE_NOT_FOUND),
        ({"templateId": "batch_extract_pages", "templateVersion": "9.0.0", "inputs": {"urls": [url]}},
         ErrorCode.TEMPLATE_VERSION_UNSUPPORTED),
        ({"templateId": "batch_extract_pages", "inputs": {"urls": [url] * 1001}}, ErrorCode.INVALID_PARAMETER),
        ({"templateId": "batch_extract_pages", "inputs": {"urls": ["file:///etc/passwd"]}},
         ErrorCode.INVALID_PARAMETER),
        ({"templateId": "batch_extract_pages", "inputs": {"urls": [url], "concurrency": 0}},
         ErrorCode.INVALID_PARAMETER),
        ({"templateId": "batch_extract_pages", "inputs": {"urls": [url]}, "runTimeoutMs": 900_001},
         ErrorCode.INVALID_PARAMETER),
        ({"templateId": "batch_extract_pages", "inputs": {"urls": [url]}, "sessionId": "nope"},
         ErrorCode.SESSION_NOT_FOUND),
        ({"templateId": "batch_extract_pages", "inputs": {"urls": [url]}, "runId": "bad id"},
         ErrorCode.INVALID_PARAMETER),
    ]  # fmt: skip
    for params, code in cases:
        refused = await agent.error("task.start", **params)
        assert refused.code is code, params
        assert refused.hint
    assert await session_ids(agent) == before
    assert (await agent.error("task.status", runId="run_unknown")).code is ErrorCode.RUN_NOT_FOUND
    assert (await agent.error("task.cancel", runId="run_unknown")).code is ErrorCode.RUN_NOT_FOUND
    missing = await agent.error("task.artifact_read", runId="run_unknown", artifactId="art_x")
    assert missing.code is ErrorCode.RUN_NOT_FOUND
    templates = (await agent.call("task.templates"))["templates"]
    assert [t["templateId"] for t in templates] == ["batch_extract_pages", "multi_tab_compare", "login_keep_session"]


async def test_multi_tab_compare(agent: BrowserDriver, site: TaskSite) -> None:
    urls = [site.url("/shop/a"), site.url("/shop/b"), site.url("/shop/c")]
    run_id = await start(agent, "multi_tab_compare", {"urls": urls}, runId="run_compare1")
    assert run_id == "run_compare1"
    status = await finish(agent, run_id)
    assert status["status"] == "succeeded"
    assert [s["name"] for s in status["steps"]][-1] == "compare" and status["progress"]["doneSteps"] == 4
    await conforms(agent, status)
    result = status["result"]
    assert result["summary"] == {"total": 3, "succeeded": 3, "failed": 0, "skipped": 0}
    assert [i["title"] for i in result["items"]] == ["Acme Store", "Bolt Store", "Acme Store"]
    c = result["comparison"]
    assert not c["sameTitle"]
    assert c["sharedHeadings"] == ["Price", "Shipping"]
    assert [d["values"] for d in c["differingHeadings"]] == [
        ["Acme Widget", "Reviews"],
        ["Bolt Widget"],
        ["Cog Widget", "Warranty"],
    ]
    assert [p["prices"] for p in c["pages"]] == [["$19.99"], ["$24.50"], ["$19.99", "50 EUR"]]
    assert c["sharedPrices"] == [] and c["differingPrices"][2]["values"] == ["$19.99", "50 EUR"]
    assert "2" in c["sharedNumbers"] or "3" in c["pages"][0]["numbers"]
    words = [p["wordCount"] for p in c["pages"]]
    assert (c["wordCountMin"], c["wordCountMax"]) == (min(words), max(words)) and min(words) > 5
    full = json.loads(await read_artifact(agent, run_id, status["artifacts"][0]["artifactId"], limit=100))
    assert full["comparison"] == c  # small chunks reassemble to the same result


async def test_login_keeps_the_session(agent: BrowserDriver, site: TaskSite) -> None:
    inputs = {
        "loginUrl": site.url("/login"),
        "fields": [{"label": "Email", "value": "alice@example.com"}, {"selector": "#password", "value": PASSWORD}],
        "submit": {"text": "Sign in"},
        "success": {"urlPattern": "*/account", "textPresent": "Welcome back", "elementPresent": "#hello"},
    }
    run_id = await start(agent, "login_keep_session", inputs)
    status = await finish(agent, run_id)
    assert status["status"] == "succeeded", status["error"]
    await conforms(agent, status)
    result = status["result"]
    assert result["loggedIn"] and result["finalUrl"] == site.url("/account")
    assert [i["name"] for i in result["items"]] == ["open", "fill label 'Email'", "fill #password", "submit", "verify"]
    session = result["sessionId"]
    assert session == status["sessionId"] and session in await session_ids(agent)
    # The kept session is logged in for later browser calls.
    later = await agent.call("browser.goto", sessionId=session, url=site.url("/account"))
    assert later["title"] == "Account"
    assert PASSWORD not in json.dumps(status)
    await agent.call("browser.sessions", action="close", sessionId=session)


async def test_wrong_password_fails_atomically_and_never_shows_it(
    agent: BrowserDriver, site: TaskSite, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = "Wrong-Secret-Pa55"
    inputs = {
        "loginUrl": site.url("/login"),
        "fields": [
            {"selector": "input[name=email]", "value": "alice@example.com"},
            {"label": "Password", "value": wrong, "secret": True},
        ],
        "success": {"textPresent": "Welcome back"},
        "verifyTimeoutMs": 1000,
        "actionTimeoutMs": 5000,  # the fills must not fail on a loaded machine: the verify step is what fails
    }
    before = await session_ids(agent)
    caplog.set_level(logging.DEBUG)
    status = await finish(agent, await start(agent, "login_keep_session", inputs))
    assert status["status"] == "failed"  # never partial_success
    error = status["error"]
    assert error["errorCode"] == "STEP_EXECUTION_FAILED" and error["details"]["failedStep"] == "verify"
    assert error["details"]["runId"] == status["runId"] and error["details"]["stepErrorCode"] == "ELEMENT_NOT_FOUND"
    assert [s["status"] for s in status["steps"]] == ["succeeded"] * 4 + ["failed"]
    assert not status["result"]["loggedIn"] and "sessionId" not in status["result"]
    assert await session_ids(agent) == before  # the run's own session is gone
    # A failure in a fill step: the steps after it are skipped, not run.
    inputs["fields"][1] = {"selector": "#nope", "value": wrong}
    inputs["submit"] = {"selector": "#go"}
    inputs["actionTimeoutMs"] = 1000
    status2 = await finish(agent, await start(agent, "login_keep_session", inputs, runTimeoutMs=30_000))
    assert [s["status"] for s in status2["steps"]] == ["succeeded", "succeeded", "failed", "skipped", "skipped"]
    assert status2["status"] == "failed" and status2["error"]["details"]["stepErrorCode"] == "ELEMENT_NOT_FOUND"
    artifacts = [await read_artifact(agent, s["runId"], a["artifactId"]) for s in (status, status2)
                 for a in s["artifacts"]]  # fmt: skip
    for text in (json.dumps(status), json.dumps(status2), caplog.text, *(a.decode() for a in artifacts)):
        assert wrong not in text


@pytest.mark.parametrize(
    ("where", "bad", "field"),
    [
        ("fields", "input[name=password", "fields.1.selector"),
        ("submit", "button:", "submit.selector"),
        ("success", "#hello >> text=x", "success.elementPresent"),
    ],
)
async def test_a_selector_the_browser_cannot_parse_fails_the_run_before_the_site_is_visited(
    agent: BrowserDriver, site: TaskSite, where: str, bad: str, field: str
) -> None:
    inputs: dict[str, Any] = {
        "loginUrl": site.url("/login"),
        "fields": [{"label": "Email", "value": "alice@example.com"}, {"selector": "#password", "value": PASSWORD}],
        "submit": {"selector": "#go"},
        "success": {"elementPresent": "#hello"},
    }
    if where == "fields":
        inputs["fields"][1]["selector"] = bad
    else:
        inputs[where] = {"selector": bad} if where == "submit" else {"elementPresent": bad}
    before, visits = await session_ids(agent), site.hits["/login"]
    status = await finish(agent, await start(agent, "login_keep_session", inputs))
    assert status["status"] == "failed"
    error = status["error"]
    assert error["errorCode"] == "STEP_EXECUTION_FAILED", error
    details = error["details"]
    assert details["failedStep"] == "check_selectors" and details["stepErrorCode"] == "INVALID_PARAMETER"
    assert [s["status"] for s in status["steps"]] == ["failed", "skipped", "skipped", "skipped", "skipped"]
    assert field in error["error"] and bad[:10] in error["error"] and "CSS selector" in error["recoverHint"]
    assert site.hits["/login"] == visits  # the login page was never loaded
    assert await session_ids(agent) == before  # nor anything left open
    assert PASSWORD not in json.dumps(status)


async def test_field_values_never_come_back_in_the_address_or_title(agent: BrowserDriver, site: TaskSite) -> None:
    """A site that sends its login form in the address (GET) and greets by name: the run's finalUrl and
    title carry the values, as typed and as the form encoded them — masked, like its errors."""
    secret = "Open Sesame/42"
    inputs = {
        "loginUrl": site.url("/get-login"),
        "fields": [{"label": "User", "value": "alice.example"}, {"label": "Password", "value": secret}],
        "success": {"textPresent": "Welcome back"},
    }
    status = await finish(agent, await start(agent, "login_keep_session", inputs))
    assert status["status"] == "succeeded", status["error"]
    result = status["result"]
    assert result["finalUrl"].startswith(site.url("/welcome?user=")) and result["title"].startswith("Welcome ")
    artifacts = [(await read_artifact(agent, status["runId"], a["artifactId"])).decode() for a in status["artifacts"]]
    for text in (json.dumps(status), *artifacts):
        for value in (secret, "Open+Sesame%2F42", "Open%20Sesame%2F42", "alice.example"):
            assert value not in text, value
    await agent.call("browser.sessions", action="close", sessionId=result["sessionId"])


async def test_trust_level_and_existing_sessions(agent: BrowserDriver, site: TaskSite) -> None:
    """A run in a named session leaves it open; a template's trust levels are checked on the agent too."""
    await agent.call("browser.sessions", action="create", sessionId="mine")
    try:
        run_id = await start(agent, "batch_extract_pages", {"urls": [site.url("/p/7")]}, sessionId="mine")
        status = await finish(agent, run_id)
        assert status["status"] == "succeeded" and status["sessionId"] == "mine"
        sessions = (await agent.call("browser.sessions"))["sessions"]
        assert {
            "sessionId": "mine",
            "tabCount": 0,
            "isDefault": False,
            "profileId": None,
            "mobile": False,
            "locale": None,
            "timezone": None,
            "geolocation": None,
            "skipTlsVerification": False,
            "userAgent": None,
            "httpAuthOrigin": None,
            "proxyServer": None,
            "headersOrigin": None,
            "headerNames": None,
            "blockAds": False,
            "blockResources": None,
            "blockedRequests": 0,
            "blockCookieBanners": False,
            "cookieBanners": [],
        } in sessions
        listed = (await agent.call("task.list", status="succeeded"))["runs"]
        assert run_id in [r["runId"] for r in listed]
    finally:
        await agent.call("browser.sessions", action="close", sessionId="mine")
    with pytest.raises(BoxwrightError):
        await agent.call("task.start", templateId="batch_extract_pages", inputs={}, trustLevel="admin")
