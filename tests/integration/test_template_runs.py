"""Issue 9 acceptance: template runs end to end — real sandboxes, the real image, the official MCP client
over streamable HTTP with two owners' tokens, pages served by the test inside alice's sandbox.

One server process (and, for the restart checks, its successors) and few sandboxes: alice's page
sandbox, which most runs use (`sandboxId`), and job sandboxes made by runs without one (those cannot
reach alice's pages — sandboxes cannot reach each other — so they browse their own agent's /healthz).
The phases run in order in one test; each is a function named for what it checks.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import docker
import jsonschema
import pytest

from host import labels
from rpc.agent import AGENT_PORT
from rpc.models.tasks import TERMINAL_STATUSES
from tests.integration.conftest import HttpServer, remove_namespace
from tests.integration.mcp_helpers import BOXWRIGHT, Session, http_session

SITE = (Path(__file__).parent / "assets" / "task_site.py").read_text()
PASSWORD = "correct-horse-Battery-9"
PORT = 8000
BASE = f"http://127.0.0.1:{PORT}"
OWN_AGENT = f"http://127.0.0.1:{AGENT_PORT}/healthz"  # a page a job sandbox can load: its own agent


@pytest.fixture(scope="module")
def env(server_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A namespace and state dir of this module's own (its servers are killed and restarted), and two
    owners' tokens."""
    state = tmp_path_factory.mktemp("runs-state")
    namespace = f"{server_env['BOXWRIGHT_NAMESPACE']}-runs"
    ours = {**server_env, "BOXWRIGHT_NAMESPACE": namespace, "BOXWRIGHT_STATE_DIR": str(state)}
    ours["XDG_CONFIG_HOME"] = str(state / "config")
    yield ours
    remove_namespace(docker.from_env(), namespace)


@pytest.fixture(scope="module")
def owner_tokens(env: dict[str, str]) -> dict[str, str]:
    out = {}
    for owner in ("alice", "bob"):
        proc = subprocess.run([BOXWRIGHT, "token", "add", owner], env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        out[owner] = proc.stdout.strip()
    return out


def containers(client: docker.DockerClient, namespace: str, **label: str) -> list[Any]:
    wanted = [f"{labels.NAMESPACE}={namespace}", *(f"{k}={v}" if v else k for k, v in label.items())]
    return client.containers.list(all=True, ignore_removed=True, filters={"label": wanted})


async def finish(s: Session, run_id: str, limit_s: float = 120) -> dict[str, Any]:
    """Poll get_task_run (every 0.25 s; the seed suggests 2 s) until the run ends."""
    with anyio.fail_after(limit_s):
        while True:
            run = await s.ok("get_task_run", {"runId": run_id})
            if run["status"] in TERMINAL_STATUSES:
                return run
            await anyio.sleep(0.25)


async def until(check: Callable[[], Awaitable[Any]], limit_s: float = 60) -> Any:
    with anyio.fail_after(limit_s):
        while True:
            if value := await check():
                return value
            await anyio.sleep(0.2)


async def download(s: Session, artifact_id: str) -> tuple[bytes, int]:
    data, offset, chunks = b"", 0, 0
    while True:
        chunk = await s.ok("get_artifact", {"artifactId": artifact_id, "offset": offset})
        assert chunk["offset"] == offset and chunk["bytesReturned"] <= 262144
        data += base64.b64decode(chunk["data"])
        offset += chunk["bytesReturned"]
        chunks += 1
        if chunk["complete"]:
            assert len(data) == chunk["size"]
            return data, chunks


class Pages:
    """Alice's page sandbox and the runs that use it."""

    def __init__(self, s: Session, sandbox_id: str) -> None:
        self.s = s
        self.sid = sandbox_id

    async def run(self, template: str, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        args = {"templateId": template, "sandboxId": self.sid, "inputs": inputs}
        return await self.s.ok("run_task_template", {**args, "options": options} if options else args)

    async def batch(self, urls: list[str], **options: Any) -> dict[str, Any]:
        inputs = {"urls": urls, **options.pop("inputs", {})}
        return await self.run("batch_extract_pages", inputs, **options)

    async def release(self, key: str) -> None:
        code = f"import urllib.request; urllib.request.urlopen('{BASE}/release/{key}').read()"
        await self.s.ok("code_run", {"sandboxId": self.sid, "language": "python", "code": code})


async def serve_pages(s: Session) -> Pages:
    sid = (await s.ok("sandbox_create", {"name": "pages"}))["sandboxId"]
    await s.ok("file_write", {"sandboxId": sid, "path": "task_site.py", "content": SITE})
    started = await s.ok(
        "code_run",
        {"sandboxId": sid, "language": "bash", "code": f"python3 task_site.py {PORT}", "background": True},
    )
    out = await s.ok("process_output", {"sandboxId": sid, "processId": started["processId"], "waitMs": 10_000})
    assert "ready" in out["output"], out
    return Pages(s, sid)


# -- the phases ------------------------------------------------------------------------------


async def catalog_and_profile(s: Session) -> None:
    templates = {t["templateId"]: t for t in (await s.ok("list_task_templates"))["templates"]}
    assert set(templates) == {"batch_extract_pages", "multi_tab_compare", "login_keep_session"}
    for t in templates.values():
        assert t["inputsSchema"]["type"] == "object" and t["outputsSchema"]["type"] == "object"
        assert t["trustLevelSupport"] and t["version"] == "1.0.0"
    assert templates["login_keep_session"]["supportsPartialSuccess"] is False
    profile = await s.ok("get_runtime_profile")
    assert profile == {
        "runtimeVersion": "0.2.0",
        "limits": {"maxConcurrentRuns": 5, "maxRunTimeoutMs": 900000, "maxArtifactInlineBytes": 262144},
    }


async def bad_inputs_open_nothing(s: Session, pages: Pages, client: docker.DockerClient, namespace: str) -> None:
    before = {c.id for c in containers(client, namespace)}
    sessions_before = await s.ok("browser_sessions", {"sandboxId": pages.sid})
    good = {"urls": [f"{BASE}/p/1"]}

    def req(inputs: dict[str, Any] = good, **extra: Any) -> dict[str, Any]:
        return {"templateId": "batch_extract_pages", "inputs": inputs, **extra}

    cases = [
        ({**req(), "templateId": "no_such_template"}, "TEMPLATE_NOT_FOUND"),
        (req(templateVersion="9.0.0"), "TEMPLATE_VERSION_UNSUPPORTED"),
        (req({"links": ["x"]}), "INVALID_PARAMETER"),
        (req({"urls": [f"{BASE}/p/{i}" for i in range(1001)]}), "INVALID_PARAMETER"),
        (req({"urls": ["ftp://example.com/x"]}), "INVALID_PARAMETER"),
        (req({**good, "concurrency": 0}), "INVALID_PARAMETER"),
        (req(options={"timeoutMs": 900_001}), "INVALID_PARAMETER"),
    ]
    for args, code in cases:
        for where in ({}, {"sandboxId": pages.sid}):  # with a job sandbox to make, and in alice's sandbox
            answer = await s.error("run_task_template", {**args, **where})
            assert answer.code == code, (args, answer.data)
            assert answer.data["recoverHint"]
    assert {c.id for c in containers(client, namespace)} == before  # no sandbox was made
    assert await s.ok("browser_sessions", {"sandboxId": pages.sid}) == sessions_before  # no session, no tab
    assert (await s.ok("list_task_runs", {}))["total"] == 0  # and no run


async def sync_run_with_progress(s: Session, pages: Pages) -> dict[str, Any]:
    steps: list[tuple[float, float | None]] = []

    async def on_progress(done: float, total: float | None, _message: str | None) -> None:
        steps.append((done, total))

    urls = [f"{BASE}/p/{i}" for i in range(3)]
    inputs = {"urls": urls, "extract": {"markdown": True}}  # the scrape engine's markdown beside the sections
    args = {"templateId": "batch_extract_pages", "sandboxId": pages.sid, "inputs": inputs}
    answer = await s.client.call_tool(
        "run_task_template", {**args, "options": {"mode": "sync"}}, progress_callback=on_progress
    )
    assert not answer.is_error, answer.content
    run = answer.structured_content
    assert run is not None and run["status"] == "succeeded" and run["sandboxId"] == pages.sid
    assert run["result"]["summary"] == {"total": 3, "succeeded": 3, "failed": 0, "skipped": 0}
    assert [i["title"] for i in run["result"]["items"]] == ["Page 0", "Page 1", "Page 2"]
    assert [i["markdown"] for i in run["result"]["items"]] == [f"# Page {i}\n\nBody of page {i}.\n" for i in range(3)]
    assert steps and steps[-1] == (3, 3), steps  # MCP progress notifications, up to done == total
    assert run == await s.ok("get_task_run", {"runId": run["runId"]})  # sync = get_task_run's terminal shape
    result = json.loads((await download(s, run["result"]["artifactId"]))[0])
    assert result["summary"] == run["result"]["summary"]
    return run


async def partial_and_failed(s: Session, pages: Pages) -> None:
    urls = [f"{BASE}/missing/{i}" if i in (1, 4, 7, 10) else f"{BASE}/p/{i}" for i in range(12)]
    started = await pages.batch(urls)  # auto: 12 URLs > 10 → async
    assert set(started) == {"runId", "status", "createdAt"} and started["status"] == "queued"
    run = await finish(s, started["runId"])
    assert run["status"] == "partial_success" and "error" not in run
    assert run["result"]["summary"] == {"total": 12, "succeeded": 8, "failed": 4, "skipped": 0}
    assert [i["url"] for i in run["result"]["items"]] == urls  # input order
    assert [i["success"] for i in run["result"]["items"]] == ["/missing/" not in u for u in urls]
    templates = {t["templateId"]: t for t in (await s.ok("list_task_templates"))["templates"]}
    jsonschema.validate(run["result"], templates["batch_extract_pages"]["outputsSchema"])

    urls = [f"{BASE}/missing/{i}" if i < 7 else f"{BASE}/p/{i}" for i in range(12)]
    run = await finish(s, (await pages.batch(urls, inputs={"concurrency": 5}))["runId"])
    assert run["status"] == "failed" and run["result"]["summary"]["failed"] == 7
    error = run["error"]
    assert error["errorCode"] == "STEP_EXECUTION_FAILED" and error["recoverHint"]
    assert error["details"]["runId"] == run["runId"]
    assert error["details"]["failedStep"] == "navigate" and error["details"]["stepErrorCode"] == "NAVIGATION_FAILED"


async def retry_once(s: Session, pages: Pages) -> None:
    key = secrets.token_hex(4)
    inputs = {"urls": [f"{BASE}/flaky/{key}", f"{BASE}/p/1"], "navigationTimeoutMs": 2000}
    run = await pages.run("batch_extract_pages", inputs)
    assert run["status"] == "succeeded", run
    flaky = run["result"]["items"][0]
    assert flaky["success"] and flaky["attempts"] == 2 and flaky["title"] == "Flaky"


async def cancel_mid_run(s: Session, pages: Pages) -> None:
    started = await pages.batch([f"{BASE}/slow/{i}" for i in range(8)], inputs={"concurrency": 1}, mode="async")

    async def one_done() -> bool:
        return (await s.ok("get_task_run", {"runId": started["runId"]}))["progress"]["doneSteps"] >= 1

    await until(one_done)
    answer = await s.ok("cancel_task_run", {"runId": started["runId"]})
    assert answer == {"cancelRequested": True, "currentStatus": "running"}
    run = await finish(s, started["runId"])
    assert run["status"] == "canceled" and run["error"]["errorCode"] == "RUN_CANCELED"
    statuses = [i["status"] for i in run["result"]["items"]]
    done = statuses.count("succeeded")
    assert 1 <= done <= 3 and statuses == ["succeeded"] * done + ["skipped"] * (8 - done)
    assert run["result"]["summary"] == {"total": 8, "succeeded": done, "failed": 0, "skipped": 8 - done}
    assert await s.ok("cancel_task_run", {"runId": started["runId"]}) == {
        "cancelRequested": False,
        "currentStatus": "canceled",
    }


async def sixth_waits_and_timeout(s: Session, pages: Pages) -> None:
    """Five runs hold the five slots on pages that answer only when released; the first of them has a
    short timeout and ends RUN_TIMEOUT, and only then does the sixth run start."""
    key = secrets.token_hex(4)
    held = []
    for i in range(5):
        options = {"timeoutMs": 5000} if i == 0 else {}
        held.append(await pages.batch([f"{BASE}/hold/{key}{i}"], mode="async", **options))
    sixth = await pages.batch([f"{BASE}/p/6"], mode="async")

    async def all_running() -> bool:
        runs = [await s.ok("get_task_run", {"runId": r["runId"]}) for r in held]
        return all(r["status"] == "running" for r in runs)

    await until(all_running)
    assert (await s.ok("get_task_run", {"runId": sixth["runId"]}))["status"] == "queued"
    queued = await s.ok("list_task_runs", {"status": "queued"})
    assert [r["runId"] for r in queued["runs"]] == [sixth["runId"]]
    timed_out = await finish(s, held[0]["runId"])
    assert timed_out["status"] == "failed" and timed_out["error"]["errorCode"] == "RUN_TIMEOUT"
    assert timed_out["result"]["items"][0]["errorCode"] == "RUN_TIMEOUT"
    assert (await finish(s, sixth["runId"]))["status"] == "succeeded"
    for i in range(1, 5):
        assert (await s.ok("get_task_run", {"runId": held[i]["runId"]}))["status"] == "running"
        await pages.release(f"{key}{i}")
    for run in held[1:]:
        assert (await finish(s, run["runId"]))["status"] == "succeeded"
    await pages.release(f"{key}0")


async def big_artifact(s: Session, pages: Pages) -> str:
    inputs = {"extract": {"pageInfo": False, "maxContentLength": 200_000}}
    run = await pages.batch([f"{BASE}/big/{i}" for i in range(8)], inputs=inputs)
    assert run["status"] == "succeeded" and run["result"]["truncated"] is True  # too big to inline
    ref = next(a for a in run["artifacts"] if a["name"] == "result.json")
    assert ref["size"] > 1024 * 1024 and run["result"]["artifactId"] == ref["artifactId"]
    data, chunks = await download(s, ref["artifactId"])
    assert chunks == -(-ref["size"] // 262144) and len(data) == ref["size"]
    full = json.loads(data)
    assert [i["title"] for i in full["items"]] == [f"Big {i}" for i in range(8)]
    assert full["items"][3]["contentLength"] > 100_000
    read = await s.client.read_resource(f"boxwright://artifacts/{ref['artifactId']}")
    [content] = read.contents
    assert content.mime_type == "application/json" and content.text.encode() == data  # type: ignore[union-attr]
    listed = {str(r.uri) for r in (await s.client.list_resources()).resources}
    assert f"boxwright://artifacts/{ref['artifactId']}" in listed
    return ref["artifactId"]


async def compare(s: Session, pages: Pages) -> None:
    run = await pages.run("multi_tab_compare", {"urls": [f"{BASE}/shop/{k}" for k in "abc"]})
    assert run["status"] == "succeeded"
    comparison = run["result"]["comparison"]
    assert comparison["sameTitle"] is False and "Price" in comparison["sharedHeadings"]
    assert [p["url"] for p in comparison["pages"]] == [f"{BASE}/shop/{k}" for k in "abc"]
    data, _ = await download(s, run["artifacts"][0]["artifactId"])
    assert json.loads(data)["comparison"] == comparison


async def login(s: Session, pages: Pages) -> None:
    inputs = {
        "loginUrl": f"{BASE}/login",
        "fields": [{"label": "Email", "value": "alice@example.com"}, {"selector": "#password", "value": PASSWORD}],
        "success": {"elementPresent": "#hello", "urlPattern": "*/account"},
    }
    run = await pages.run("login_keep_session", inputs)
    assert run["status"] == "succeeded" and run["sandboxId"] == pages.sid and run["sessionId"]
    assert PASSWORD not in json.dumps(run)
    data, _ = await download(s, run["artifacts"][0]["artifactId"])
    assert PASSWORD.encode() not in data
    page = await s.ok("browser_goto", {"sandboxId": pages.sid, "sessionId": run["sessionId"], "url": f"{BASE}/account"})
    assert page["title"] == "Account"  # the kept session is logged in
    fresh = await s.ok("browser_goto", {"sandboxId": pages.sid, "url": f"{BASE}/account"})
    assert fresh["title"] == "Login required"  # … and only that session

    wrong = {**inputs, "verifyTimeoutMs": 1500}
    wrong["fields"] = [inputs["fields"][0], {"selector": "#password", "value": "not-the-Password-1"}]
    failed = await pages.run("login_keep_session", wrong)
    assert failed["status"] == "failed" and failed["error"]["errorCode"] == "STEP_EXECUTION_FAILED"
    assert failed["error"]["details"]["runId"] == failed["runId"] and failed["error"]["details"]["stepErrorCode"]
    assert "not-the-Password-1" not in json.dumps(failed)


async def job_sandbox(s: Session, client: docker.DockerClient, namespace: str) -> dict[str, Any]:
    """Without sandboxId, a run gets a sandbox of its own, removed when it ends."""
    sandboxes_before = (await s.ok("sandbox_list"))["sandboxes"]
    run = await s.ok("run_task_template", {"templateId": "batch_extract_pages", "inputs": {"urls": [OWN_AGENT]}})
    assert run["status"] == "succeeded", run
    assert "sandboxId" not in run and run["result"]["items"][0]["httpStatus"] == 200
    assert not containers(client, namespace, **{labels.JOB: run["runId"]})  # made for the run, and gone
    assert (await s.ok("sandbox_list"))["sandboxes"] == sandboxes_before
    return run


async def bob_sees_nothing(bob: Session, run: dict[str, Any], artifact_id: str, pages: Pages) -> None:
    missing = await bob.error("get_task_run", {"runId": "run_0000000000000000"})
    theirs = await bob.error("get_task_run", {"runId": run["runId"]})
    assert theirs.code == missing.code == "RUN_NOT_FOUND"
    assert theirs.data["error"].replace(run["runId"], "X") == missing.data["error"].replace("run_0000000000000000", "X")
    assert (await bob.error("cancel_task_run", {"runId": run["runId"]})).code == "RUN_NOT_FOUND"
    assert (await bob.ok("list_task_runs", {}))["runs"] == []
    assert (await bob.error("get_artifact", {"artifactId": artifact_id})).code == "ARTIFACT_NOT_FOUND"
    assert not (await bob.client.list_resources()).resources
    with pytest.raises(Exception, match="ARTIFACT_NOT_FOUND"):
        await bob.client.read_resource(f"boxwright://artifacts/{artifact_id}")
    denied = await bob.error("run_task_template", {"templateId": "batch_extract_pages", "sandboxId": pages.sid,
                                                     "inputs": {"urls": [f"{BASE}/p/1"]}})  # fmt: skip
    assert denied.code == "SANDBOX_NOT_FOUND"


async def start_long_job_run(s: Session) -> str:
    inputs = {"urls": [OWN_AGENT] * 60, "concurrency": 1, "extract": {"pageInfo": False}}
    started = await s.ok("run_task_template", {"templateId": "batch_extract_pages", "inputs": inputs})
    assert started["status"] == "queued"  # 60 URLs: auto → async

    async def some_done() -> bool:
        return (await s.ok("get_task_run", {"runId": started["runId"]}))["progress"]["doneSteps"] >= 2

    await until(some_done)
    await anyio.sleep(1.5)  # progress is saved at most once a second
    return started["runId"]


# -- the test --------------------------------------------------------------------------------


async def test_template_runs(
    env: dict[str, str], owner_tokens: dict[str, str], tmp_path: Path, docker_client: docker.DockerClient
) -> None:
    namespace = env["BOXWRIGHT_NAMESPACE"]
    server = HttpServer(env, tmp_path / "server1.log")
    try:
        async with http_session(server.url, owner_tokens["alice"]) as alice:
            await catalog_and_profile(alice)
            pages = await serve_pages(alice)
            await bad_inputs_open_nothing(alice, pages, docker_client, namespace)
            finished = await sync_run_with_progress(alice, pages)
            await partial_and_failed(alice, pages)
            await retry_once(alice, pages)
            await cancel_mid_run(alice, pages)
            await sixth_waits_and_timeout(alice, pages)
            big_id = await big_artifact(alice, pages)
            await compare(alice, pages)
            await login(alice, pages)
            await job_sandbox(alice, docker_client, namespace)
            async with http_session(server.url, owner_tokens["bob"]) as bob:
                await bob_sees_nothing(bob, finished, big_id, pages)
            in_flight = await start_long_job_run(alice)
            assert len(containers(docker_client, namespace, **{labels.JOB: in_flight})) == 1
        server.proc.kill()  # SIGKILL: no cleanup of any kind
        server.proc.wait(10)
    finally:
        server.stop()

    # The next server ends the dead server's run failed, removes its job sandbox, and still has the
    # finished runs' results and artifacts.
    server = HttpServer(env, tmp_path / "server2.log")
    try:
        async with http_session(server.url, owner_tokens["alice"]) as alice:
            dead = await alice.ok("get_task_run", {"runId": in_flight})
            assert dead["status"] == "failed" and dead["error"]["errorCode"] == "EXECUTION_ERROR"
            assert dead["error"]["details"]["reason"] == "server_stopped" and dead["error"]["recoverHint"]
            assert dead["progress"]["doneSteps"] >= 2
            assert not containers(docker_client, namespace, **{labels.JOB: in_flight})
            assert (await alice.ok("get_task_run", {"runId": finished["runId"]})) == finished
            data, _ = await download(alice, big_id)
            assert len(data) > 1024 * 1024
            assert (await alice.ok("list_task_runs", {"limit": 100}))["total"] >= 15
    finally:
        server.stop()

    # Past the retention (1 s here), artifacts answer ARTIFACT_EXPIRED and runs are gone.
    server = HttpServer({**env, "BOXWRIGHT_RUN_RETENTION": "1"}, tmp_path / "server3.log")
    try:
        async with http_session(server.url, owner_tokens["alice"]) as alice:
            assert (await alice.error("get_artifact", {"artifactId": big_id})).code == "ARTIFACT_EXPIRED"
            gone = await alice.error("get_task_run", {"runId": finished["runId"]})
            assert gone.code == "RUN_NOT_FOUND" and gone.data["details"]["reason"] == "expired"
            assert not (await alice.client.list_resources()).resources
        assert "Traceback" not in server.log()
    finally:
        server.stop()
    assert not containers(docker_client, namespace)
    assert os.stat(Path(env["BOXWRIGHT_STATE_DIR"]) / "runs" / namespace).st_mode & 0o777 == 0o700
