"""The host's run store, artifact store and FIFO queue, without sandboxes or a browser."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from host.runs.artifacts import ArtifactStore
from host.runs.driver import RunDriver
from host.runs.live import LiveRun
from host.runs.queue import RunSlots
from host.runs.records import RunRecord, now_ms
from host.runs.store import RunStore
from host.sandboxes.models import Caller
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.tasks import MAX_ARTIFACT_INLINE_BYTES, ArtifactChunk, ArtifactRef


def record(run_id: str = "run_abc", owner: str = "alice", **fields: object) -> RunRecord:
    now = now_ms()
    base: dict[str, object] = dict(
        run_id=run_id,
        owner=owner,
        template_id="batch_extract_pages",
        template_version="1.0.0",
        mode="async",
        trust_level="local",
        timeout_ms=60_000,
        created_at=now,
        updated_at=now,
    )
    return RunRecord.model_validate({**base, **fields})


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_records_and_artifacts_are_private_atomic_and_reloaded(tmp_path: Path) -> None:
    old = os.umask(0o022)  # a permissive umask must not leak into the store
    try:
        store = RunStore(tmp_path / "state", "ns")
        rec = record()
        store.save(rec)
        with store.write_artifact(rec.run_id, "art_1") as fh:
            fh.write(b"x" * 1000)
        with pytest.raises(RuntimeError), store.write_artifact(rec.run_id, "art_2") as fh:
            fh.write(b"half")
            raise RuntimeError("copy failed midway")
    finally:
        os.umask(old)
    folder = tmp_path / "state" / "runs" / "ns" / rec.run_id
    assert mode(tmp_path / "state") == mode(tmp_path / "state" / "runs") == mode(folder.parent) == 0o700
    assert mode(folder) == 0o700 and mode(folder / "run.json") == 0o600 and mode(folder / "art_1") == 0o600
    assert sorted(p.name for p in folder.iterdir()) == ["art_1", "run.json"]  # no half artifact, no temp file
    (folder / ".tmp-dead-run.json").write_text("left by a crash")
    (folder.parent / "run_broken").mkdir()
    (folder.parent / "run_broken" / "run.json").write_text("{not json")
    again = RunStore(tmp_path / "state", "ns").load_all()
    assert [r.run_id for r in again] == [rec.run_id] and again[0] == rec
    assert not (folder / ".tmp-dead-run.json").exists()
    with pytest.raises(ValueError):
        store.run_dir("../escape")
    with pytest.raises(ValueError):
        store.artifact_path(rec.run_id, "../run.json")


def test_the_liveness_lock_is_exclusive_until_let_go(tmp_path: Path) -> None:
    a, b = RunStore(tmp_path, "ns"), RunStore(tmp_path, "ns")
    assert a.hold("run_x") and a.hold("run_x")  # idempotent for its holder
    assert not b.hold("run_x")  # held by a live holder (flock: even within one process)
    a.let_go("run_x")
    assert b.hold("run_x")


def test_artifacts_are_owned_chunked_and_expire(tmp_path: Path) -> None:
    store = RunStore(tmp_path, "ns")
    data = os.urandom(MAX_ARTIFACT_INLINE_BYTES * 2 + 123)
    rec = record(status="succeeded", ended_at=now_ms())
    rec.artifacts = [ArtifactRef(artifactId="art_big", type="json", size=len(data), mimeType="application/json")]
    with store.write_artifact(rec.run_id, "art_big") as fh:
        fh.write(data)
    artifacts = ArtifactStore(store, retention_s=3600)
    artifacts.add_run(rec)

    got, offset = b"", 0
    while True:
        chunk = artifacts.read_chunk("alice", "art_big", offset)
        assert chunk.offset == offset and chunk.size == len(data) and chunk.mimeType == "application/json"
        assert chunk.bytesReturned is not None and chunk.bytesReturned <= MAX_ARTIFACT_INLINE_BYTES
        got += base64.b64decode(chunk.data)
        offset += chunk.bytesReturned
        if chunk.complete:
            break
    assert got == data and offset == len(data)
    assert artifacts.read_chunk("alice", "art_big", len(data)).complete  # at the end: empty and complete
    with pytest.raises(BoxwrightError) as past:
        artifacts.read_chunk("alice", "art_big", len(data) + 1)
    assert past.value.code is ErrorCode.INVALID_PARAMETER
    missing = pytest.raises(BoxwrightError)
    with missing:
        artifacts.read_chunk("alice", "art_nope")
    with pytest.raises(BoxwrightError) as other:
        artifacts.read_chunk("bob", "art_big")
    # Another owner's artifact reads exactly like one that does not exist.
    assert other.value.code is missing.excinfo.value.code is ErrorCode.ARTIFACT_NOT_FOUND
    assert other.value.message.replace("art_big", "X") == missing.excinfo.value.message.replace("art_nope", "X")
    assert [e.artifact_id for e in artifacts.owned_by("alice")] == ["art_big"] and not artifacts.owned_by("bob")
    with pytest.raises(BoxwrightError) as whole:
        artifacts.read_all("alice", "art_big", max_bytes=1000)
    assert whole.value.code is ErrorCode.PAYLOAD_TOO_LARGE

    artifacts.retention_s = 0.001  # retention counts from the run's end: it has passed
    with pytest.raises(BoxwrightError) as expired:
        artifacts.read_chunk("alice", "art_big")
    assert expired.value.code is ErrorCode.ARTIFACT_EXPIRED and expired.value.details["runId"] == rec.run_id
    with pytest.raises(BoxwrightError) as still_other:
        artifacts.read_chunk("bob", "art_big")
    assert still_other.value.code is ErrorCode.ARTIFACT_NOT_FOUND
    assert not artifacts.owned_by("alice")


def test_an_artifact_id_another_owners_run_also_reports_names_only_its_own(tmp_path: Path) -> None:
    """Artifact ids come from the sandbox: one of bob's runs reporting the id of alice's artifact took
    alice's entry in the index over (she got ARTIFACT_NOT_FOUND), and dropping it dropped hers."""
    store = RunStore(tmp_path, "ns")
    artifacts = ArtifactStore(store, retention_s=3600)
    runs = {}
    for owner, run_id, data in (("alice", "run_a", b"alice's"), ("bob", "run_b", b"bob's!")):
        rec = record(run_id, owner, status="succeeded", ended_at=now_ms())
        rec.artifacts = [ArtifactRef(artifactId="art_same", type="json", size=len(data), mimeType="text/plain")]
        with store.write_artifact(run_id, "art_same") as fh:
            fh.write(data)
        artifacts.add_run(rec)
        runs[owner] = rec
    assert artifacts.read_all("alice", "art_same", 100)[1] == b"alice's"
    assert artifacts.read_all("bob", "art_same", 100)[1] == b"bob's!"
    artifacts.drop_run(runs["bob"])
    assert artifacts.read_all("alice", "art_same", 100)[1] == b"alice's"
    with pytest.raises(BoxwrightError) as gone:
        artifacts.read_all("bob", "art_same", 100)
    assert gone.value.code is ErrorCode.ARTIFACT_NOT_FOUND
    # A later run of the same owner reusing the id: dropping the earlier run keeps the later one.
    later = record("run_c", "alice", status="succeeded", ended_at=now_ms())
    later.artifacts = [ArtifactRef(artifactId="art_same", type="json", size=5, mimeType="text/plain")]
    with store.write_artifact("run_c", "art_same") as fh:
        fh.write(b"later")
    artifacts.add_run(later)
    artifacts.drop_run(runs["alice"])
    assert artifacts.read_all("alice", "art_same", 100)[1] == b"later"


async def test_the_queue_is_first_come_first_served() -> None:
    """For one owner, strictly in the order submitted."""
    slots = RunSlots(2)
    order: list[str] = []
    release = {k: anyio.Event() for k in "abcdef"}

    async def run(key: str) -> None:
        await slots.acquire(key, "alice")
        order.append(key)
        try:
            await release[key].wait()
        finally:
            slots.release("alice")

    async with anyio.create_task_group() as tg:
        for key in "abcde":
            tg.start_soon(run, key)
            await anyio.sleep(0.01)
        assert order == ["a", "b"] and slots.waiting == 3 and slots.position("e") == 2
        with anyio.CancelScope() as scope:  # a waiter that gives up leaves the line cleanly
            scope.cancel()
            await slots.acquire("f", "alice")
        assert slots.position("f") is None and slots.waiting == 3
        release["b"].set()
        await anyio.sleep(0.01)
        assert order == ["a", "b", "c"] and slots.holders == 2
        for key in "acde":
            release[key].set()
    assert order == ["a", "b", "c", "d", "e"] and slots.holders == 0 and slots.waiting == 0


async def test_an_owner_with_many_runs_does_not_keep_the_others_waiting() -> None:
    """A freed slot goes to the waiting run whose owner has the fewest running: mallory's queue of long
    runs does not hold alice's one run behind all of them."""
    slots = RunSlots(2)
    order: list[str] = []
    release = {k: anyio.Event() for k in ("m1", "m2", "m3", "m4", "a1", "b1")}

    async def run(key: str) -> None:
        owner = {"m": "mallory", "a": "alice", "b": "bob"}[key[0]]
        await slots.acquire(key, owner)
        order.append(key)
        try:
            await release[key].wait()
        finally:
            slots.release(owner)

    async with anyio.create_task_group() as tg:
        for key in ("m1", "m2", "m3", "m4", "a1", "b1"):
            tg.start_soon(run, key)
            await anyio.sleep(0.01)
        assert order == ["m1", "m2"] and slots.running == {"mallory": 2}
        release["m1"].set()
        await anyio.sleep(0.01)
        assert order[2] == "a1"  # not m3, submitted before it: mallory already runs one, alice none
        release["m2"].set()
        await anyio.sleep(0.01)
        assert order[3] == "m3" and slots.running == {"alice": 1, "mallory": 1}  # a tie at none: the earliest
        release["a1"].set()
        await anyio.sleep(0.01)
        assert order[4] == "b1"  # bob runs none, mallory one: bob before m4, submitted earlier
        for key in release:
            release[key].set()
    assert order == ["m1", "m2", "a1", "m3", "b1", "m4"] and slots.holders == 0 and slots.waiting == 0


def test_the_artifacts_of_an_expired_run_stay_expired_under_a_longer_retention(tmp_path: Path) -> None:
    """A server started again with a longer retention indexed a tombstone's artifacts as live: listed as
    resources, and read as INTERNAL_ERROR (the file was gone)."""
    store = RunStore(tmp_path, "ns")
    rec = record(status="succeeded", ended_at=now_ms(), expired=True)
    rec.artifacts = [ArtifactRef(artifactId="art_gone", type="json", size=10, mimeType="application/json")]
    artifacts = ArtifactStore(store, retention_s=86_400)
    artifacts.add_run(rec)
    assert not artifacts.owned_by("alice")
    with pytest.raises(BoxwrightError) as gone:
        artifacts.read_chunk("alice", "art_gone")
    assert gone.value.code is ErrorCode.ARTIFACT_EXPIRED
    live = record(run_id="run_live", status="succeeded", ended_at=now_ms())
    live.artifacts = [ArtifactRef(artifactId="art_swept", type="json", size=10, mimeType="application/json")]
    artifacts.add_run(live)  # indexed, but its file was deleted meanwhile (another process's sweep)
    for read in (
        lambda: artifacts.read_chunk("alice", "art_swept"),
        lambda: artifacts.read_all("alice", "art_swept", 99),
    ):
        with pytest.raises(BoxwrightError) as swept:
            read()
        assert swept.value.code is ErrorCode.ARTIFACT_EXPIRED


class EndlessAgent:
    """An agent (a compromised sandbox) that never says an artifact is complete, or sends more than it said."""

    def __init__(self, chunk: bytes) -> None:
        self.chunk, self.calls = chunk, 0

    async def call(self, caller: object, sid: object, method: object, params: Any, deadline: object, wake: bool = True):
        self.calls += 1
        assert self.calls < 1000, "the host kept asking"
        data = base64.b64encode(self.chunk).decode()
        return None, ArtifactChunk(artifactId=params.artifactId, mimeType="application/json", size=10**12, data=data,
                                   offset=params.offset, bytesReturned=len(self.chunk), complete=False)  # fmt: skip


async def test_the_host_copies_no_more_than_the_agent_announced_and_no_more_than_its_bound(tmp_path: Path) -> None:
    store = RunStore(tmp_path, "ns")
    agent = EndlessAgent(b"A" * 65536)
    driver = RunDriver(agent, None, store, lambda live, persist: None)  # type: ignore[arg-type]
    live = LiveRun(record(sandbox_id="sbx_x"), Caller(owner="alice"), inputs=None)  # type: ignore[arg-type]
    refs = [ArtifactRef(artifactId="art_said_small", type="json", size=100_000),
            ArtifactRef(artifactId="art_huge", type="json", size=10**12)]  # fmt: skip
    status = SimpleNamespace(artifacts=refs)  # all _copy_artifacts reads of the final status
    copied = await driver._copy_artifacts(live, status)  # type: ignore[arg-type]
    assert copied == [] and agent.calls == 2  # past its own 100 000 bytes on the second chunk; the huge one not asked
    assert not list(store.artifact_path("run_abc", "art_said_small").parent.glob("*art_*"))  # nothing half-written
