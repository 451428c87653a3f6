"""SandboxManager's pure logic: default sandbox, owner isolation, limits, destroyed-id errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from host.config import Settings
from host.sandboxes.manager import SandboxManager
from host.sandboxes.models import Caller, SandboxRecord, SandboxStatus
from rpc.errors import BoxwrightError, ErrorCode

ALICE = Caller(owner="alice", session="s1")
ALICE_OTHER_SESSION = Caller(owner="alice", session="s2")
BOB = Caller(owner="bob", session="s1")


def manager(tmp_path: Path, **settings: object) -> SandboxManager:
    return SandboxManager(Settings(state_dir=tmp_path, **settings), backend=None)  # type: ignore[arg-type]


def add(m: SandboxManager, sid: str, owner: str) -> SandboxRecord:
    now = datetime.now(UTC)
    rec = SandboxRecord(
        id=sid, owner=owner, name=None, image="img", created_at=now, expires_at=now + timedelta(hours=1), token="t"
    )
    rec.status = SandboxStatus.RUNNING
    m._records[sid] = rec
    return rec


def code_of(fn, *args) -> ErrorCode:
    with pytest.raises(BoxwrightError) as info:
        fn(*args)
    assert info.value.hint
    return info.value.code


def test_no_sandbox_says_to_create_one(tmp_path: Path) -> None:
    m = manager(tmp_path)
    assert code_of(m.resolve, ALICE, None) is ErrorCode.NO_DEFAULT_SANDBOX


def test_single_sandbox_is_the_default(tmp_path: Path) -> None:
    m = manager(tmp_path)
    add(m, "sbx_a", "alice")
    assert m.resolve(ALICE, None).id == "sbx_a"


def test_several_sandboxes_without_default_is_ambiguous(tmp_path: Path) -> None:
    m = manager(tmp_path)
    add(m, "sbx_a", "alice")
    add(m, "sbx_b", "alice")
    assert code_of(m.resolve, ALICE, None) is ErrorCode.AMBIGUOUS_SANDBOX
    m._defaults[("alice", "s1")] = "sbx_b"
    assert m.resolve(ALICE, None).id == "sbx_b"
    # The default belongs to the session that created it.
    assert code_of(m.resolve, ALICE_OTHER_SESSION, None) is ErrorCode.AMBIGUOUS_SANDBOX


def test_other_owners_sandbox_looks_missing(tmp_path: Path) -> None:
    m = manager(tmp_path)
    add(m, "sbx_a", "alice")
    assert code_of(m.resolve, BOB, "sbx_a") is ErrorCode.SANDBOX_NOT_FOUND
    assert code_of(m.resolve, BOB, None) is ErrorCode.NO_DEFAULT_SANDBOX
    assert [r.id for r in m.list(BOB)] == []


def test_destroyed_sandbox_is_named_as_destroyed(tmp_path: Path) -> None:
    m = manager(tmp_path)
    rec = add(m, "sbx_a", "alice")
    m._forget(rec)
    with pytest.raises(BoxwrightError) as info:
        m.resolve(ALICE, "sbx_a")
    assert info.value.code is ErrorCode.SANDBOX_NOT_FOUND
    assert info.value.details["reason"] == "destroyed"
    # ...but only to its owner.
    with pytest.raises(BoxwrightError) as info:
        m.resolve(BOB, "sbx_a")
    assert "reason" not in info.value.details


def test_limits_per_owner_and_per_server(tmp_path: Path) -> None:
    m = manager(tmp_path, max_sandboxes=3, max_sandboxes_per_owner=2)
    add(m, "sbx_a", "alice")
    add(m, "sbx_b", "alice")
    assert code_of(m._check_limits, ALICE) is ErrorCode.SANDBOX_LIMIT_REACHED
    m._check_limits(BOB)
    add(m, "sbx_c", "bob")
    assert code_of(m._check_limits, BOB) is ErrorCode.SANDBOX_LIMIT_REACHED
