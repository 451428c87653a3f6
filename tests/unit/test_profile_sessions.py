"""Profile sessions through the MCP tools, over a FakeBackend whose agents drive this machine's Chromium:
a login made in a profile session is published back (debounced, without reloading anything) and
reused by later sessions of that profile only (TC-09, TC-10, TC-11, TC-12), and the seam other
features use (`profiles.session`) publishes with compare-and-set on the version it started from and
serves a new tool unchanged (TC-17)."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from aiohttp import web
from mcp import Client
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, ConfigDict

from host.config import Settings
from host.mcp.registry import Invocation, ToolOutput, ToolSpec, build_tool
from host.sandboxes.models import Caller
from host.services import Services
from host.testing.fake_backend import FakeBackend
from rpc import methods as m
from rpc.deadline import Deadline
from rpc.models import browser as b
from rpc.models.profiles import ProfileId
from tests import login_site
from tests.integration.mcp_helpers import Session
from tests.unit.test_mcp_tools import serving

pytestmark = pytest.mark.chromium

LOCAL = Caller(owner="local", session="stdio", trust="local")


@pytest.fixture(scope="module")
async def site() -> AsyncIterator[str]:
    runner = web.AppRunner(login_site.make_app())
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


@pytest.fixture
def services(tmp_path: Path, fake: FakeBackend) -> Services:
    # A wider debounce window than the default 500 ms, so a slow call on a busy machine cannot split
    # the test's burst of calls into two; the mechanism is the same.
    settings = Settings(
        state_dir=tmp_path / "state",
        namespace="unit",
        image="boxwright-sandbox:unit",
        snapshot_refresh_debounce_ms=1500,
    )
    return Services(settings, backend=fake)


async def eventually(check: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        await anyio.sleep(0.05)


async def heading(mcp: Any, session_id: str | None, url: str) -> str:
    args = {"url": url} | ({"sessionId": session_id} if session_id else {})
    await mcp.ok("browser_goto", args)
    snap = await mcp.ok("browser_snapshot", {"sessionId": session_id} if session_id else {})
    return snap["text"].splitlines()[0]


async def test_a_login_in_a_profile_session_is_published_and_reused(services: Services, site: str) -> None:
    store, publisher = services.profiles.store, services.profiles.publisher
    async with serving(services) as mcp:
        await mcp.ok("sandbox_create")
        created = await mcp.ok("browser_sessions", {"action": "create", "profileId": "p1"})
        s1 = created["sessionId"]
        assert created["profileId"] == "p1" and created["profileVersion"] == 0
        assert {
            "sessionId": s1,
            "tabCount": 0,
            "isDefault": False,
            "profileId": "p1",
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
        } in created["sessions"]

        await mcp.ok("browser_goto", {"sessionId": s1, "url": f"{site}/login"})
        await mcp.ok("browser_type", {"sessionId": s1, "selector": "#email", "text": login_site.USER})
        await mcp.ok("browser_type", {"sessionId": s1, "selector": "#password", "text": login_site.PASSWORD})
        await mcp.ok("browser_click", {"sessionId": s1, "selector": "#submit"})
        await mcp.ok("browser_wait_for_stable", {"sessionId": s1})
        # Published after the calls stop (debounce), without anyone asking.
        await eventually(lambda: store.read("local", "p1").version == 1)
        cookies = store.read("local", "p1").state["cookies"]
        assert [c["name"] for c in cookies] == ["session"]

        # TC-10: publishing reloads and restarts nothing — the page keeps its JavaScript state.
        await mcp.ok("browser_evaluate", {"sessionId": s1, "expression": "window.__marker = 42"})
        # TC-11: a burst of calls costs one export, made after the burst.
        await anyio.sleep(2.0)  # the evaluate's own publish is done
        before = publisher.exports
        for _ in range(12):
            await mcp.ok("browser_page_info", {"sessionId": s1, "maxElements": 1})
        await anyio.sleep(0.3)
        assert publisher.exports == before  # still inside the debounce window
        await eventually(lambda: publisher.exports == before + 1)
        await anyio.sleep(2.0)
        assert publisher.exports == before + 1
        marker = await mcp.ok("browser_evaluate", {"sessionId": s1, "expression": "window.__marker"})
        assert marker["value"] == 42
        assert store.read("local", "p1").version == 1  # nothing changed: no new version

        # TC-09 / TC-12: a new session of p1 is logged in; p2 and the default session are not.
        s2 = (await mcp.ok("browser_sessions", {"action": "create", "profileId": "p1"}))["sessionId"]
        assert await heading(mcp, s2, f"{site}/account") == "Welcome alice"
        s3 = (await mcp.ok("browser_sessions", {"action": "create", "profileId": "p2"}))["sessionId"]
        assert await heading(mcp, s3, f"{site}/account") == "Please log in"
        assert await heading(mcp, None, f"{site}/account") == "Please log in"
        assert store.read("local", "p2").state["cookies"] == []

        closed = await mcp.ok("browser_sessions", {"action": "close", "sessionId": s1})
        assert closed["published"] is True and s1 not in {s["sessionId"] for s in closed["sessions"]}
        assert (s1 not in {k[1] for k in publisher.bindings}) and publisher.bindings


async def test_profile_ids_are_checked_before_anything(services: Services, tmp_path: Path) -> None:
    async with serving(services) as mcp:
        await mcp.ok("sandbox_create")
        for bad in ("../etc", "a/b", "..", "x" * 65):
            refused = await mcp.error("browser_sessions", {"action": "create", "profileId": bad})
            assert refused.code == "INVALID_PARAMETER"
            assert [e["field"] for e in refused.data["details"]["errors"]] == ["profileId"]
        wrong = await mcp.error("browser_sessions", {"action": "list", "profileId": "p1"})
        assert wrong.code == "INVALID_PARAMETER"
    assert not services.settings.profiles_root.exists()


async def test_owners_have_their_own_profiles(services: Services, site: str) -> None:
    def as_owner(owner: str) -> Callable[[Any], Caller]:
        return lambda _ctx: Caller(owner=owner, session="s", trust="remote")

    store = services.profiles.store
    store.publish("alice", "master", {"cookies": [], "origins": [{"origin": site, "localStorage": []}]},
                  base_version=0, writer="t")  # fmt: skip
    async with serving(services, as_owner("bob")) as bob:
        await bob.ok("sandbox_create")
        created = await bob.ok("browser_sessions", {"action": "create", "profileId": "master"})
        assert created["profileVersion"] == 0  # bob's own master, not alice's version 1
        listed = await bob.ok("profile_list")
        assert [(p["profileId"], p["version"]) for p in listed["profiles"]] == [("master", 0)]
    assert store.read("alice", "master").version == 1


async def test_the_seam_publishes_with_cas_on_the_version_it_started_from(services: Services, site: str) -> None:
    """What scrape and template runs use: one block, one session, one compare-and-set publish."""
    store, profiles, call = services.profiles.store, services.profiles, services.manager.call
    async with services.running():
        rec = await services.manager.create(LOCAL)
        async with profiles.session(LOCAL, rec.id, "seam") as sid:
            assert store.read("local", "seam").version == 0
            await call(LOCAL, rec.id, m.BROWSER_GOTO, b.GotoParams(sessionId=sid, url=f"{site}/login"), deadline())
            for selector, text in (("#email", login_site.USER), ("#password", login_site.PASSWORD)):
                params = b.TypeParams(sessionId=sid, selector=selector, text=text)
                await call(LOCAL, rec.id, m.BROWSER_TYPE, params, deadline())
            await call(LOCAL, rec.id, m.BROWSER_CLICK, b.ClickParams(sessionId=sid, selector="#submit"), deadline())
        assert store.read("local", "seam").version == 1

        # A stale block: someone published while it ran, so its own publish is dropped.
        async with profiles.session(LOCAL, rec.id, "seam") as sid:
            store.publish("local", "seam", {"cookies": [], "origins": []}, base_version=None, writer="someone-else")
            await call(LOCAL, rec.id, m.BROWSER_GOTO, b.GotoParams(sessionId=sid, url=f"{site}/account"), deadline())
        after = store.read("local", "seam")
        assert after.version == 2 and after.state["cookies"] == []  # not overwritten by the stale session
        _, listed = await call(LOCAL, rec.id, m.BROWSER_SESSIONS, b.SessionsParams(), deadline())
        assert [s.sessionId for s in listed.sessions] == []  # both blocks closed their sessions


def deadline() -> Deadline:
    return Deadline.after(30)


async def test_a_profile_session_is_published_when_the_server_stops(services: Services, site: str) -> None:
    """Before its debounce fires: stopping the server (or removing the sandbox) publishes it once more."""
    store, call = services.profiles.store, services.manager.call
    async with services.running():
        rec = await services.manager.create(LOCAL)
        opened = await services.profiles.open(LOCAL, rec.id, "late")
        sid = opened.session_id
        await call(LOCAL, rec.id, m.BROWSER_GOTO, b.GotoParams(sessionId=sid, url=f"{site}/login"), deadline())
        for selector, text in (("#email", login_site.USER), ("#password", login_site.PASSWORD)):
            await call(
                LOCAL, rec.id, m.BROWSER_TYPE, b.TypeParams(sessionId=sid, selector=selector, text=text), deadline()
            )
        await call(LOCAL, rec.id, m.BROWSER_CLICK, b.ClickParams(sessionId=sid, selector="#submit"), deadline())
        assert store.read("local", "late").version == 0  # the debounce (1.5 s here) has not fired yet
    latest = store.read("local", "late")
    assert latest.version == 1 and [c["name"] for c in latest.state["cookies"]] == ["session"]


class VisitArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    profileId: ProfileId
    path: str
    login: bool = False


class VisitResult(BaseModel):
    heading: str


async def test_a_new_tool_gets_profiles_from_the_seam_without_changes_to_it(services: Services, site: str) -> None:
    """TC-17: a browser tool the runtime has never heard of — written here, in the test, as a new feature
    would be — works "as" a profile through `profiles.session` alone: loaded on entry, published with
    compare-and-set on exit, through the same registry wrapper as every tool (errors included)."""

    async def visit(inv: Invocation[VisitArgs]) -> ToolOutput:
        call, caller = services.manager.call, inv.caller
        async with services.profiles.session(caller, None, inv.args.profileId, deadline=inv.deadline) as sid:
            rec = services.manager.resolve(caller, None)
            url = f"{site}{inv.args.path}"
            await call(caller, rec.id, m.BROWSER_GOTO, b.GotoParams(sessionId=sid, url=url), inv.deadline)
            if inv.args.login:
                for selector, text in (("#email", login_site.USER), ("#password", login_site.PASSWORD)):
                    await call(caller, rec.id, m.BROWSER_TYPE, b.TypeParams(sessionId=sid, selector=selector,
                                                                             text=text), inv.deadline)  # fmt: skip
                await call(caller, rec.id, m.BROWSER_CLICK, b.ClickParams(sessionId=sid, selector="#submit"),
                           inv.deadline)  # fmt: skip
            _, snap = await call(caller, rec.id, m.BROWSER_SNAPSHOT, b.SnapshotParams(sessionId=sid), inv.deadline)
        heading = snap.text.splitlines()[0]
        return ToolOutput(VisitResult(heading=heading), f"visit_as_profile ok: {heading}")

    spec = ToolSpec("visit_as_profile", "test tool", VisitArgs, VisitResult, visit, budget_s=lambda _a: 60.0)
    local = Caller(owner="local", session="stdio", trust="local")
    server = MCPServer("second-tool", tools=[build_tool(spec, lambda _ctx: local)])
    store = services.profiles.store
    async with services.running(), Client(server) as client:
        tool = Session(client)
        await services.manager.create(local)
        first = await tool.ok("visit_as_profile", {"profileId": "p17", "path": "/login", "login": True})
        assert first["heading"] == "Welcome alice"
        assert store.read("local", "p17").version == 1  # published when the block ended
        again = await tool.ok("visit_as_profile", {"profileId": "p17", "path": "/account"})
        assert again["heading"] == "Welcome alice"  # loaded from the profile into a fresh session
        other = await tool.ok("visit_as_profile", {"profileId": "other", "path": "/account"})
        assert other["heading"] == "Please log in"
        bad = await tool.error("visit_as_profile", {"profileId": "../p17", "path": "/account"})
        assert bad.code == "INVALID_PARAMETER"
        _, listed = await services.manager.call(local, None, m.BROWSER_SESSIONS, b.SessionsParams(), deadline())
        assert [s.sessionId for s in listed.sessions] == []  # every block closed its session


async def test_a_paused_profile_session_is_skipped_then_published_after_resume(services: Services, site: str) -> None:
    """A sandbox paused by the idle timeout (sandbox_pause here) is frozen: the publisher neither waits on it
    nor drops the session; after the resume its changes are published as before."""
    store, publisher, call = services.profiles.store, services.profiles.publisher, services.manager.call
    async with services.running():
        rec = await services.manager.create(LOCAL)
        opened = await services.profiles.open(LOCAL, rec.id, "frozen")
        assert await services.manager.freezer.pause(rec, "test")
        started = time.monotonic()
        assert await publisher.publish(opened.binding) is None
        assert time.monotonic() - started < 5 and opened.binding.key in publisher.bindings
        sid = opened.session_id
        await call(LOCAL, rec.id, m.BROWSER_GOTO, b.GotoParams(sessionId=sid, url=f"{site}/login"), deadline())
        assert rec.status.value == "running"  # the call resumed it
        for selector, text in (("#email", login_site.USER), ("#password", login_site.PASSWORD)):
            await call(LOCAL, rec.id, m.BROWSER_TYPE, b.TypeParams(sessionId=sid, selector=selector, text=text),
                       deadline())  # fmt: skip
        await call(LOCAL, rec.id, m.BROWSER_CLICK, b.ClickParams(sessionId=sid, selector="#submit"), deadline())
        await eventually(lambda: store.read("local", "frozen").version == 1)


async def test_a_profile_is_deleted_by_its_owner_once_no_session_uses_it(services: Services, site: str) -> None:
    """MCP callers could make profiles but not remove one (a saved login stayed until an operator ran
    `boxwright profile rm`); profile_delete does, and never while a session opened from it would save it back."""
    store = services.profiles.store
    async with serving(services) as mcp:
        await mcp.ok("sandbox_create")
        sid = (await mcp.ok("browser_sessions", {"action": "create", "profileId": "gone"}))["sessionId"]
        busy = await mcp.error("profile_delete", {"profileId": "gone"})
        assert busy.code == "PROFILE_BUSY" and busy.data["details"]["sessions"][0].endswith(f"/{sid}")
        assert store.exists("local", "gone")
        await mcp.ok("browser_sessions", {"action": "close", "sessionId": sid})
        deleted = await mcp.ok("profile_delete", {"profileId": "gone"})
        assert deleted == {"profileId": "gone", "deleted": True}
        assert "gone" not in {p["profileId"] for p in (await mcp.ok("profile_list"))["profiles"]}
        again = await mcp.error("profile_delete", {"profileId": "gone"})
        assert again.code == "PROFILE_NOT_FOUND"
        for bad in ("../x", "a/b", "x" * 65):
            refused = await mcp.error("profile_delete", {"profileId": bad})
            assert refused.code == "INVALID_PARAMETER", bad
    assert not store.exists("local", "gone")


async def test_a_session_on_a_profile_damaged_under_it_stops_saving_and_logs_once(
    services: Services, caplog: pytest.LogCaptureFixture
) -> None:
    """A meta.json broken by hand while a session used its profile: profile_list failed as a whole and
    every background publish logged a traceback, every interval, for as long as the sandbox lived."""
    store, publisher = services.profiles.store, services.profiles.publisher
    async with serving(services) as mcp:
        await mcp.ok("sandbox_create")
        store.import_state("local", "fine", {"cookies": [], "origins": []}, writer="test")
        await mcp.ok("browser_sessions", {"action": "create", "profileId": "hand-edited"})
        (store.paths.profile_dir("local", "hand-edited") / "meta.json").write_text("{not json")
        listed = (await mcp.ok("profile_list"))["profiles"]
        assert {p["profileId"]: bool(p["damaged"]) for p in listed} == {"fine": False, "hand-edited": True}
        [binding] = [b for b in publisher.bindings.values() if b.profile_id == "hand-edited"]
        with caplog.at_level(logging.WARNING, "boxwright.profiles"):
            assert await publisher.publish_logged(binding) is None
            assert await publisher.publish_logged(binding) is None
        assert binding.stale and not any(r.exc_info for r in caplog.records)
        assert len([r for r in caplog.records if "is damaged" in r.getMessage()]) == 1
