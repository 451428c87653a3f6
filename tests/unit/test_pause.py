"""Pause and resume over a FakeBackend (real agents, a freezer that holds requests like the engine's):
a call resumes a paused sandbox and says so, the TTL still removes it, the idle timeout pauses
instead of destroying when configured and never removes a paused one, and a restarted server adopts
a paused sandbox as paused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import anyio
import pytest

from host.config import Settings
from host.sandboxes.manager import SandboxManager
from host.sandboxes.models import Caller, SandboxStatus
from host.services import Services
from host.testing.fake_backend import FakeBackend
from rpc import methods
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.code import CodeRunParams
from tests.unit.test_mcp_tools import serving

ALICE = Caller(owner="alice", session="s1")
ECHO = CodeRunParams(language="bash", code="echo awake")


async def test_pause_then_a_call_resumes_and_answers(sandbox_manager: SandboxManager, fake: FakeBackend) -> None:
    rec = await sandbox_manager.create(ALICE)
    assert (await sandbox_manager.pause(ALICE, None)) == (rec, True)
    assert rec.status is SandboxStatus.PAUSED and fake.container(rec.id).status == "paused"
    assert (await sandbox_manager.pause(ALICE, None))[1] is False  # already paused
    run = (await sandbox_manager.call(ALICE, None, methods.CODE_RUN, ECHO, Deadline.after(20)))[1]
    assert run.stdout == "awake\n"
    assert rec.status is SandboxStatus.RUNNING and fake.container(rec.id).status == "running"
    assert (await sandbox_manager.resume(ALICE, None))[1] is False  # not paused


async def test_a_pause_during_a_call_is_refused_unless_forced(
    sandbox_manager: SandboxManager, fake: FakeBackend
) -> None:
    rec = await sandbox_manager.create(ALICE)
    slow = CodeRunParams(language="bash", code="sleep 1; echo done")
    async with anyio.create_task_group() as tg:
        results: list[str] = []

        async def run() -> None:
            results.append(
                (await sandbox_manager.call(ALICE, None, methods.CODE_RUN, slow, Deadline.after(20)))[1].stdout
            )

        tg.start_soon(run)
        await anyio.sleep(0.3)
        with pytest.raises(BoxwrightError) as refused:
            await sandbox_manager.pause(ALICE, None)
        assert refused.value.code is ErrorCode.SANDBOX_BUSY and "1 call(s) in flight" in refused.value.message
        assert refused.value.hint and "force" in refused.value.hint
        assert rec.status is SandboxStatus.RUNNING and fake.container(rec.id).status == "running"
    assert results == ["done\n"]  # the call was not disturbed
    assert (await sandbox_manager.pause(ALICE, None)) == (rec, True)  # nothing in flight: paused
    await sandbox_manager.resume(ALICE, None)
    # Forced: frozen even with a call in flight (the caller asked for it).
    async with anyio.create_task_group() as tg:
        tg.start_soon(sandbox_manager.call, ALICE, None, methods.CODE_RUN, ECHO, Deadline.after(20))
        await anyio.sleep(0.1)
        assert (await sandbox_manager.pause(ALICE, None, force=True)) == (rec, True)
        await sandbox_manager.resume(ALICE, None)


async def test_a_stopped_sandbox_cannot_be_paused(sandbox_manager: SandboxManager, fake: FakeBackend) -> None:
    rec = await sandbox_manager.create(ALICE)
    fake.stop(rec.id)
    rec.status = SandboxStatus.EXITED
    with pytest.raises(BoxwrightError) as refused:
        await sandbox_manager.pause(ALICE, rec.id)
    assert refused.value.code is ErrorCode.SANDBOX_NOT_RUNNING and refused.value.hint


async def test_the_ttl_removes_a_paused_sandbox(sandbox_manager: SandboxManager, fake: FakeBackend) -> None:
    rec = await sandbox_manager.create(ALICE)
    await sandbox_manager.pause(ALICE, None)
    rec.expires_at = datetime.now(UTC) - timedelta(seconds=1)
    await sandbox_manager.reap()
    assert fake.list_sandboxes("unit") == [] and sandbox_manager.list(ALICE) == []


async def test_idle_pauses_when_configured_and_never_removes_a_paused_one(
    host_settings: Settings, fake: FakeBackend
) -> None:
    mgr = SandboxManager(host_settings.replace(idle_timeout=60, idle_action="pause"), fake)
    await mgr.start()
    try:
        rec = await mgr.create(ALICE)
        rec.last_used = datetime.now(UTC) - timedelta(seconds=120)
        await mgr.reap()
        assert rec.status is SandboxStatus.PAUSED and fake.container(rec.id).status == "paused"
        await mgr.reap()  # still idle, paused: kept
        assert mgr.list(ALICE) == [rec]
        rec.expires_at = datetime.now(UTC) - timedelta(seconds=1)
        await mgr.reap()
        assert mgr.list(ALICE) == []
    finally:
        await mgr.close()


async def test_a_restarted_server_adopts_a_paused_sandbox_paused(host_settings: Settings, fake: FakeBackend) -> None:
    first = SandboxManager(host_settings.replace(keep_on_exit=True), fake)
    await first.start()
    rec = await first.create(ALICE)
    await first.pause(ALICE, None)
    await first.close()
    second = SandboxManager(host_settings, fake)
    await second.start()
    try:
        adopted = second.resolve(ALICE, rec.id)
        assert adopted.status is SandboxStatus.PAUSED
        assert (await second.call(ALICE, rec.id, methods.CODE_RUN, ECHO, Deadline.after(20)))[1].stdout == "awake\n"
        assert adopted.status is SandboxStatus.RUNNING
    finally:
        await second.close()


async def test_the_tools_pause_resume_and_say_a_call_resumed(services: Services) -> None:
    async with serving(services) as mcp:
        box = await mcp.ok("sandbox_create")
        paused = await mcp.ok("sandbox_pause", {})
        assert (paused["status"], paused["changed"], paused["sandboxId"]) == ("paused", True, box["sandboxId"])
        assert (await mcp.ok("sandbox_pause", {}))["changed"] is False
        answer = await mcp.call("code_run", {"language": "bash", "code": "echo hi"})
        assert not answer.is_error and answer.data["stdout"] == "hi\n"
        assert "(sandbox resumed from pause)" in answer.summary
        assert "resumed" not in (await mcp.call("code_run", {"language": "bash", "code": "true"})).summary
        resumed = await mcp.ok("sandbox_resume", {})
        assert (resumed["status"], resumed["changed"]) == ("running", False)
        bad = await mcp.error("sandbox_pause", {"sandboxId": 7})
        assert bad.code == "INVALID_PARAMETER"
        missing = await mcp.error("sandbox_resume", {"sandboxId": "sbx_nope"})
        assert missing.code == "SANDBOX_NOT_FOUND"
