"""Per-owner memory and CPU totals over a FakeBackend: a create past a total is QUOTA_EXCEEDED with the
numbers, before anything is started or taken from the pool; other owners are not affected; job
sandboxes count too; a bad setting stops the server naming its variable."""

from __future__ import annotations

import pytest

from host.config import Settings, size_bytes
from host.sandboxes.jobs import JobSandboxes
from host.sandboxes.manager import SandboxManager
from host.sandboxes.models import Caller
from host.testing.fake_backend import FakeBackend
from rpc.errors import BoxwrightError, ErrorCode
from rpc.settings import SettingsError

ALICE = Caller(owner="alice", session="s1")
BOB = Caller(owner="bob", session="s1")


async def test_over_the_memory_total_is_a_clear_quota_error_and_nothing_is_made(
    host_settings: Settings, fake: FakeBackend
) -> None:
    settings = host_settings.replace(mem_limit="2g", max_memory_per_owner="5g", pool_size=1)
    mgr = SandboxManager(settings, fake)
    await mgr.start()
    try:
        await mgr.pool._refill()
        await mgr.create(ALICE)  # from the pool
        await mgr.create(ALICE)  # cold
        await mgr.pool._refill()
        before = (len(fake.list_sandboxes("unit")), dict(fake.volumes), [r.id for r in mgr.pool.ready()])
        with pytest.raises(BoxwrightError) as refused:
            await mgr.create(ALICE)
        exc = refused.value
        assert exc.code is ErrorCode.QUOTA_EXCEEDED and "quota" in exc.hint
        assert dict(exc.details) == {
            "resource": "memory",
            "limitBytes": 5 * 1024**3,
            "usedBytes": 4 * 1024**3,
            "requestedBytes": 2 * 1024**3,
        }
        assert "2048 MiB" in exc.message and "5120 MiB" in exc.message
        # Nothing half-created: no container, volume, record or overlay, and the pool kept its sandbox.
        assert (len(fake.list_sandboxes("unit")), dict(fake.volumes), [r.id for r in mgr.pool.ready()]) == before
        assert len(mgr.list(ALICE)) == 2 and len(mgr.overlays.ids()) == 1  # the claimed one's
        await mgr.create(BOB)  # another owner has a total of their own
        with pytest.raises(BoxwrightError) as job:
            JobSandboxes(mgr).check_room(ALICE)
        assert job.value.code is ErrorCode.QUOTA_EXCEEDED
    finally:
        await mgr.close()


async def test_over_the_cpu_total(host_settings: Settings, fake: FakeBackend) -> None:
    mgr = SandboxManager(host_settings.replace(cpus=1.5, max_cpus_per_owner=3), fake)
    await mgr.start()
    try:
        await mgr.create(ALICE)
        await mgr.create(ALICE)
        with pytest.raises(BoxwrightError) as refused:
            await mgr.create(ALICE)
        assert refused.value.code is ErrorCode.QUOTA_EXCEEDED and refused.value.details["resource"] == "cpus"
        assert len(fake.list_sandboxes("unit")) == 2
    finally:
        await mgr.close()


def test_sizes_and_bad_settings() -> None:
    assert [size_bytes(s) for s in ("512m", "2g", "1.5G", "100")] == [512 * 1024**2, 2 * 1024**3, 3 * 1024**3 // 2, 100]
    with pytest.raises(SettingsError, match="BOXWRIGHT_MAX_MEMORY_PER_OWNER"):
        Settings.load(max_memory_per_owner="lots")
    with pytest.raises(SettingsError, match="BOXWRIGHT_MAX_CPUS_PER_OWNER"):
        Settings.load(max_cpus_per_owner=0)
