"""Template runs through the host: the seven MCP tools, RunManager, job sandboxes, the store and the
artifact resources, in-process (the SDK's Client against build_server) over a FakeBackend — so each
sandbox is the real agent with the host's Chromium, browsing pages this test serves on 127.0.0.1."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client

from host import labels
from host.config import Settings
from host.mcp import resources
from host.mcp.caller import CallerResolver
from host.mcp.resources import artifact_uri
from host.mcp.server import build_server
from host.runs import driver
from host.runs.manager import SYNC_DEFAULT_TIMEOUT_MS
from host.runs.records import RunRecord, now_ms
from host.runs.store import RunStore
from host.sandboxes.manager import SandboxManager
from host.sandboxes.models import Caller
from host.services import Services
from host.testing.fake_backend import FakeBackend
from rpc import methods
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError
from rpc.models.tasks import MAX_ARTIFACT_INLINE_BYTES, TERMINAL_STATUSES, RunTaskTemplateRequest
from rpc.templates import CATALOG
from tests.integration.mcp_helpers import Session
from tests.unit.task_site import PASSWORD, TaskSite, serve
from tests.unit.test_run_store import record
from tests.unit.test_task_contract import EXAMPLES

pytestmark = pytest.mark.chromium

ALICE = CallerResolver("stdio")  # owner "local", trust local
Resolver = Callable[[Any], Caller]


def as_owner(owner: str, trust: str = "remote") -> Resolver:
    return lambda _ctx: Caller(owner=owner, session="s", trust=trust)  # type: ignore[arg-type]


@pytest.fixture(name="site")
async def site_fixture() -> AsyncIterator[TaskSite]:
    async for site in serve():
        yield site


@asynccontextmanager
async def client(services: Services, resolver: Resolver = ALICE) -> AsyncIterator[Session]:
    async with Client(build_server(services, resolver)) as c:
        yield Session(c)


async def finish(mcp: Session, run_id: str) -> dict[str, Any]:
    """Poll get_task_run until the run ends."""
    with anyio.fail_after(60):
        while True:
            run = await mcp.ok("get_task_run", {"runId": run_id})
            if run["status"] in TERMINAL_STATUSES:
                return run
            await anyio.sleep(0.1)


async def until(check: Callable[[], Any], limit_s: float = 30) -> Any:
    """Poll `check` (another process's state: no event to wait on) until it holds."""
    with anyio.fail_after(limit_s):
        while True:
            if value := await check():
                return value
            await anyio.sleep(0.05)


async def download(mcp: Session, artifact_id: str, limit: int | None = None) -> bytes:
    data, offset = b"", 0
    while True:
        args: dict[str, Any] = {"artifactId": artifact_id, "offset": offset}
        if limit:
            args["limit"] = limit
        chunk = await mcp.ok("get_artifact", args)
        assert chunk["offset"] == offset and chunk["bytesReturned"] <= (limit or MAX_ARTIFACT_INLINE_BYTES)
        data += base64.b64decode(chunk["data"])
        offset += chunk["bytesReturned"]
        if chunk["complete"]:
            assert len(data) == chunk["size"]
            return data


def job_containers(fake: FakeBackend) -> dict[str, str]:
    """sandbox id → job id, of the fake backend's live job sandboxes."""
    return {c.sandbox_id: c.labels[labels.JOB] for c in fake._containers.values() if labels.JOB in c.labels}


async def test_published_schemas_take_the_seed_examples(services: Services) -> None:
    """Seed 000 §12: the contract's JSON examples validate against what tools/list publishes."""
    async with services.running(), client(services) as mcp:
        tools = {t.name: t for t in (await mcp.client.list_tools()).tools}
    checked = 0
    for model, example in EXAMPLES:
        data = json.loads(example)
        for tool in tools.values():
            for schema in (tool.input_schema, tool.output_schema):
                if schema and schema.get("title") == model.__name__:
                    jsonschema.validate(data, schema)
                    checked += 1
    assert checked >= 12


async def test_a_run_in_its_own_sandbox(services: Services, fake: FakeBackend, site: TaskSite) -> None:
    urls = [site.url(f"/p/{i}") for i in range(3)] + [site.url("/missing/3")]
    progress: list[tuple[float, float | None]] = []

    async def on_progress(done: float, total: float | None, _message: str | None) -> None:
        progress.append((done, total))

    async with services.running(), client(services) as mcp:
        answer = await mcp.client.call_tool(
            "run_task_template",
            {"templateId": "batch_extract_pages", "inputs": {"urls": urls, "concurrency": 2}},
            progress_callback=on_progress,
        )
        assert not answer.is_error, answer.content
        run = answer.structured_content
        assert run is not None
        # auto → sync for ≤ 10 URLs: the answer is get_task_run's terminal shape.
        assert run["status"] == "partial_success" and run["templateId"] == "batch_extract_pages"
        assert run["result"]["summary"] == {"total": 4, "succeeded": 3, "failed": 1, "skipped": 0}
        assert [i["url"] for i in run["result"]["items"]] == urls
        assert run["progress"] == {"totalSteps": 4, "doneSteps": 4} and run["metrics"]["elapsedMs"] > 0
        assert "sandboxId" not in run and "sessionId" not in run  # they did not outlive the run
        assert progress and progress[-1] == (4, 4) and [p[0] for p in progress] == sorted({p[0] for p in progress})
        assert run == await mcp.ok("get_task_run", {"runId": run["runId"]})
        # Its sandbox was made for it, never became the default, and is gone.
        assert not job_containers(fake) and not (await mcp.ok("sandbox_list"))["sandboxes"]
        assert services.manager.registry.record(run["runId"]) is None
        names = {a["name"]: a for a in run["artifacts"]}
        full = json.loads(await download(mcp, names["result.json"]["artifactId"], limit=1000))
        assert full["summary"] == run["result"]["summary"] and len(full["items"]) == 4
        csv = (await download(mcp, names["items.csv"]["artifactId"])).decode()
        assert csv.splitlines()[0].startswith("url,") and len(csv.splitlines()) == 5
        # The same artifacts as resources, listed for their owner only, read whole.
        listed = {str(r.uri): r for r in (await mcp.client.list_resources()).resources}
        uri = artifact_uri(names["items.csv"]["artifactId"])
        assert listed[uri].mime_type == "text/csv" and listed[uri].size == names["items.csv"]["size"]
        read = await mcp.client.read_resource(uri)
        assert read.contents[0].mime_type == "text/csv" and read.contents[0].text == csv  # type: ignore[union-attr]
        templates = (await mcp.client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["boxwright://artifacts/{artifactId}"]

        listing = await mcp.ok("list_task_runs", {})
        assert [r["runId"] for r in listing["runs"]] == [run["runId"]] and listing["total"] == 1
        assert (await mcp.ok("list_task_runs", {"status": "failed"}))["runs"] == []
        assert (await mcp.ok("list_task_runs", {"templateId": "multi_tab_compare"}))["runs"] == []
        again = await mcp.ok("cancel_task_run", {"runId": run["runId"]})
        assert again == {"cancelRequested": False, "currentStatus": "partial_success"}  # terminal stays
        profile = await mcp.ok("get_runtime_profile")
        assert profile["limits"] == {
            "maxConcurrentRuns": 5,
            "maxRunTimeoutMs": 900000,
            "maxArtifactInlineBytes": 262144,
        }


async def test_owners_see_only_their_own(services: Services, site: TaskSite) -> None:
    async with (
        services.running(),
        client(services, as_owner("alice")) as alice,
        client(services, as_owner("bob")) as bob,
    ):
        started = await alice.ok(
            "run_task_template",
            {"templateId": "batch_extract_pages", "inputs": {"urls": [site.url("/p/1")]}, "options": {"mode": "async"}},
        )
        assert set(started) == {"runId", "status", "createdAt"} and started["status"] == "queued"
        run = await finish(alice, started["runId"])
        art = run["artifacts"][0]["artifactId"]
        missing = await bob.error("get_task_run", {"runId": "run_doesnotexist"})
        theirs = await bob.error("get_task_run", {"runId": run["runId"]})
        assert theirs.code == missing.code == "RUN_NOT_FOUND"
        assert theirs.data["error"].replace(run["runId"], "X") == missing.data["error"].replace("run_doesnotexist", "X")
        assert (await bob.error("cancel_task_run", {"runId": run["runId"]})).code == "RUN_NOT_FOUND"
        assert (await bob.ok("list_task_runs", {}))["runs"] == []
        assert (await bob.error("get_artifact", {"artifactId": art})).code == "ARTIFACT_NOT_FOUND"
        assert not (await bob.client.list_resources()).resources
        with pytest.raises(Exception, match="ARTIFACT_NOT_FOUND"):
            await bob.client.read_resource(artifact_uri(art))
        assert {str(r.uri) for r in (await alice.client.list_resources()).resources} == {
            artifact_uri(a["artifactId"]) for a in run["artifacts"]
        }


async def test_bad_requests_open_nothing(services: Services, fake: FakeBackend) -> None:
    good = {"urls": ["http://127.0.0.1:9/a"]}

    def req(inputs: dict[str, Any] = good, **extra: Any) -> dict[str, Any]:
        return {"templateId": "batch_extract_pages", "inputs": inputs, **extra}

    bad: list[tuple[dict[str, Any], str, str]] = [
        ({**req(), "templateId": "nope"}, "TEMPLATE_NOT_FOUND", ""),
        (req(templateVersion="2.0.0"), "TEMPLATE_VERSION_UNSUPPORTED", ""),
        (req({"url": "x"}), "INVALID_PARAMETER", "inputs.urls"),
        (req({"urls": ["http://a.test/"] * 1001}), "INVALID_PARAMETER", "inputs.urls"),
        (req({"urls": ["file:///etc/passwd"]}), "INVALID_PARAMETER", "inputs.urls.0"),
        (req({**good, "concurrency": 0}), "INVALID_PARAMETER", "inputs.concurrency"),
        (req(options={"timeoutMs": 900001}), "INVALID_PARAMETER", "options.timeoutMs"),
        (req(sandboxId="sbx_nope"), "SANDBOX_NOT_FOUND", ""),
        (req(sessionId="s1"), "NO_DEFAULT_SANDBOX", ""),
    ]
    async with services.running(), client(services) as mcp:
        for args, code, field in bad:
            answer = await mcp.error("run_task_template", args)
            assert answer.code == code, (args, answer.data)
            if field:
                assert field in [e["field"] for e in answer.data["details"]["errors"]], answer.data
            assert "file:///etc/passwd" not in answer.text  # rejected values are never echoed
        assert not fake._containers and (await mcp.ok("list_task_runs", {}))["runs"] == []
        # With a sandbox of one's own: an unknown session is refused before any tab opens.
        sid = (await mcp.ok("sandbox_create"))["sandboxId"]
        refused = await mcp.error("run_task_template", req(sessionId="nope"))
        assert refused.code == "SESSION_NOT_FOUND" and refused.data["details"]["sandboxId"] == sid
        tabs = await mcp.ok("browser_sessions", {})
        assert all(s["tabCount"] <= 1 for s in tabs["sessions"])
        assert (await mcp.ok("list_task_runs", {}))["runs"] == [] and len(fake._containers) == 1


async def test_what_would_fail_mid_run_is_refused_at_submit(host_settings: Settings, fake: FakeBackend) -> None:
    """A run given another run's throw-away sandbox died when that run ended (SANDBOX_NOT_FOUND); one naming
    a profile past the owner's profile limit was accepted, made a job sandbox, then failed QUOTA_EXCEEDED."""
    services = Services(host_settings.replace(max_profiles_per_owner=1), backend=fake)
    request = {"templateId": "batch_extract_pages", "inputs": {"urls": ["http://127.0.0.1:9/a"]}}
    async with services.running(), client(services) as mcp:
        job = await services.manager.create(Caller(owner="local", session="other"), job="run_other")
        refused = await mcp.error("run_task_template", {**request, "sandboxId": job.id})
        assert refused.code == "INVALID_PARAMETER" and "run_other" in refused.text
        assert [e["field"] for e in refused.data["details"]["errors"]] == ["sandboxId"]
        services.profiles.store.import_state("local", "first", {"cookies": [], "origins": []}, writer="t")
        over = await mcp.error("run_task_template", {**request, "profileId": "second"})
        assert over.code == "QUOTA_EXCEEDED" and over.data["details"]["resource"] == "profiles"
        assert (await mcp.ok("list_task_runs", {}))["runs"] == [] and len(fake._containers) == 1  # the job's only


async def test_trust_levels(host_settings: Settings, fake: FakeBackend, site: TaskSite) -> None:
    local_only = replace(CATALOG["batch_extract_pages"], trust_levels=("local",))
    services = Services(host_settings, backend=fake)
    services.runs.catalog = services.runs.driver.catalog = {**CATALOG, "batch_extract_pages": local_only}
    seen: list[str] = []
    real_call = services.manager.agent.call

    async def spy(endpoint: Any, method: Any, params: Any, deadline: Any) -> Any:
        if method is methods.TASK_START:
            seen.append(params.trustLevel)
        return await real_call(endpoint, method, params, deadline)

    services.manager.agent.call = spy  # type: ignore[method-assign]
    args = {"templateId": "batch_extract_pages", "inputs": {"urls": [site.url("/p/1")]}}
    async with services.running():
        async with client(services, as_owner("bob", "remote")) as remote:
            refused = await remote.error("run_task_template", args)
            assert refused.code == "TRUST_LEVEL_NOT_ALLOWED" and refused.data["recoverHint"]
            assert not fake._containers
        async with client(services, as_owner("carol", "local")) as local:
            run = await local.ok("run_task_template", args)
            assert run["status"] == "succeeded"
    assert seen == ["local"]  # the caller's level went to the agent, which checks it again


async def test_queue_timeout_and_cancel(services: Services, fake: FakeBackend, site: TaskSite) -> None:
    """Five runs hold the five slots; the sixth waits queued until one ends (by RUN_TIMEOUT); a queued run
    is canceled at once; a running one after its current step, with its partial result readable."""
    async with services.running(), client(services) as mcp:
        sid = (await mcp.ok("sandbox_create"))["sandboxId"]

        def start(urls: list[str], **options: Any) -> Any:
            args = {"templateId": "batch_extract_pages", "sandboxId": sid, "inputs": {"urls": urls, "concurrency": 1}}
            return mcp.ok("run_task_template", {**args, "options": {"mode": "async", **options}})

        held = [await start([site.url(f"/never/{i}")], **({"timeoutMs": 2500} if i == 0 else {})) for i in range(5)]
        sixth = await start([site.url("/p/6")])
        seventh = await start([site.url("/p/7")])

        async def running(run_id: str) -> bool:
            return (await mcp.ok("get_task_run", {"runId": run_id}))["status"] == "running"

        for run in held:
            await until(lambda r=run: running(r["runId"]))
        assert (await mcp.ok("get_task_run", {"runId": sixth["runId"]}))["status"] == "queued"
        canceled = await mcp.ok("cancel_task_run", {"runId": seventh["runId"]})
        assert canceled == {"cancelRequested": True, "currentStatus": "canceled"}  # never started
        timed_out = await finish(mcp, held[0]["runId"])  # one of the five ends …
        assert timed_out["status"] == "failed" and timed_out["error"]["errorCode"] == "RUN_TIMEOUT"
        assert timed_out["error"]["details"]["runId"] == held[0]["runId"]
        assert (await finish(mcp, sixth["runId"]))["status"] == "succeeded"  # … and the sixth runs
        seventh_run = await mcp.ok("get_task_run", {"runId": seventh["runId"]})
        assert seventh_run["status"] == "canceled" and seventh_run["error"]["errorCode"] == "RUN_CANCELED"
        site.released.set()
        for run in held[1:]:
            assert (await finish(mcp, run["runId"]))["status"] == "succeeded"

        # Cancel mid-run: the current step finishes, the pending ones are skipped.
        run = await start([site.url(f"/slow/c{i}") for i in range(8)])
        await until(lambda: _done_at_least(mcp, run["runId"], 1))
        answer = await mcp.ok("cancel_task_run", {"runId": run["runId"]})
        assert answer == {"cancelRequested": True, "currentStatus": "running"}
        ended = await finish(mcp, run["runId"])
        assert ended["status"] == "canceled" and ended["cancelRequested"] is True
        summary = ended["result"]["summary"]
        assert summary["succeeded"] >= 1 and summary["skipped"] >= 4 and summary["failed"] == 0
        assert [i["status"] for i in ended["result"]["items"]][-1] == "skipped"


async def test_an_owners_unfinished_runs_are_bounded(
    host_settings: Settings, fake: FakeBackend, site: TaskSite
) -> None:
    """Past BOXWRIGHT_MAX_RUNS_PER_OWNER runs queued or running, one more is QUOTA_EXCEEDED, and opens nothing;
    another owner is not held back, and once a run ends the owner may submit again."""
    services = Services(host_settings.model_copy(update={"max_runs_per_owner": 2}), backend=fake)
    async with services.running(), client(services) as mcp, client(services, as_owner("bob", "local")) as bob:
        sid = (await mcp.ok("sandbox_create"))["sandboxId"]

        def start(session: Session, url: str, sandbox: str | None = sid) -> Any:
            args = {"templateId": "batch_extract_pages", "inputs": {"urls": [url], "concurrency": 1}}
            return session.call(
                "run_task_template",
                {**args, **({"sandboxId": sandbox} if sandbox else {}), "options": {"mode": "async"}},
            )

        held = [(await start(mcp, site.url(f"/never/q{i}"))).data for i in range(2)]
        third = await start(mcp, site.url("/p/3"))
        assert third.is_error and third.code == "QUOTA_EXCEEDED", third.text
        assert third.data["details"] == {"resource": "runs", "limit": 2, "used": 2} and third.data["recoverHint"]
        assert len((await mcp.ok("list_task_runs"))["runs"]) == 2  # the refused one left no record
        bobs = await start(bob, site.url("/p/4"), sandbox=None)
        assert not bobs.is_error, bobs.text
        await mcp.ok("cancel_task_run", {"runId": held[0]["runId"]})
        site.released.set()  # its page loads, and the canceled run ends after that step
        assert (await finish(mcp, held[0]["runId"]))["status"] == "canceled"
        again = await start(mcp, site.url("/p/5"))
        assert not again.is_error, again.text


async def _done_at_least(mcp: Session, run_id: str, n: int) -> bool:
    return (await mcp.ok("get_task_run", {"runId": run_id}))["progress"]["doneSteps"] >= n


async def _slow_batch_under_way(
    mcp: Session, site: TaskSite, key: str, *, pages: int, done: int
) -> tuple[str, list[str], dict[str, Any]]:
    """A sandbox of its own with an async batch of slow pages in it, `done` of them read: (sandbox, urls, run)."""
    sid = (await mcp.ok("sandbox_create"))["sandboxId"]
    urls = [site.url(f"/slow/{key}{i}") for i in range(pages)]
    args = {"templateId": "batch_extract_pages", "sandboxId": sid, "inputs": {"urls": urls, "concurrency": 1}}
    run = await mcp.ok("run_task_template", {**args, "options": {"mode": "async"}})
    await until(lambda: _done_at_least(mcp, run["runId"], done))
    return sid, urls, run


async def test_a_run_whose_sandbox_is_destroyed_keeps_what_it_finished(services: Services, site: TaskSite) -> None:
    """Its sandbox destroyed under it, a run ends failed saying so (not "agent unreachable … destroy the
    sandbox"), with the pages it had read as its partial result."""
    async with services.running(), client(services) as mcp:
        sid, urls, run = await _slow_batch_under_way(mcp, site, "d", pages=8, done=2)
        await mcp.ok("sandbox_destroy", {"sandboxId": sid})
        ended = await finish(mcp, run["runId"])
        assert ended["status"] == "failed"
        error = ended["error"]
        assert error["errorCode"] == "SANDBOX_NOT_FOUND" and error["details"]["reason"] == "destroyed"
        assert "destroyed while" in error["error"] and "sandbox_create" in error["recoverHint"]
        assert error["details"]["runId"] == run["runId"]
        done = [i for i in ended["result"]["items"] if i["status"] == "succeeded"]
        assert len(done) >= 2 and done[0]["url"] == urls[0] and done[0]["title"] == "Page d0"


async def test_login_keeps_its_sandbox_and_session(services: Services, fake: FakeBackend, site: TaskSite) -> None:
    inputs = {
        "loginUrl": site.url("/login"),
        "fields": [{"label": "Email", "value": "alice@example.com"}, {"selector": "#password", "value": PASSWORD}],
        "success": {"elementPresent": "#hello"},
    }
    async with services.running(), client(services) as mcp:
        run = await mcp.ok("run_task_template", {"templateId": "login_keep_session", "inputs": inputs})
        assert run["status"] == "succeeded" and run["sandboxId"] and run["sessionId"]
        assert PASSWORD not in json.dumps(run)
        sandboxes = (await mcp.ok("sandbox_list"))["sandboxes"]
        assert [s["sandboxId"] for s in sandboxes] == [run["sandboxId"]]
        assert not services.manager.registry.record(run["sandboxId"]).job  # an ordinary sandbox now …
        assert services.manager.default_id(Caller(owner="local", session="stdio")) is None  # … not the default
        page = await mcp.ok(
            "browser_goto", {"sandboxId": run["sandboxId"], "sessionId": run["sessionId"], "url": site.url("/account")}
        )
        assert page["title"] == "Account"  # logged in, in the kept session

        wrong = {
            **inputs,
            "fields": [inputs["fields"][0], {"selector": "#password", "value": "wrong-Pass-1"}],
            "verifyTimeoutMs": 1000,
        }
        failed = await mcp.ok("run_task_template", {"templateId": "login_keep_session", "inputs": wrong})
        assert failed["status"] == "failed" and failed["error"]["errorCode"] == "STEP_EXECUTION_FAILED"
        assert failed["error"]["details"]["runId"] == failed["runId"] and failed["error"]["details"]["failedStep"]
        assert "sandboxId" not in failed and len((await mcp.ok("sandbox_list"))["sandboxes"]) == 1
        assert "wrong-Pass-1" not in json.dumps(failed)


async def test_restart_rule(host_settings: Settings, fake: FakeBackend) -> None:
    """What a server killed mid-run leaves — an unfinished record, its job sandbox, no live locks — is
    ended `failed` by the next server, and the job sandbox removed; a kept sandbox stays."""
    dead = SandboxManager(host_settings, fake)
    await dead.start()
    owner = Caller(owner="alice")
    orphan_box = await dead.create(owner, job="run_orphan")
    kept_box = await dead.create(owner, job="run_kept")
    store = RunStore(host_settings.state_dir, host_settings.namespace)
    store.save(record("run_orphan", status="running", started_at=now_ms(), sandbox_id=orphan_box.id))
    store.save(record("run_queued", status="queued"))
    kept = record(
        "run_kept", status="succeeded", ended_at=now_ms(), kept=True, sandbox_id=kept_box.id, session_id="sess_k"
    )
    store.save(kept)
    dead.registry.hand_over()  # the "dead" server's locks are gone, its sandboxes are not
    await dead.agent.aclose()

    services = Services(host_settings, backend=fake)
    async with services.running(), client(services, as_owner("alice")) as mcp:
        for run_id, before in (("run_orphan", "running"), ("run_queued", "queued")):
            run = await mcp.ok("get_task_run", {"runId": run_id})
            assert run["status"] == "failed" and run["error"]["errorCode"] == "EXECUTION_ERROR"
            assert run["error"]["details"] == {"runId": run_id, "reason": "server_stopped", "statusBefore": before}
        assert (await mcp.ok("get_task_run", {"runId": "run_kept"}))["sandboxId"] == kept_box.id
        assert set(job_containers(fake)) == {kept_box.id}  # its label stays; the orphan's sandbox is gone
        assert services.manager.registry.record(kept_box.id).job is None
        assert [s["sandboxId"] for s in (await mcp.ok("sandbox_list"))["sandboxes"]] == [kept_box.id]
    assert RunRecord.model_validate_json((store.run_dir("run_orphan") / "run.json").read_bytes()).status == "failed"


async def test_retention(host_settings: Settings, fake: FakeBackend, site: TaskSite) -> None:
    services = Services(host_settings.replace(run_retention=1), backend=fake)
    async with services.running(), client(services) as mcp:
        run = await mcp.ok(
            "run_task_template", {"templateId": "batch_extract_pages", "inputs": {"urls": [site.url("/p/1")]}}
        )
        art = run["artifacts"][0]["artifactId"]
        await until(lambda: _code(mcp, "get_artifact", {"artifactId": art}, "ARTIFACT_EXPIRED"), limit_s=5)
        services.runs.sweep()  # files go, a tombstone stays
        assert not list(services.runs.store.run_dir(run["runId"]).glob("art_*"))
        assert (await mcp.error("get_artifact", {"artifactId": art})).code == "ARTIFACT_EXPIRED"
        gone = await mcp.error("get_task_run", {"runId": run["runId"]})
        assert gone.code == "RUN_NOT_FOUND" and gone.data["details"]["reason"] == "expired"
        assert not (await mcp.client.list_resources()).resources
        assert (await mcp.ok("list_task_runs", {}))["runs"] == []


async def _code(mcp: Session, tool: str, args: dict[str, Any], code: str) -> bool:
    answer = await mcp.call(tool, args)
    return answer.is_error and answer.data.get("errorCode") == code


async def test_host_backstop(
    services: Services, fake: FakeBackend, site: TaskSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent that stops answering (a frozen sandbox) cannot keep a run `running` past its deadline."""
    monkeypatch.setattr(driver, "AGENT_GRACE_S", 0.0)
    monkeypatch.setattr(driver, "BACKSTOP_S", 0.5)
    monkeypatch.setattr(driver, "OVERRUN_WAIT_S", 1.0)
    async with services.running(), client(services) as mcp:
        sid = (await mcp.ok("sandbox_create"))["sandboxId"]
        args = {"templateId": "batch_extract_pages", "sandboxId": sid, "inputs": {"urls": [site.url("/never/x")]}}
        run = await mcp.ok("run_task_template", {**args, "options": {"mode": "async", "timeoutMs": 3000}})
        await until(lambda: _total_steps(mcp, run["runId"]))  # the agent has it (its plan is known)
        fake.pause(sid)
        try:
            ended = await finish(mcp, run["runId"])
        finally:
            fake.unpause(sid)
            site.released.set()
        assert ended["status"] == "failed" and ended["error"]["errorCode"] == "RUN_TIMEOUT"
        assert ended["error"]["details"]["enforcedBy"] == "host"


async def test_a_run_does_not_undo_its_owners_pause(
    services: Services, fake: FakeBackend, site: TaskSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sandbox_pause force while a run works in the sandbox: the run's status polls (the server's own
    calls, not the owner's) leave it paused; resumed, the run goes on to its end."""
    monkeypatch.setattr(driver, "STATUS_WAIT_MS", 300)  # polls come often: each would have woken it
    async with services.running(), client(services) as mcp:
        sid, _, run = await _slow_batch_under_way(mcp, site, "z", pages=4, done=1)
        await mcp.ok("sandbox_pause", {"sandboxId": sid, "force": True})
        await anyio.sleep(4)  # past several polls and their RPC timeout
        listed = (await mcp.ok("sandbox_list"))["sandboxes"]
        assert [s["status"] for s in listed] == ["paused"] and fake.container(sid).status == "paused"
        assert (await mcp.ok("get_task_run", {"runId": run["runId"]}))["status"] == "running"
        await mcp.ok("sandbox_resume", {"sandboxId": sid})
        assert (await finish(mcp, run["runId"]))["status"] == "succeeded"


async def _total_steps(mcp: Session, run_id: str) -> int:
    return int((await mcp.ok("get_task_run", {"runId": run_id}))["progress"]["totalSteps"])


async def test_a_job_sandbox_is_never_picked_by_default(sandbox_manager: SandboxManager) -> None:
    caller = Caller(owner="alice", session="s")
    job = await sandbox_manager.create(caller, job="run_x")
    assert sandbox_manager.default_id(caller) is None
    with pytest.raises(Exception, match="no sandbox yet"):
        sandbox_manager.resolve(caller, None)  # the owner's only sandbox, but not theirs to act on
    assert sandbox_manager.resolve(caller, job.id) is job  # by its id it is theirs
    assert sandbox_manager.implicit_id(caller) is None  # nor is it listed as the default (sandbox_list)
    mine = await sandbox_manager.create(caller)
    other_session = Caller(owner="alice", session="other")
    assert sandbox_manager.resolve(other_session, None) is mine
    assert sandbox_manager.implicit_id(other_session) == mine.id  # listed as the one a call would use


async def test_a_sync_wait_that_runs_out_names_the_run(services: Services, site: TaskSite) -> None:
    """A sync call that cannot wait any longer answers TOOL_TIMEOUT with the runId; the run goes on."""
    caller = Caller(owner="alice", session="s")
    async with services.running():
        box = await services.manager.create(caller)
        req = RunTaskTemplateRequest(
            templateId="batch_extract_pages", sandboxId=box.id, inputs={"urls": [site.url("/never/sync")]}
        )
        live = await services.runs.submit(caller, req)
        assert live.record.mode == "sync" and live.record.timeout_ms == SYNC_DEFAULT_TIMEOUT_MS  # seed 001 §6.2
        with pytest.raises(BoxwrightError) as waited:
            await services.runs.wait(live, Deadline.after(0.5))
        assert waited.value.code.value == "TOOL_TIMEOUT" and waited.value.details["runId"] == live.run_id
        assert "async" in waited.value.hint
        site.released.set()
        view = await services.runs.wait(live, Deadline.after(30))
        assert view.status == "succeeded"


async def test_a_cancelled_sync_call_cancels_its_run(services: Services, site: TaskSite) -> None:
    """The client of a sync call it cancels never learns the runId: the run went on to its timeout."""
    async with services.running(), client(services) as mcp:
        sid = (await mcp.ok("sandbox_create"))["sandboxId"]
        args = {"templateId": "batch_extract_pages", "sandboxId": sid, "inputs": {"urls": [site.url("/never/x")]}}
        with anyio.move_on_after(2):
            await mcp.call("run_task_template", {**args, "options": {"mode": "sync", "timeoutMs": 6000}})
        [run] = (await mcp.ok("list_task_runs", {}))["runs"]
        ended = await finish(mcp, run["runId"])
        assert ended["status"] == "canceled" and ended["cancelRequested"] is True, ended


async def test_resources_list_pages_with_a_cursor(
    services: Services, site: TaskSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resources, "PAGE_SIZE", 1)
    async with services.running(), client(services) as alice, client(services, as_owner("bob")) as bob:
        run = await alice.ok(
            "run_task_template", {"templateId": "batch_extract_pages", "inputs": {"urls": [site.url("/p/1")]}}
        )
        expected = [artifact_uri(a["artifactId"]) for a in run["artifacts"]]
        assert len(expected) >= 2
        listed, cursor, pages = [], None, 0
        while True:
            page = await alice.client.list_resources(cursor=cursor)
            listed += [str(r.uri) for r in page.resources]
            pages += 1
            assert len(page.resources) == 1
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert sorted(listed) == sorted(expected) and pages == len(expected)
        # A cursor is not a key to other owners' lists, and a forged one is refused, not a traceback.
        first = await alice.client.list_resources()
        assert not (await bob.client.list_resources(cursor=first.next_cursor)).resources
        with pytest.raises(Exception, match="invalid cursor"):
            await alice.client.list_resources(cursor="not-a-cursor")
