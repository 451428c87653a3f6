"""Idle that sees real work, over a FakeBackend (real agents and code runners): a background process,
a call in flight or a run of the server's keeps an idle sandbox; without them the idle timeout removes
(or pauses) it; the TTL ends it regardless; sandbox_keepalive extends the TTL up to the maximum and a
restarted server keeps the extension."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest

from host.cli import main
from host.config import Settings
from host.sandboxes.manager import SandboxManager
from host.sandboxes.models import Caller, SandboxRecord, SandboxStatus
from host.services import Services
from host.testing.fake_backend import FakeBackend
from rpc import methods
from rpc.deadline import Deadline
from rpc.models.code import CodeRunParams, ProcessKillParams, ProcessListParams
from sandbox_image import lifetime
from tests.unit.test_mcp_tools import serving

ALICE = Caller(owner="alice", session="s1")
LONG_AGO = timedelta(seconds=600)


@pytest.fixture
async def idle_manager(host_settings: Settings, fake: FakeBackend) -> AsyncIterator[SandboxManager]:
    mgr = SandboxManager(host_settings.replace(idle_timeout=60), fake)
    await mgr.start()
    yield mgr
    await mgr.close()


async def code(mgr: SandboxManager, rec: SandboxRecord, source: str, *, background: bool = False):
    params = CodeRunParams(language="bash", code=source, background=background)
    return (await mgr.call(ALICE, rec.id, methods.CODE_RUN, params, Deadline.after(20)))[1]


def idle(rec: SandboxRecord) -> None:
    rec.last_used = datetime.now(UTC) - LONG_AGO


async def test_a_background_process_keeps_an_idle_sandbox_and_an_idle_one_goes(idle_manager: SandboxManager) -> None:
    busy = await idle_manager.create(ALICE, name="busy")
    quiet = await idle_manager.create(ALICE, name="quiet")
    started = await code(idle_manager, busy, "sleep 300", background=True)
    idle(busy)
    idle(quiet)
    await idle_manager.reap()
    assert [r.name for r in idle_manager.list(ALICE)] == ["busy"]
    assert (datetime.now(UTC) - busy.last_used).total_seconds() < 5  # counted as used now
    assert started.processId is not None
    kill = ProcessKillParams(processId=started.processId, signal="KILL")
    await idle_manager.call(ALICE, busy.id, methods.PROCESS_KILL, kill, Deadline.after(10))
    for _ in range(100):  # the kill is asynchronous: wait until the process is gone
        listing = (
            await idle_manager.call(ALICE, busy.id, methods.PROCESS_LIST, ProcessListParams(), Deadline.after(5))
        )[1]
        if not any(p.running for p in listing.processes):
            break
        await anyio.sleep(0.05)
    idle(busy)
    await idle_manager.reap()
    assert idle_manager.list(ALICE) == []


async def test_the_ttl_ends_a_busy_sandbox(idle_manager: SandboxManager) -> None:
    rec = await idle_manager.create(ALICE)
    await code(idle_manager, rec, "sleep 300", background=True)
    rec.expires_at = datetime.now(UTC) - timedelta(seconds=1)
    await idle_manager.reap()
    assert idle_manager.list(ALICE) == []


async def test_a_call_in_flight_and_a_run_of_the_server_count_as_busy(idle_manager: SandboxManager) -> None:
    rec = await idle_manager.create(ALICE)
    assert await idle_manager.activity.busy(rec) is None
    async with anyio.create_task_group() as tg:
        tg.start_soon(code, idle_manager, rec, "sleep 1")
        await anyio.sleep(0.3)
        assert await idle_manager.activity.busy(rec) == "1 call(s) in flight"
    assert await idle_manager.activity.busy(rec) is None
    idle_manager.activity.sources.append(lambda sid: sid == rec.id)
    assert (await idle_manager.activity.busy(rec) or "").startswith("work of the server's own")


async def test_idle_pauses_instead_when_configured(host_settings: Settings, fake: FakeBackend) -> None:
    mgr = SandboxManager(host_settings.replace(idle_timeout=60, idle_action="pause"), fake)
    await mgr.start()
    try:
        busy = await mgr.create(ALICE, name="busy")
        quiet = await mgr.create(ALICE, name="quiet")
        await code(mgr, busy, "sleep 300", background=True)
        idle(busy)
        idle(quiet)
        await mgr.reap()
        assert (busy.status, quiet.status) == (SandboxStatus.RUNNING, SandboxStatus.PAUSED)
    finally:
        await mgr.close()


async def test_keepalive_extends_up_to_the_maximum_and_survives_a_restart(
    host_settings: Settings,
    fake: FakeBackend,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("BOXWRIGHT_STATE_DIR", str(host_settings.state_dir))
    monkeypatch.setenv("BOXWRIGHT_NAMESPACE", host_settings.namespace)
    settings = host_settings.replace(max_ttl=3600, keep_on_exit=True)
    first = SandboxManager(settings, fake)
    await first.start()
    rec = await first.create(ALICE, ttl_s=60)
    idle(rec)
    # The agent ends its sandbox itself at the expiry it knows: keepalive moves it there too.
    agent_lifetime = lifetime.Lifetime(rec.expires_at.timestamp(), 60)
    monkeypatch.setattr(lifetime, "CURRENT", agent_lifetime)
    kept = await first.keepalive(ALICE, None, 1800)
    assert agent_lifetime.expires_at == int(kept.expires_at.timestamp())
    assert 1790 <= (kept.expires_at - datetime.now(UTC)).total_seconds() <= 1800
    assert (datetime.now(UTC) - kept.last_used).total_seconds() < 5
    capped = await first.keepalive(ALICE, None, 7 * 24 * 3600)
    assert capped.expires_at == rec.created_at + timedelta(seconds=3600)
    shorter = await first.keepalive(ALICE, None, 10)
    assert shorter.expires_at == capped.expires_at  # never shortens
    assert main(["ls"], make_backend=lambda _: fake) == 0  # ls shows the extended expiry
    assert capped.expires_at.strftime("%Y-%m-%d %H:%M:%SZ") in capsys.readouterr().out
    await first.close()
    second = SandboxManager(settings.replace(keep_on_exit=False), fake)
    await second.start()
    try:
        assert second.resolve(ALICE, rec.id).expires_at == capped.expires_at
    finally:
        await second.close()


async def test_the_keepalive_tool_and_its_bad_inputs(services: Services) -> None:
    async with serving(services) as mcp:
        box = await mcp.ok("sandbox_create", {"ttlSeconds": 60})
        kept = await mcp.ok("sandbox_keepalive", {"ttlSeconds": 600})
        assert kept["sandboxId"] == box["sandboxId"] and kept["expiresAt"] > box["expiresAt"]
        assert kept["maxExpiresAt"] >= kept["expiresAt"]
        for bad in ({"ttlSeconds": 5}, {"ttlSeconds": "soon"}, {"extra": 1}):
            refused = await mcp.error("sandbox_keepalive", bad)
            assert refused.code == "INVALID_PARAMETER", refused.text
        missing = await mcp.error("sandbox_keepalive", {"sandboxId": "sbx_nope"})
        assert missing.code == "SANDBOX_NOT_FOUND"


async def test_idle_counts_from_when_the_create_answers(
    idle_manager: SandboxManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record was made before the container started, and idle counted from then: a slow start (a first
    image build) could leave a sandbox idle-removed moments after sandbox_create answered."""
    start = idle_manager.start_container

    async def slow_start(*args: Any, **kwargs: Any) -> None:
        await anyio.sleep(0.5)
        await start(*args, **kwargs)

    monkeypatch.setattr(idle_manager, "start_container", slow_start)
    rec = await idle_manager.create(ALICE, name="slow")
    assert (datetime.now(UTC) - rec.last_used).total_seconds() < 0.2
