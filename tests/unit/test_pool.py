"""The warm pool over a FakeBackend (real agents and code runners in this process): claims hand out
distinct sandboxes with fresh tokens, a sandbox that is dead or ever served a call is replaced and
never handed out, other network modes start cold, job sandboxes come from the pool, a restarted
server adopts pooled and claimed sandboxes, and a graceful stop drains the pool."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from host.agent_client import AgentEndpoint
from host.cli import main
from host.config import Settings
from host.sandboxes.jobs import JobSandboxes
from host.sandboxes.manager import SandboxManager
from host.sandboxes.models import Caller, SandboxStatus
from host.testing.fake_backend import FakeBackend
from rpc import methods
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.code import CodeRunParams
from rpc.models.files import FileListParams, FileWriteParams
from rpc.models.network import NetworkPolicy
from rpc.models.sandbox import SandboxClaimParams, SandboxInfoParams
from sandbox_image import lifetime

ALICE = Caller(owner="alice", session="s1")
BOB = Caller(owner="bob", session="s1")


@pytest.fixture
def pool_settings(host_settings: Settings) -> Settings:
    return host_settings.replace(pool_size=2)


@pytest.fixture
async def pooled_manager(pool_settings: Settings, fake: FakeBackend) -> AsyncIterator[SandboxManager]:
    mgr = SandboxManager(pool_settings, fake)
    await mgr.start()
    await mgr.pool._refill()
    assert len(mgr.pool.ready()) == 2
    yield mgr
    await mgr.close()


async def pool_holds(mgr: SandboxManager, count: int) -> None:
    for _ in range(600):
        if len(mgr.pool.ready()) >= count:
            return
        await anyio.sleep(0.05)
    raise AssertionError(f"the pool holds {len(mgr.pool.ready())}, not {count}")


async def info(mgr: SandboxManager, endpoint: AgentEndpoint) -> None:
    await mgr.agent.call(endpoint, methods.SANDBOX_INFO, SandboxInfoParams(), Deadline.after(5))


async def test_two_creates_get_different_pooled_sandboxes_with_fresh_tokens(
    pooled_manager: SandboxManager, fake: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    mgr = pooled_manager
    pool_endpoints = {r.id: r.endpoint for r in mgr.pool.ready()}
    agent_lifetime = lifetime.Lifetime(0, 60)  # the agents' own end (in-process agents share it here)
    monkeypatch.setattr(lifetime, "CURRENT", agent_lifetime)
    first = await mgr.create(ALICE, name="one", ttl_s=120)
    assert agent_lifetime.expires_at == int(first.expires_at.timestamp())  # the claim moved it
    second = await mgr.create(BOB)
    assert {first.id, second.id} == set(pool_endpoints) and first.id != second.id
    assert first.pooled and second.pooled and mgr.pool.ready() == []
    assert (first.owner, first.name, second.owner) == ("alice", "one", "bob")
    assert 119 <= (first.expires_at - first.created_at).total_seconds() <= 120
    assert first.token != second.token
    for rec in (first, second):
        old = pool_endpoints[rec.id]
        assert old is not None and rec.endpoint is not None and old.token != rec.token
        with pytest.raises(BoxwrightError) as refused:  # the pool's token died with the claim
            await info(mgr, old)
        assert refused.value.code is ErrorCode.UNAUTHORIZED
        await info(mgr, rec.endpoint)
        assert (
            fake.container(rec.id).settings.workspace
            != fake.container(first.id if rec is second else second.id).settings.workspace
        )
    run = (
        await mgr.call(
            ALICE, None, methods.CODE_RUN, CodeRunParams(language="python", code="print(7)"), Deadline.after(20)
        )
    )[1]
    assert run.stdout == "7\n"
    listing = (await mgr.call(BOB, None, methods.FILE_LIST, FileListParams(path="."), Deadline.after(5)))[1]
    assert listing.entries == []  # bob's workspace is his own and fresh
    assert mgr.resolve(ALICE, None).id == first.id  # a pooled sandbox becomes the default like a cold one


async def test_a_claim_cannot_be_repeated(pooled_manager: SandboxManager) -> None:
    rec = await pooled_manager.create(ALICE)
    assert rec.endpoint is not None
    with pytest.raises(BoxwrightError) as again:
        await pooled_manager.agent.call(
            rec.endpoint, methods.SANDBOX_CLAIM, SandboxClaimParams(tokenSha256="0" * 64), Deadline.after(5)
        )
    assert again.value.code is ErrorCode.INVALID_REQUEST and again.value.hint
    await info(pooled_manager, rec.endpoint)  # still the owner's token


async def test_a_dead_pooled_sandbox_is_replaced_never_handed_out(
    pooled_manager: SandboxManager, fake: FakeBackend
) -> None:
    dead, alive = pooled_manager.pool.ready()
    fake.stop(dead.id)  # its agent died
    rec = await pooled_manager.create(ALICE)
    assert rec.id == alive.id
    assert dead.id not in {c.sandbox_id for c in fake.list_sandboxes("unit")}  # removed, not kept
    # The next create finds the pool empty and starts one cold.
    cold = await pooled_manager.create(ALICE)
    assert not cold.pooled and cold.status is SandboxStatus.RUNNING


async def test_a_pooled_sandbox_another_server_took_is_neither_handed_out_nor_removed(
    pooled_manager: SandboxManager, fake: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On swarm, servers on several hosts may hold the same pooled sandbox: the backend's claim decides."""
    taken, free = pooled_manager.pool.ready()
    asked: list[tuple[str, str]] = []

    def try_claim(container_id: str, claimant: str) -> bool:
        asked.append((container_id, claimant))
        return container_id != taken.container_id  # another server's update landed first

    monkeypatch.setattr(fake, "try_claim", try_claim)
    rec = await pooled_manager.create(ALICE)
    assert rec.id == free.id and rec.pooled
    assert [c for c, _ in asked] == [taken.container_id, free.container_id]
    assert asked[0][1].startswith(pooled_manager.identity.server_id + "/")
    # Theirs now: still running, and not in this server's registry or pool.
    assert taken.id in {c.sandbox_id for c in fake.list_sandboxes("unit")}
    assert pooled_manager.registry.record(taken.id) is None and not pooled_manager.pool.holds(taken.id)


async def test_a_pooled_sandbox_that_served_a_call_is_never_handed_out(pooled_manager: SandboxManager) -> None:
    used, fresh = pooled_manager.pool.ready()
    assert used.endpoint is not None
    await pooled_manager.agent.call(
        used.endpoint, methods.FILE_WRITE, FileWriteParams(path="left.txt", content="x"), Deadline.after(5)
    )
    rec = await pooled_manager.create(ALICE)
    assert rec.id == fresh.id
    assert pooled_manager.registry.record(used.id) is None and not pooled_manager.pool.holds(used.id)


async def test_the_health_check_replaces_a_broken_pooled_sandbox(
    pooled_manager: SandboxManager, fake: FakeBackend
) -> None:
    broken, kept = pooled_manager.pool.ready()
    fake.kill_code_runner(broken.id)
    await pooled_manager.pool.check()
    assert [r.id for r in pooled_manager.pool.ready()] == [kept.id]
    await pooled_manager.pool._refill()
    assert len(pooled_manager.pool.ready()) == 2 and broken.id not in {r.id for r in pooled_manager.pool.ready()}


async def test_other_network_modes_start_cold(pooled_manager: SandboxManager) -> None:
    rec = await pooled_manager.create(ALICE, network=NetworkPolicy(mode="none"))
    assert not rec.pooled and len(pooled_manager.pool.ready()) == 2
    allow = await pooled_manager.create(ALICE, network=NetworkPolicy(mode="allowlist", allowHosts=["example.org"]))
    assert not allow.pooled


async def test_limits_still_hold_for_pooled_sandboxes(pool_settings: Settings, fake: FakeBackend) -> None:
    mgr = SandboxManager(pool_settings.replace(max_sandboxes_per_owner=1), fake)
    await mgr.start()
    try:
        await mgr.pool._refill()
        await mgr.create(ALICE)
        with pytest.raises(BoxwrightError) as full:
            await mgr.create(ALICE)
        assert full.value.code is ErrorCode.SANDBOX_LIMIT_REACHED
        assert len(mgr.pool.ready()) == 1  # the refused create took nothing from the pool
    finally:
        await mgr.close()


async def test_job_sandboxes_come_from_the_pool(pooled_manager: SandboxManager) -> None:
    jobs = JobSandboxes(pooled_manager)
    rec = await jobs.acquire(ALICE, "run_1")
    assert rec.pooled and rec.job == "run_1"
    assert pooled_manager.default_id(ALICE) is None
    await jobs.release(rec)
    assert pooled_manager.registry.record(rec.id) is None


async def test_the_pool_refills_in_the_background(pool_settings: Settings, fake: FakeBackend) -> None:
    mgr = SandboxManager(pool_settings.replace(reap_interval=0.2), fake)
    await mgr.start()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(mgr.pool.run)
            await pool_holds(mgr, 2)
            taken = await mgr.create(ALICE)
            assert taken.pooled
            await pool_holds(mgr, 2)
            assert taken.id not in {r.id for r in mgr.pool.ready()}
            tg.cancel_scope.cancel()
    finally:
        await mgr.close()


async def test_a_restarted_server_adopts_pooled_and_claimed_sandboxes(
    pool_settings: Settings, fake: FakeBackend, tmp_path: Path
) -> None:
    first = SandboxManager(pool_settings.replace(keep_on_exit=True), fake)
    await first.start()
    await first.pool._refill()
    claimed = await first.create(ALICE, name="kept", ttl_s=600)
    still_pooled = first.pool.ready()[0]
    await first.close()  # keep_on_exit: hands everything over

    second = SandboxManager(pool_settings, fake)
    await second.start()
    try:
        assert [r.id for r in second.pool.ready()] == [still_pooled.id]
        adopted = second.resolve(ALICE, claimed.id)
        assert (adopted.owner, adopted.name, adopted.token, adopted.expires_at) == (
            "alice",
            "kept",
            claimed.token,
            claimed.expires_at,
        )
        assert second.list(BOB) == [] and [r.id for r in second.list(ALICE)] == [claimed.id]
        run = (
            await second.call(
                ALICE, claimed.id, methods.CODE_RUN, CodeRunParams(language="bash", code="echo hi"), Deadline.after(20)
            )
        )[1]
        assert run.stdout == "hi\n"
    finally:
        await second.close()
    assert fake.list_sandboxes("unit") == []  # a graceful stop drains the pool and removes the rest
    assert second.overlays.ids() == set()


async def test_ls_shows_pooled_sandboxes_apart_and_claimed_ones_with_their_owner(
    pooled_manager: SandboxManager,
    pool_settings: Settings,
    fake: FakeBackend,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("BOXWRIGHT_STATE_DIR", str(pool_settings.state_dir))
    monkeypatch.setenv("BOXWRIGHT_NAMESPACE", pool_settings.namespace)
    claimed = await pooled_manager.create(ALICE, name="mine")
    [waiting] = pooled_manager.pool.ready()
    assert main(["ls"], make_backend=lambda _: fake) == 0
    lines = capsys.readouterr().out.splitlines()
    split = lines.index("warm pool (ready, never used): 1")
    assert [line.split()[:3] for line in lines[1:split] if line] == [[claimed.id, "alice", "mine"]]
    assert [line.split()[:3] for line in lines[split + 2 :]] == [[waiting.id, "-", "-"]]


async def test_pool_browser_prelaunches_chromium_in_pooled_sandboxes_only(
    host_settings: Settings, fake: FakeBackend
) -> None:
    mgr = SandboxManager(host_settings.replace(pool_size=1, pool_browser=True), fake)
    await mgr.start()
    try:
        await mgr.pool._refill()
        pooled = await mgr.create(ALICE)
        cold = await mgr.create(ALICE)
        assert pooled.pooled and fake.container(pooled.id).settings.browser_prelaunch
        assert not cold.pooled and not fake.container(cold.id).settings.browser_prelaunch
    finally:
        await mgr.close()


async def test_a_refill_waits_after_a_claim_and_pooled_sandboxes_wait_at_a_low_cpu_weight(
    pool_settings: Settings, fake: FakeBackend
) -> None:
    """Refills yield to live work: the claimant's first calls do not share the CPUs with a sandbox starting
    (the refill starts pool_refill_delay after the claim), and a pooled sandbox weighs little until claimed."""
    settings = pool_settings.replace(pool_size=1, reap_interval=0.05, pool_refill_delay=1.0, pool_cpu_shares=64)
    mgr = SandboxManager(settings, fake)
    await mgr.start()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(mgr.pool.run)
            await pool_holds(mgr, 1)
            [waiting] = mgr.pool.ready()
            assert fake.container(waiting.id).cpu_shares == 64
            cold = await mgr.create(ALICE, network=NetworkPolicy(mode="none"))
            assert fake.container(cold.id).cpu_shares is None  # the normal weight (hardening's)
            claimed_at = anyio.current_time()
            taken = await mgr.create(ALICE)
            assert taken.id == waiting.id
            await anyio.sleep(0.6)  # well past a reap interval, within the delay: nothing started yet
            assert mgr.pool.ready() == [] and not mgr.pool._starting
            assert fake.container(taken.id).cpu_shares == 1024  # raised in the background right away
            await pool_holds(mgr, 1)
            assert anyio.current_time() - claimed_at >= 1.0
            assert fake.container(mgr.pool.ready()[0].id).cpu_shares == 64
            tg.cancel_scope.cancel()
    finally:
        await mgr.close()


async def test_a_pooled_sandbox_of_an_old_image_is_drained_never_handed_out_and_claimed_ones_stay(
    pool_settings: Settings, fake: FakeBackend
) -> None:
    first = SandboxManager(pool_settings.replace(keep_on_exit=True), fake)
    await first.start()
    await first.pool._refill()
    claimed = await first.create(ALICE, name="users")
    old_pooled = first.pool.ready()[0]
    assert claimed.image_id == old_pooled.image_id == f"sha256:{pool_settings.image}"
    await first.close()  # hands everything over
    fake.image_ids[pool_settings.image] = "sha256:rebuilt"  # the image was rebuilt between the two servers

    second = SandboxManager(pool_settings, fake)
    await second.start()
    try:
        assert second.pool.ready() == []  # not adopted
        assert old_pooled.id not in {c.sandbox_id for c in fake.list_sandboxes("unit")}  # and removed
        assert second.resolve(ALICE, claimed.id).image_id == claimed.image_id  # the owner's: left alone
        await second.pool._refill()
        fresh = await second.create(BOB)
        assert fresh.pooled and fresh.image_id == "sha256:rebuilt"
        # Rebuilt again while the server runs: the check drains the pool before anyone gets one.
        fake.image_ids[pool_settings.image] = "sha256:again"
        await second.pool.check()
        assert second.pool.ready() == []
        await second.pool._refill()
        assert {r.image_id for r in second.pool.ready()} == {"sha256:again"}
        # Between a rebuild and the next check, a claim still hands out no old one.
        fake.image_ids[pool_settings.image] = "sha256:third"
        second.pool._image_id = "sha256:third"  # what the check would have read
        cold = await second.create(BOB)
        assert not cold.pooled and second.pool.ready() == []
    finally:
        await second.close()


@pytest.mark.parametrize(
    "changed",
    [{"network": "none"}, {"mem_limit": "1g"}, {"cpus": 0.5}],
    ids=["network", "memory", "cpus"],
)
async def test_a_pooled_sandbox_started_under_other_settings_is_never_adopted_or_handed_out(
    pool_settings: Settings, fake: FakeBackend, changed: dict[str, object]
) -> None:
    """A server killed with a public pool and started again with BOXWRIGHT_NETWORK=none handed the old
    pool's sandbox to a caller asking for network none: a public one, said to be from the pool."""
    first = SandboxManager(pool_settings.replace(keep_on_exit=True, network="public"), fake)
    await first.start()
    await first.pool._refill()
    old = {r.id for r in first.pool.ready()}
    await first.close()  # hands the pool over, as a crash would leave it

    settings = pool_settings.replace(**{"network": "public", **changed})
    second = SandboxManager(settings, fake)
    await second.start()
    try:
        assert second.pool.ready() == [] and not old & {c.sandbox_id for c in fake.list_sandboxes("unit")}
        rec = await second.create(ALICE, network=NetworkPolicy(mode=settings.network))
        assert rec.id not in old and (rec.network, rec.memory_bytes, rec.cpus) == (
            settings.network, settings.memory_bytes, settings.cpus
        )  # fmt: skip
        # One already in the pool when the settings differ (an edited record, a bug): the claim refuses it too.
        await second.pool._refill()
        second.pool.ready()[0].network = "public" if settings.network == "none" else "none"
        handed = await second.create(ALICE, network=NetworkPolicy(mode=settings.network))
        assert handed.network == settings.network
    finally:
        await second.close()


async def test_the_quota_counts_each_sandbox_at_the_limits_it_was_started_with(
    host_settings: Settings, fake: FakeBackend
) -> None:
    """Under a 4g total at 2g each, an owner with two sandboxes could make two more after a restart at 1g
    (6 GiB in all), the refusal then claiming 4096 MiB were held."""
    first = SandboxManager(host_settings.replace(keep_on_exit=True, mem_limit="2g", max_memory_per_owner="4g"), fake)
    await first.start()
    await first.create(ALICE)
    await first.create(ALICE)
    await first.close()
    second = SandboxManager(host_settings.replace(mem_limit="1g", max_memory_per_owner="4g"), fake)
    await second.start()
    try:
        with pytest.raises(BoxwrightError) as refused:
            await second.create(ALICE)
        assert refused.value.code is ErrorCode.QUOTA_EXCEEDED and refused.value.details["usedBytes"] == 4 * 1024**3
    finally:
        await second.close()


async def test_the_pool_counts_against_max_sandboxes(pool_settings: Settings, fake: FakeBackend) -> None:
    """BOXWRIGHT_MAX_SANDBOXES is the most sandboxes the server runs: the pool refills only while live +
    pooled < max, a claim moves one from the pool to live, and a cold create drains a pooled one for room."""
    mgr = SandboxManager(pool_settings.replace(max_sandboxes=3, max_sandboxes_per_owner=5), fake)
    await mgr.start()
    try:

        def running() -> int:
            return len(fake.list_sandboxes("unit"))

        await mgr.pool._refill()
        assert len(mgr.pool.ready()) == 2 and running() == 2
        await mgr.create(ALICE)  # live 1, pool 1: room for one more
        await mgr.pool._refill()
        assert len(mgr.pool.ready()) == 2 and running() == 3
        await mgr.create(ALICE)  # live 2, pool 1: full
        await mgr.pool._refill()
        assert len(mgr.pool.ready()) == 1 and running() == 3
        cold = await mgr.create(ALICE, network=NetworkPolicy(mode="none"))  # drains the pooled one
        assert not cold.pooled and mgr.pool.ready() == [] and running() == 3
        await mgr.pool._refill()
        assert mgr.pool.ready() == [] and running() == 3
        with pytest.raises(BoxwrightError) as full:
            await mgr.create(ALICE)
        assert full.value.code is ErrorCode.SANDBOX_LIMIT_REACHED and full.value.details["scope"] == "server"
        await mgr.destroy(ALICE, cold.id)
        await mgr.pool._refill()
        assert len(mgr.pool.ready()) == 1 and running() == 3
    finally:
        await mgr.close()
