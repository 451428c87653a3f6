"""The login profile store on a real filesystem, with real processes where the seed asks for several:
first use (TC-06), modes (TC-16), bad ids (TC-15), compare-and-set publish (TC-14), the locks (TC-08),
owners kept apart, and no cookie value in any log."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from host.config import Settings
from host.profiles.store import ProfileStore, writer_id
from rpc.errors import BoxwrightError, ErrorCode

SECRET = "s3cr3t-cookie-value-9f1c"


def state(value: str = SECRET, domain: str = "example.test") -> dict[str, Any]:
    cookie = {"name": "sid", "value": value, "domain": domain, "path": "/", "expires": -1, "httpOnly": True,
              "secure": False, "sameSite": "Lax"}  # fmt: skip
    return {"cookies": [cookie], "origins": []}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(state_dir=tmp_path / "state", namespace="unit")


@pytest.fixture
def store(settings: Settings) -> ProfileStore:
    return ProfileStore(settings)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_first_use_initialises_version_0_with_700_and_600(store: ProfileStore, settings: Settings) -> None:
    old_umask = os.umask(0o022)  # a usual umask must not widen or narrow what the store sets
    try:
        snapshot = store.read("local", "master")
    finally:
        os.umask(old_umask)
    assert snapshot.version == 0 and snapshot.state == {"cookies": [], "origins": []}
    profile = settings.profiles_root / "local" / "master"
    assert sorted(p.name for p in profile.iterdir()) == ["meta.json", "publish.lock", "state.json", "tmp"]
    for directory in (settings.profiles_root, settings.profiles_root / "local", profile, profile / "tmp"):
        assert mode(directory) == 0o700, directory
    for file in ("state.json", "meta.json", "publish.lock"):
        assert mode(profile / file) == 0o600, file
    meta = json.loads((profile / "meta.json").read_text())
    assert set(meta) == {"profileId", "version", "updatedAt", "writerId", "checksum"}
    assert meta["profileId"] == "master" and meta["version"] == 0 and meta["checksum"].startswith("sha256:")
    with store.login_lock("local", "master"):
        assert mode(profile / "login.lock") == 0o600


BAD_IDS = ["../x", "..", ".", "a/b", "a\\b", "", "x" * 65, "a b", "a..b", "%2e%2e", "/etc", "ü", "a\x00b"]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_bad_profile_ids_never_touch_the_disk(store: ProfileStore, settings: Settings, bad: str) -> None:
    operations = [
        lambda: store.read("local", bad),
        lambda: store.ensure("local", bad),
        lambda: store.publish("local", bad, state(), base_version=0, writer="t"),
        lambda: store.login_lock("local", bad),
        lambda: store.summary("local", bad),
        lambda: store.remove("local", bad),
        lambda: store.import_state("local", bad, state(), writer="t"),
    ]
    for operation in operations:
        with pytest.raises(BoxwrightError) as caught:
            operation()
        assert caught.value.code is ErrorCode.INVALID_PARAMETER
        assert caught.value.details["errors"][0]["field"] == "profileId"
    assert not settings.state_dir.exists()  # not even the root was created


def test_a_profile_that_resolves_outside_its_owner_is_refused(store: ProfileStore, tmp_path: Path) -> None:
    store.ensure("local", "master")
    outside = tmp_path / "outside"
    outside.mkdir()
    (store.paths.root / "local" / "evil").symlink_to(outside)
    with pytest.raises(BoxwrightError) as caught:
        store.read("local", "evil")
    assert caught.value.code is ErrorCode.INVALID_PARAMETER
    assert list(outside.iterdir()) == []


def test_owners_are_kept_apart(store: ProfileStore) -> None:
    store.publish("alice", "master", state("alice-value"), base_version=0, writer="t")
    assert store.read("bob", "master").version == 0  # bob's own, fresh
    assert [p.profileId for p in store.list("alice")] == ["master"]
    assert [p.cookieCount for p in store.list("bob")] == [0]
    assert store.read("alice", "master").state["cookies"][0]["value"] == "alice-value"
    for bad_owner in ("../alice", "..", "a/b", ""):
        with pytest.raises(BoxwrightError):
            store.read(bad_owner, "master")


def _publisher(root: str, base: int, value: str, barrier: Any, results: Any) -> None:
    store = ProfileStore(Settings(state_dir=Path(root), namespace="unit"))
    barrier.wait()
    outcome = store.publish("local", "shared", state(value), base_version=base, writer=writer_id(value))
    results.put((value, outcome.outcome, outcome.version))


def test_cas_two_publishers_from_version_3_exactly_one_wins(
    store: ProfileStore, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """TC-14, with two processes racing: one publishes version 4, the other is dropped."""
    for n in range(3):
        assert store.publish("local", "shared", state(f"v{n + 1}"), base_version=n, writer="t").published
    assert store.read("local", "shared").version == 3
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [
        ctx.Process(target=_publisher, args=(str(settings.state_dir), 3, value, barrier, results))
        for value in ("writer-a", "writer-b")
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    outcomes = sorted(results.get(timeout=5) for _ in procs)
    assert sorted(o[1] for o in outcomes) == ["published", "stale"]
    assert all(o[2] == 4 for o in outcomes)  # the loser saw version 4 already there
    winner = next(o[0] for o in outcomes if o[1] == "published")
    latest = store.read("local", "shared")
    assert latest.version == 4 and latest.state["cookies"][0]["value"] == winner
    assert winner in latest.meta.writerId

    # A stale writer (it started from version 2) never overwrites newer state, and is logged.
    with caplog.at_level(logging.INFO, logger="boxwright.profiles"):
        late = store.publish("local", "shared", state("old"), base_version=2, writer="late-writer")
    assert late.outcome == "stale" and late.version == 4
    assert store.read("local", "shared").state["cookies"][0]["value"] == winner
    assert any("stale publish by late-writer dropped" in r.getMessage() for r in caplog.records)


def test_an_unchanged_state_is_not_a_new_version(store: ProfileStore) -> None:
    assert store.publish("local", "p", state(), base_version=0, writer="t").version == 1
    again = store.publish("local", "p", state(), base_version=1, writer="t")
    assert again.outcome == "unchanged" and again.version == 1
    assert store.publish("local", "p", state("other"), base_version=None, writer="login").version == 2


def _hold_lock(path: str, ready: Any, release: Any) -> None:
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    ready.set()
    release.wait(30)


def test_publish_lock_held_elsewhere_times_out_quickly(store: ProfileStore) -> None:
    path = store.ensure("local", "p") / "publish.lock"
    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(str(path), ready, release))
    holder.start()
    try:
        assert ready.wait(10)
        started = time.monotonic()
        with pytest.raises(BoxwrightError) as caught:
            store.publish("local", "p", state(), base_version=0, writer="t")
        waited = time.monotonic() - started
        assert caught.value.code is ErrorCode.PROFILE_BUSY
        assert 0.45 <= waited < 5, waited  # it waited for the lock (500 ms), then gave up
    finally:
        release.set()
        holder.join(10)
    assert store.publish("local", "p", state(), base_version=0, writer="t").published


def test_login_lock_fails_fast_and_names_its_holder(store: ProfileStore) -> None:
    first = store.login_lock("local", "p1")
    first.acquire()
    try:
        started = time.monotonic()
        with pytest.raises(BoxwrightError) as caught:
            store.login_lock("local", "p1").acquire()
        assert time.monotonic() - started < 0.5
        assert caught.value.code is ErrorCode.PROFILE_BUSY
        assert f"pid {os.getpid()}" in caught.value.message
        assert store.summary("local", "p1").loginInProgress
        with store.login_lock("local", "p2"):  # another profile is free
            pass
        with pytest.raises(BoxwrightError) as refused:
            store.remove("local", "p1")  # not while a login holds it
        assert refused.value.code is ErrorCode.PROFILE_BUSY
    finally:
        first.release()
    assert not store.summary("local", "p1").loginInProgress
    with store.login_lock("local", "p1"):
        pass


def test_reads_stay_consistent_while_versions_are_published(store: ProfileStore, settings: Settings) -> None:
    store.ensure("local", "busy")
    ctx = multiprocessing.get_context("fork")

    def write_many() -> None:
        writer = ProfileStore(settings)
        for n in range(60):
            writer.publish("local", "busy", state(f"value-{n}"), base_version=None, writer="t")

    proc = ctx.Process(target=write_many)
    proc.start()
    seen = set()
    while proc.is_alive() or not seen:
        snapshot = store.read("local", "busy")  # raises if state and meta disagree
        seen.add(snapshot.version)
    proc.join(30)
    assert proc.exitcode == 0 and store.read("local", "busy").version == 60


def test_import_export_show_and_rm(store: ProfileStore, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        with pytest.raises(BoxwrightError) as bad:
            store.import_state("local", "imp", {"cookies": "nope", "origins": []}, writer="t")
        assert bad.value.code is ErrorCode.INVALID_PARAMETER and bad.value.details["errors"][0]["field"] == "cookies"
        outcome = store.import_state("local", "imp", state(domain=".example.test"), writer=writer_id("import"))
        assert outcome.published and outcome.version == 1
        summary = store.summary("local", "imp")
        assert summary.cookieDomains == ["example.test"] and summary.cookieCount == 1
        assert SECRET not in summary.model_dump_json()
        store.remove("local", "imp")
    assert SECRET not in caplog.text  # never logged, at any level
    with pytest.raises(BoxwrightError) as gone:
        store.summary("local", "imp")
    assert gone.value.code is ErrorCode.PROFILE_NOT_FOUND
    assert store.list("local") == []


def test_a_state_too_large_to_keep_is_refused_and_the_profile_keeps_its_version(
    store: ProfileStore, settings: Settings
) -> None:
    """A site that fills its storage on many origins made a storageState of any size, written to the host's
    disk with every publish; past MAX_STATE_BYTES it is refused and nothing changes."""
    store.publish("local", "master", state(), base_version=0, writer=writer_id("test"))
    storage = [{"name": "k", "value": "x" * 17_000_000}]
    huge = state() | {"origins": [{"origin": "https://a.test", "localStorage": storage}]}
    with pytest.raises(BoxwrightError) as refused:
        store.publish("local", "master", huge, base_version=1, writer=writer_id("test"))
    assert refused.value.code is ErrorCode.PAYLOAD_TOO_LARGE
    assert refused.value.details["maxStateBytes"] == 16 * 1024 * 1024 and refused.value.details["stateBytes"] > 17e6
    assert store.read("local", "master").version == 1
    with pytest.raises(BoxwrightError):  # nor does an import make a new profile for it
        store.import_state("local", "fresh", huge, writer=writer_id("test"))
    assert not (settings.profiles_root / "local" / "fresh" / "state.json").exists()


def test_one_owner_has_at_most_max_profiles_the_default_aside(tmp_path: Path) -> None:
    """A profile is made by naming it (every scrape or session with a new profileId), so one owner could make
    any number of them on the host's disk."""
    store = ProfileStore(Settings(state_dir=tmp_path / "state", namespace="unit", max_profiles_per_owner=2))
    store.read("bob", "p1")
    store.read("bob", "p2")
    with pytest.raises(BoxwrightError) as full:
        store.read("bob", "p3")
    assert full.value.code is ErrorCode.QUOTA_EXCEEDED
    assert full.value.details == {"resource": "profiles", "limit": 2, "used": 2, "profileId": "p3"}
    assert not store.exists("bob", "p3")
    store.read("bob", "master")  # the default profile is always there to be made: every scrape reads it
    store.read("bob", "p2")  # and the ones there are still read
    store.read("alice", "p3")  # another owner's count is their own
    store.remove("bob", "p1")
    store.read("bob", "p3")


def test_new_profiles_made_at_once_stay_within_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each new profile was counted, then made: eight made at once all found room for one."""
    from concurrent.futures import ThreadPoolExecutor

    store = ProfileStore(Settings(state_dir=tmp_path / "state", namespace="unit", max_profiles_per_owner=2))
    counted = store.check_room

    def slow_check(owner: str, profile_id: str) -> None:
        counted(owner, profile_id)
        time.sleep(0.05)  # the others count meanwhile

    monkeypatch.setattr(store, "check_room", slow_check)

    def make(i: int) -> str:
        try:
            store.read("bob", f"p{i}")
        except BoxwrightError as exc:
            return exc.code.value
        return "made"

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(make, range(8)))
    assert sorted(outcomes) == ["QUOTA_EXCEEDED"] * 6 + ["made"] * 2
    assert len([p for p in store.list("bob") if p.profileId != "master"]) == 2


def test_a_session_saving_to_a_deleted_profile_does_not_make_it_again(store: ProfileStore) -> None:
    store.publish("local", "gone", state(), base_version=0, writer=writer_id("login"))
    start = store.read("local", "gone").version
    store.remove("local", "gone")
    outcome = store.publish("local", "gone", state("newer"), base_version=start, writer=writer_id("session"))
    assert outcome.outcome == "stale" and not store.exists("local", "gone")
