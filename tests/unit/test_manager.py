"""SandboxManager over a FakeBackend (the real agent and code runner in this process, no Docker):
create, call, owner isolation and defaults, limits, TTLs, what a failed or vanished sandbox becomes,
and adoption after a restart."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import anyio
import pytest

from host import labels
from host.config import Settings
from host.identity import ServerIdentity
from host.sandboxes.manager import SandboxManager
from host.sandboxes.models import Caller, SandboxRecord, SandboxStatus
from host.testing.fake_backend import FakeBackend
from rpc import methods
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.code import CodeRunParams
from rpc.models.network import NetworkPolicy
from rpc.models.sandbox import SandboxInfoParams

ALICE = Caller(owner="alice", session="s1")
ALICE_OTHER_SESSION = Caller(owner="alice", session="s2")
BOB = Caller(owner="bob", session="s1")
PRINT_42 = CodeRunParams(language="python", code="print(6 * 7)")


async def run(m: SandboxManager, caller: Caller, sandbox_id: str | None = None, params: CodeRunParams = PRINT_42):
    return (await m.call(caller, sandbox_id, methods.CODE_RUN, params, Deadline.after(20)))[1]


def expire_now(fake: FakeBackend, sandbox_id: str, identity: ServerIdentity) -> None:
    """Move a sandbox's expiry into the past, sealed again as its server would have."""
    found = fake.container(sandbox_id).labels
    found[labels.EXPIRES_AT] = "1"
    del found[labels.SEAL]
    found[labels.SEAL] = identity.seal(found, labels.SEALED)


def error_of(exc_info: pytest.ExceptionInfo[BoxwrightError]) -> ErrorCode:
    assert exc_info.value.hint
    return exc_info.value.code


async def test_create_then_call_the_real_agent(sandbox_manager: SandboxManager, fake: FakeBackend) -> None:
    rec = await sandbox_manager.create(ALICE, name="first", network=NetworkPolicy(mode="none"))
    assert rec.status is SandboxStatus.RUNNING and rec.endpoint is not None
    assert (await run(sandbox_manager, ALICE)).stdout == "42\n"
    info = (await sandbox_manager.call(ALICE, rec.id, methods.SANDBOX_INFO, SandboxInfoParams(), Deadline.after(5)))[1]
    assert info.codeRunnerReady
    assert fake.policies[rec.id].mode == "none"
    found = fake.container(rec.id).labels
    decoded = labels.decode(found)
    assert (decoded.owner, decoded.name, decoded.network) == ("alice", "first", "none")
    assert decoded.expires_at == rec.expires_at and decoded.server_id == sandbox_manager.identity.server_id
    assert labels.made_by(found, sandbox_manager.identity)
    assert rec.token not in str(found)  # no secret in a label: the token is derived from the server's secret


async def test_no_sandbox_says_to_create_one(sandbox_manager: SandboxManager) -> None:
    with pytest.raises(BoxwrightError) as info:
        await run(sandbox_manager, ALICE)
    assert error_of(info) is ErrorCode.NO_DEFAULT_SANDBOX


async def test_defaults_belong_to_the_session_that_created_them(sandbox_manager: SandboxManager) -> None:
    first = await sandbox_manager.create(ALICE)
    assert sandbox_manager.resolve(ALICE_OTHER_SESSION, None).id == first.id  # the owner's only sandbox
    second = await sandbox_manager.create(ALICE)
    assert sandbox_manager.resolve(ALICE, None).id == second.id  # the session's default
    with pytest.raises(BoxwrightError) as info:
        sandbox_manager.resolve(ALICE_OTHER_SESSION, None)
    assert error_of(info) is ErrorCode.AMBIGUOUS_SANDBOX
    assert set(info.value.details["sandboxIds"]) == {first.id, second.id}


async def test_a_call_after_the_default_went_says_it_went(sandbox_manager: SandboxManager) -> None:
    """Not "no sandbox yet" when the session had one that was destroyed (by its owner, its TTL, the idle
    timeout): the call says which and why; a new default makes that old news."""
    first = await sandbox_manager.create(ALICE)
    await sandbox_manager.destroy(ALICE, None, reason="idle timeout")
    with pytest.raises(BoxwrightError) as info:
        sandbox_manager.resolve(ALICE, None)
    assert error_of(info) is ErrorCode.NO_DEFAULT_SANDBOX and info.value.details["sandboxId"] == first.id
    assert f"your default sandbox {first.id} is gone (idle timeout)" in info.value.message
    with pytest.raises(BoxwrightError) as other:
        sandbox_manager.resolve(ALICE_OTHER_SESSION, None)  # another session never had it as its default
    assert "no sandbox yet" in other.value.message
    second = await sandbox_manager.create(ALICE)
    await sandbox_manager.destroy(ALICE, second.id)
    with pytest.raises(BoxwrightError) as again:
        sandbox_manager.resolve(ALICE, None)
    assert f"{second.id} is gone (destroyed by owner)" in again.value.message


async def test_another_owners_sandbox_looks_missing(sandbox_manager: SandboxManager) -> None:
    rec = await sandbox_manager.create(ALICE)
    for sandbox_id, code in ((rec.id, ErrorCode.SANDBOX_NOT_FOUND), (None, ErrorCode.NO_DEFAULT_SANDBOX)):
        with pytest.raises(BoxwrightError) as info:
            await run(sandbox_manager, BOB, sandbox_id)
        assert error_of(info) is code
    assert sandbox_manager.list(BOB) == []
    with pytest.raises(BoxwrightError):
        await sandbox_manager.destroy(BOB, rec.id)
    assert (await run(sandbox_manager, ALICE)).exitCode == 0


async def test_a_destroyed_sandbox_is_named_as_destroyed_to_its_owner_only(
    sandbox_manager: SandboxManager, fake: FakeBackend
) -> None:
    rec = await sandbox_manager.create(ALICE)
    await sandbox_manager.destroy(ALICE, rec.id)
    assert fake.list_sandboxes("unit") == [] and fake.volumes == {}
    with pytest.raises(BoxwrightError) as info:
        await run(sandbox_manager, ALICE, rec.id)
    assert error_of(info) is ErrorCode.SANDBOX_NOT_FOUND and info.value.details["reason"] == "destroyed"
    with pytest.raises(BoxwrightError) as info:
        await run(sandbox_manager, BOB, rec.id)
    assert "reason" not in info.value.details


async def test_limits_per_owner_and_per_server(host_settings: Settings, fake: FakeBackend) -> None:
    settings = host_settings.replace(max_sandboxes=3, max_sandboxes_per_owner=2)
    m = SandboxManager(settings, fake)
    await m.start()
    try:
        await m.create(ALICE)
        await m.create(ALICE)
        with pytest.raises(BoxwrightError) as info:
            await m.create(ALICE)
        assert error_of(info) is ErrorCode.SANDBOX_LIMIT_REACHED and info.value.details["scope"] == "owner"
        await m.create(BOB)
        with pytest.raises(BoxwrightError) as info:
            await m.create(BOB)
        assert info.value.details["scope"] == "server"
    finally:
        await m.close()
    assert fake.list_sandboxes("unit") == []  # a graceful stop destroys what the manager made


async def test_concurrent_creates_count_each_other(host_settings: Settings, fake: FakeBackend) -> None:
    """A create waits on the engine and the network guard before its record exists: creates sent at once
    must still see each other against the limits (they all passed the check before)."""
    settings = host_settings.replace(max_sandboxes=3, max_sandboxes_per_owner=1)
    m = SandboxManager(settings, fake)
    await m.start()
    try:
        outcomes: list[SandboxRecord | BoxwrightError] = []

        async def create(caller: Caller) -> None:
            try:
                outcomes.append(await m.create(caller))
            except BoxwrightError as exc:
                outcomes.append(exc)

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(create, ALICE)
        made = [o for o in outcomes if isinstance(o, SandboxRecord)]
        refused = [o for o in outcomes if isinstance(o, BoxwrightError)]
        assert len(made) == 1 and len(m.registry.owned_by(ALICE)) == 1
        assert [(e.code, e.details["scope"]) for e in refused] == [(ErrorCode.SANDBOX_LIMIT_REACHED, "owner")] * 2
        # The server's total too, and a refused create's place is free again afterwards.
        outcomes.clear()
        async with anyio.create_task_group() as tg:
            for owner in ("bob", "carol", "dave"):
                tg.start_soon(create, Caller(owner=owner, session="s1"))
        assert sum(isinstance(o, SandboxRecord) for o in outcomes) == 2 and m.registry.count() == 3
        assert [e.details["scope"] for e in outcomes if isinstance(e, BoxwrightError)] == ["server"]
    finally:
        await m.close()
    assert fake.list_sandboxes("unit") == []


async def test_ttl_is_capped_and_expires(sandbox_manager: SandboxManager, fake: FakeBackend) -> None:
    rec = await sandbox_manager.create(ALICE, ttl_s=10**9)
    assert rec.expires_at - rec.created_at == timedelta(seconds=sandbox_manager.settings.max_ttl)
    rec.expires_at = datetime.now(UTC) - timedelta(seconds=1)
    await sandbox_manager.reap()
    assert sandbox_manager.list(ALICE) == [] and fake.list_sandboxes("unit") == []


async def test_a_missing_image_fails_the_create_and_leaves_nothing(host_settings: Settings, tmp_path) -> None:
    with FakeBackend(images=set()) as fake:
        m = SandboxManager(host_settings, fake)
        await m.start()
        with pytest.raises(BoxwrightError) as info:
            await m.create(ALICE)
        assert error_of(info) is ErrorCode.IMAGE_NOT_FOUND
        assert m.list(ALICE) == [] and fake.volumes == {}
        await m.close()


async def test_a_stopped_sandbox_is_not_running(sandbox_manager: SandboxManager, fake: FakeBackend) -> None:
    rec = await sandbox_manager.create(ALICE)
    fake.stop(rec.id)
    with pytest.raises(BoxwrightError) as info:
        await run(sandbox_manager, ALICE)
    assert error_of(info) is ErrorCode.SANDBOX_NOT_RUNNING
    assert info.value.details["containerStatus"] == "exited" and info.value.details["sandboxId"] == rec.id
    assert info.value.__cause__ is not None  # raised from the transport's error, not rewritten
    assert rec.status is SandboxStatus.EXITED


async def test_a_sandbox_removed_behind_our_back_is_gone(sandbox_manager: SandboxManager, fake: FakeBackend) -> None:
    rec = await sandbox_manager.create(ALICE)
    fake.vanish(rec.id)
    with pytest.raises(BoxwrightError) as info:
        await run(sandbox_manager, ALICE)
    assert error_of(info) is ErrorCode.SANDBOX_NOT_FOUND and "removed outside" in info.value.hint
    assert sandbox_manager.list(ALICE) == []
    assert f"boxwright-{rec.id}-workspace" not in fake.volumes  # what the container left goes too


class RemovalLog:
    """A CallListener that notes which sandboxes it was told are going, and whether they could answer."""

    def __init__(self) -> None:
        self.removing: list[tuple[str, bool]] = []

    def call_started(self, rec: SandboxRecord, method: object, params: object) -> None:
        return None

    def call_ended(self, rec: SandboxRecord, method: object, params: object) -> None:
        return None

    async def sandbox_removing(self, rec: SandboxRecord, *, reachable: bool) -> None:
        self.removing.append((rec.id, reachable))


@pytest.mark.parametrize("noticed_by", ["a call", "a call after a listing saw it exit", "the reconcile"])
async def test_a_sandbox_removed_behind_our_back_leaves_nothing(
    sandbox_manager: SandboxManager, fake: FakeBackend, noticed_by: str
) -> None:
    """Its volume goes (the workspace disk with it), and listeners holding state for it (login profile
    sessions, live views) are told — without being asked to reach an agent that is gone. A call is
    answered only once that is done — also when the reaper's listing caught the container mid-removal
    (status exited: CI once answered SANDBOX_NOT_RUNNING at once, the volume still there)."""
    removals = RemovalLog()
    sandbox_manager.listeners.append(removals)
    rec = await sandbox_manager.create(ALICE)
    assert f"boxwright-{rec.id}-workspace" in fake.volumes
    fake.vanish(rec.id)
    if noticed_by.startswith("a call"):
        if noticed_by.endswith("exit"):
            rec.status = SandboxStatus.EXITED
        with pytest.raises(BoxwrightError) as gone:
            await run(sandbox_manager, ALICE)
        assert error_of(gone) is ErrorCode.SANDBOX_NOT_FOUND
    else:
        await sandbox_manager.reconcile()
    assert sandbox_manager.list(ALICE) == []
    assert f"boxwright-{rec.id}-workspace" not in fake.volumes
    assert removals.removing == [(rec.id, False)]
    with pytest.raises(BoxwrightError) as later:  # its owner is told it is gone, not that it never was
        sandbox_manager.resolve(ALICE, rec.id)
    assert error_of(later) is ErrorCode.SANDBOX_NOT_FOUND and "was destroyed" in later.value.message


class HeldRemoval(RemovalLog):
    """Holds every removal in its listener step until released (a slow engine, a profile publishing)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = anyio.Event()

    async def sandbox_removing(self, rec: SandboxRecord, *, reachable: bool) -> None:
        await super().sandbox_removing(rec, reachable=reachable)
        await self.release.wait()


async def test_a_call_into_a_sandbox_being_removed_is_answered_once_it_is_gone(
    sandbox_manager: SandboxManager, fake: FakeBackend
) -> None:
    """The reaper noticed the container gone first and is removing what it left: a call's diagnosis
    joins that removal instead of answering while the volume is still there (or removing it twice)."""
    held = HeldRemoval()
    sandbox_manager.listeners.append(held)
    rec = await sandbox_manager.create(ALICE)
    fake.vanish(rec.id)
    answered: list[tuple[ErrorCode, bool]] = []

    async def call() -> None:
        with pytest.raises(BoxwrightError) as gone:
            await run(sandbox_manager, ALICE, rec.id)
        answered.append((gone.value.code, f"boxwright-{rec.id}-workspace" in fake.volumes))

    async with anyio.create_task_group() as tg:
        tg.start_soon(sandbox_manager.reconcile)
        await anyio.sleep(0.1)  # the reaper's removal waits in the listener
        tg.start_soon(call)
        await anyio.sleep(0.3)
        assert answered == []  # not answered while the removal is under way
        held.release.set()
    assert answered == [(ErrorCode.SANDBOX_NOT_FOUND, False)]
    assert held.removing == [(rec.id, False)]  # removed once


async def test_a_listing_made_before_a_removal_does_not_bring_the_sandbox_back(
    sandbox_manager: SandboxManager, fake: FakeBackend
) -> None:
    """The reaper lists the containers, the sandbox is destroyed meanwhile, then the reaper goes through
    its listing: the record must not be adopted again (its owner would see a sandbox that is gone)."""
    rec = await sandbox_manager.create(ALICE)
    stale = fake.list_sandboxes(sandbox_manager.settings.namespace)
    await sandbox_manager.destroy(ALICE, rec.id)
    fake.list_sandboxes = lambda namespace: stale  # type: ignore[method-assign]
    seen_while_adopting: list[list[str]] = []
    ensure_runner = sandbox_manager.readiness.ensure_runner

    async def watched(rec: SandboxRecord, deadline: Deadline) -> None:
        seen_while_adopting.append([r.id for r in sandbox_manager.list(ALICE)])
        await ensure_runner(rec, deadline)

    sandbox_manager.readiness.ensure_runner = watched  # type: ignore[method-assign]
    await sandbox_manager.reconcile()
    assert seen_while_adopting == []  # not even tried: its owner would see it until the adoption failed
    assert sandbox_manager.list(ALICE) == []
    with pytest.raises(BoxwrightError) as later:
        sandbox_manager.resolve(ALICE, rec.id)
    assert "was destroyed" in later.value.message


async def test_a_frozen_sandbox_is_an_rpc_timeout(sandbox_manager: SandboxManager, fake: FakeBackend) -> None:
    rec = await sandbox_manager.create(ALICE)
    fake.pause(rec.id)
    try:
        with pytest.raises(BoxwrightError) as info:
            await sandbox_manager.call(ALICE, None, methods.SANDBOX_INFO, SandboxInfoParams(), Deadline.after(0.5))
        assert error_of(info) is ErrorCode.RPC_TIMEOUT and info.value.details["containerStatus"] == "paused"
    finally:
        fake.unpause(rec.id)
    assert (await run(sandbox_manager, ALICE)).stdout == "42\n"


async def test_a_dead_code_runner_is_restarted_once(sandbox_manager: SandboxManager, fake: FakeBackend) -> None:
    rec = await sandbox_manager.create(ALICE)
    fake.kill_code_runner(rec.id)
    assert (await run(sandbox_manager, ALICE)).stdout == "42\n"
    assert fake.container(rec.id).runner is not None


async def test_a_restarted_server_adopts_healthy_sandboxes_and_removes_the_rest(
    host_settings: Settings, fake: FakeBackend
) -> None:
    keeping = host_settings.replace(keep_on_exit=True)
    first = SandboxManager(keeping, fake)
    await first.start()
    healthy = await first.create(ALICE)
    stopped = await first.create(ALICE)
    expired = await first.create(BOB)
    await first.close()  # hands the sandboxes over instead of destroying them
    fake.stop(stopped.id)
    expire_now(fake, expired.id, first.identity)
    gone = {labels.SANDBOX: "sbx_gone", labels.NAMESPACE: "unit", labels.SERVER: first.identity.server_id}
    fake.add_volume("boxwright-sbx_gone-workspace", {**gone, labels.SEAL: first.identity.seal(gone, labels.SEALED)})
    fake.policies.clear()

    second = SandboxManager(host_settings, fake)
    await second.start()
    try:
        assert [r.id for r in second.list(ALICE)] == [healthy.id] and second.list(BOB) == []
        assert {i.sandbox_id for i in fake.list_sandboxes("unit")} == {healthy.id}
        assert "boxwright-sbx_gone-workspace" not in fake.volumes
        adopted = second.resolve(ALICE, None)
        assert adopted.token == healthy.token and adopted.status is SandboxStatus.RUNNING
        assert (await run(second, ALICE)).stdout == "42\n"
        assert fake.policies[healthy.id].mode == "public"  # its policy was loaded again
    finally:
        await second.close()


async def test_a_live_servers_sandboxes_are_left_alone(
    sandbox_manager: SandboxManager, host_settings: Settings, fake: FakeBackend
) -> None:
    rec = await sandbox_manager.create(ALICE)
    other = SandboxManager(host_settings, fake)
    await other.start()  # reconciles: the lock is held by a live manager
    assert other.list(ALICE) == []
    await other.close()
    assert (await run(sandbox_manager, ALICE, rec.id)).exitCode == 0


async def test_servers_with_their_own_state_dirs_never_touch_each_others_sandboxes(
    host_settings: Settings, fake: FakeBackend, tmp_path
) -> None:
    """Two servers, one engine and namespace, two state dirs (two OS users): neither lists, adopts or
    removes the other's sandboxes — not while it runs, not after it died, not when it stops."""
    a = SandboxManager(host_settings.replace(keep_on_exit=True), fake)
    await a.start()
    kept = await a.create(ALICE)
    await a.close()  # A is gone (its sandbox stays, as with --keep-sandboxes or a SIGKILL)
    b = SandboxManager(host_settings.replace(state_dir=tmp_path / "b-state"), fake)
    await b.start()
    try:
        assert b.identity.server_id != a.identity.server_id
        assert b.list(ALICE) == [] and b.registry.record(kept.id) is None
        with pytest.raises(BoxwrightError):
            await run(b, ALICE, kept.id)
        await b.reap()
    finally:
        await b.close()  # a graceful stop destroys only what B manages
    assert [i.sandbox_id for i in fake.list_sandboxes("unit")] == [kept.id]
    # A, restarted with its own state dir, proves the sandbox is its own and adopts it.
    again = SandboxManager(host_settings, fake)
    await again.start()
    try:
        assert again.identity == a.identity and [r.id for r in again.list(ALICE)] == [kept.id]
        assert (await run(again, ALICE)).stdout == "42\n"  # the derived token still opens the agent
    finally:
        await again.close()


async def test_instances_sharing_an_identity_leave_each_others_sandboxes_alone(
    host_settings: Settings, fake: FakeBackend, tmp_path
) -> None:
    """Servers on two hosts with one identity (its file copied; their ownership locks cannot see each
    other): each adopts and reaps only what its own instance made, unless told to adopt for a peer."""
    a_settings = host_settings.replace(instance_id="host-a", keep_on_exit=True)
    a = SandboxManager(a_settings, fake)
    await a.start()
    live = await a.create(ALICE)
    stopped = await a.create(ALICE)
    await a.close()  # A's host goes away (its sandboxes stay, as after a SIGKILL)
    fake.stop(stopped.id)
    assert labels.decode(fake.container(live.id).labels).sandbox_id == live.id
    assert fake.container(live.id).labels[labels.INSTANCE] == "host-a"
    orphan = {labels.SANDBOX: "sbx_orphan", labels.NAMESPACE: "unit", labels.SERVER: a.identity.server_id}
    orphan[labels.INSTANCE] = "host-a"
    fake.add_volume("boxwright-sbx_orphan-workspace", {**orphan, labels.SEAL: a.identity.seal(orphan, labels.SEALED)})
    # An instance label changed after sealing is not the identity's any more.
    forged = dict(fake.container(live.id).labels, **{labels.INSTANCE: "host-b"})
    assert not labels.made_by(forged, a.identity)

    b_state = tmp_path / "b-state"
    b_state.mkdir(mode=0o700)
    (b_state / "identity.json").write_bytes((host_settings.state_dir / "identity.json").read_bytes())
    (b_state / "identity.json").chmod(0o600)
    b = SandboxManager(host_settings.replace(state_dir=b_state, instance_id="host-b"), fake)
    await b.start()
    try:
        assert b.identity == a.identity
        assert b.list(ALICE) == [] and b.registry.record(live.id) is None
        await b.reap()
    finally:
        await b.close()  # a graceful stop: B removes only what it manages
    assert {i.sandbox_id for i in fake.list_sandboxes("unit")} == {live.id, stopped.id}
    assert "boxwright-sbx_orphan-workspace" in fake.volumes

    # Told to adopt for host-a (retired for good), B takes over its live sandbox and cleans up the rest.
    peer = SandboxManager(
        host_settings.replace(state_dir=b_state, instance_id="host-b", adopt_instances=["host-a"]), fake
    )
    await peer.start()
    try:
        assert [r.id for r in peer.list(ALICE)] == [live.id]
        assert (await run(peer, ALICE)).stdout == "42\n"
        assert {i.sandbox_id for i in fake.list_sandboxes("unit")} == {live.id}
        assert "boxwright-sbx_orphan-workspace" not in fake.volumes
    finally:
        await peer.close()


def test_the_instance_is_configured_or_derived_from_the_machine(host_settings: Settings) -> None:
    derived = host_settings.instance
    assert derived.startswith("i_") and len(derived) == 14 and derived == host_settings.replace().instance
    assert host_settings.replace(instance_id="edge-1").instance == "edge-1"
    assert Settings(adopt_instances="edge-1, edge-2").adopt_instances == ["edge-1", "edge-2"]  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Settings(instance_id="has space")
    with pytest.raises(ValueError):
        Settings(adopt_instances="ok,not/ok")  # type: ignore[arg-type]


async def test_forged_or_foreign_labels_are_not_adopted(host_settings: Settings, fake: FakeBackend, tmp_path) -> None:
    """A container naming this server's id without its seal (or with labels changed after sealing) is not
    this server's; another server's stopped sandbox is removed only once it is long expired."""
    b = SandboxManager(host_settings.replace(state_dir=tmp_path / "b", keep_on_exit=True), fake)
    await b.start()
    running = await b.create(BOB)
    stopped = await b.create(BOB)
    await b.close()
    fake.stop(stopped.id)
    a = SandboxManager(host_settings, fake)
    forged = fake.container(running.id).labels
    forged[labels.SERVER] = a.identity.server_id  # claims to be A's, but B's seal does not verify under A
    assert not labels.made_by(forged, a.identity)
    await a.start()
    try:
        assert a.list(BOB) == []
        assert {i.sandbox_id for i in fake.list_sandboxes("unit")} == {running.id, stopped.id}
        # Long expired (past the grace) and stopped: dead for good, so anyone may remove it.
        fake.container(stopped.id).labels[labels.EXPIRES_AT] = "1"
        await a.reap()
        assert {i.sandbox_id for i in fake.list_sandboxes("unit")} == {running.id}
        # Running, even long expired: never (its agent ends it itself).
        fake.container(running.id).labels[labels.EXPIRES_AT] = "1"
        await a.reap()
        assert {i.sandbox_id for i in fake.list_sandboxes("unit")} == {running.id}
    finally:
        await a.close()


async def test_internal_allowlist_entries_need_the_operator(host_settings: Settings, fake: FakeBackend) -> None:
    refused = SandboxManager(host_settings, fake)
    with pytest.raises(BoxwrightError) as info:
        await refused.create(ALICE, network=NetworkPolicy(mode="allowlist", allowHosts=["pypi.org", "10.0.0.5"]))
    assert error_of(info) is ErrorCode.INVALID_PARAMETER and "BOXWRIGHT_INTERNAL_ALLOW_HOSTS" in info.value.hint
    assert info.value.details["errors"] == [
        {"field": "allowHosts.1", "message": "reaches the internal range 10.0.0.0/8"}
    ]
    assert fake.list_sandboxes("unit") == [] and refused.list(ALICE) == []  # nothing was started
    permitted = SandboxManager(host_settings.replace(internal_allow_hosts="10.0.0.0/24"), fake)
    rec = await permitted.create(ALICE, network=NetworkPolicy(mode="allowlist", allowHosts=["10.0.0.5"]))
    try:
        assert fake.policies[rec.id].internalAllowed == ["10.0.0.0/24"]
    finally:
        await permitted.close()


async def test_workspace_size_defaults_and_is_bounded(host_settings: Settings, fake: FakeBackend) -> None:
    m = SandboxManager(host_settings.replace(workspace_mb=512, max_workspace_mb=1024), fake)
    try:
        assert (await m.create(ALICE)).workspace_mb == 512
        rec = await m.create(ALICE, workspace_mb=1024)
        assert rec.workspace_mb == 1024 and rec.view().workspaceMb == 1024
        assert labels.decode(fake.container(rec.id).labels).workspace_mb == 1024
        with pytest.raises(BoxwrightError) as info:
            await m.create(ALICE, workspace_mb=1025)
        assert error_of(info) is ErrorCode.INVALID_PARAMETER and "BOXWRIGHT_MAX_WORKSPACE_MB" in info.value.hint
    finally:
        await m.close()
    unlimited = SandboxManager(host_settings.replace(workspace_quota="off"), fake)
    try:
        # Quota off: no limit is made, so a size asked for is refused (nothing starts) rather than ignored.
        before = len(fake.list_sandboxes("unit"))
        with pytest.raises(BoxwrightError) as info:
            await unlimited.create(ALICE, workspace_mb=64)
        assert error_of(info) is ErrorCode.INVALID_PARAMETER and "leave workspaceMb out" in info.value.hint
        assert "BOXWRIGHT_WORKSPACE_QUOTA=off" in str(info.value)
        assert len(fake.list_sandboxes("unit")) == before and len(unlimited.registry) == 0
        assert (await unlimited.create(ALICE)).workspace_mb is None
    finally:
        await unlimited.close()


async def test_swarm_refuses_a_workspace_size_it_cannot_enforce(host_settings: Settings, fake: FakeBackend) -> None:
    """On swarm no workspace limit is made (docs/fleet.md): a size asked for is refused before anything
    starts, and the sandboxes made there say they have no limit rather than echo the default."""
    m = SandboxManager(host_settings.replace(backend="swarm"), fake)
    try:
        with pytest.raises(BoxwrightError) as info:
            await m.create(ALICE, workspace_mb=64)
        assert error_of(info) is ErrorCode.INVALID_PARAMETER and "workspaceMb" in info.value.hint
        assert info.value.details["errors"][0]["field"] == "workspaceMb" and info.value.details["backend"] == "swarm"
        assert fake.list_sandboxes("unit") == [] and len(m.registry) == 0
        rec = await m.create(ALICE)
        assert rec.workspace_mb is None and rec.view().workspaceMb is None
        assert labels.decode(fake.container(rec.id).labels).workspace_mb is None
    finally:
        await m.close()
