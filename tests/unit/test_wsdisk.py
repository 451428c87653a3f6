"""How a workspace image is bound to its loop device (sandbox_image.wsdisk): one LOOP_CONFIGURE with
direct I/O, and the two older ioctls on kernels without it. The real devices: tests/integration/
test_workspace_limit.py."""

from __future__ import annotations

import errno
import os
import struct
import time
from pathlib import Path
from typing import Any

import pytest

from sandbox_image import wsdisk


class FakeIoctl:
    def __init__(self, refuse_configure: int | None = None) -> None:
        self.calls: list[tuple[int, Any]] = []
        self.refuse_configure = refuse_configure

    def __call__(self, fd: int, request: int, arg: Any = 0) -> int:
        self.calls.append((request, arg))
        if request == wsdisk.LOOP_CONFIGURE and self.refuse_configure is not None:
            raise OSError(self.refuse_configure, "refused")
        return 0


def test_one_loop_configure_binds_the_image_with_direct_io(monkeypatch: pytest.MonkeyPatch) -> None:
    ioctl = FakeIoctl()
    monkeypatch.setattr(wsdisk.fcntl, "ioctl", ioctl)
    wsdisk._bind(device=5, backing=7)
    [(request, config)] = ioctl.calls
    assert request == wsdisk.LOOP_CONFIGURE
    assert len(config) == 304  # sizeof(struct loop_config)
    fd, block_size = struct.unpack_from("=II", config, 0)
    (flags,) = struct.unpack_from("=I", config, 8 + 52)  # loop_info64.lo_flags
    assert (fd, block_size, flags) == (7, 0, wsdisk.LO_FLAGS_DIRECT_IO)
    assert config.count(0) == len(config) - 2  # nothing else set: two non-zero bytes (7 and 16)


@pytest.mark.parametrize("missing", [errno.EINVAL, errno.ENOTTY])
def test_kernels_without_loop_configure_take_the_two_steps(monkeypatch: pytest.MonkeyPatch, missing: int) -> None:
    ioctl = FakeIoctl(refuse_configure=missing)
    monkeypatch.setattr(wsdisk.fcntl, "ioctl", ioctl)
    wsdisk._bind(device=5, backing=7)
    assert [request for request, _ in ioctl.calls] == [
        wsdisk.LOOP_CONFIGURE,
        wsdisk.LOOP_SET_FD,
        wsdisk.LOOP_SET_DIRECT_IO,
    ]
    assert ioctl.calls[1][1] == 7


def test_a_device_taken_meanwhile_is_not_bound_the_old_way(monkeypatch: pytest.MonkeyPatch) -> None:
    ioctl = FakeIoctl(refuse_configure=errno.EBUSY)  # attach() moves on to the next free device
    monkeypatch.setattr(wsdisk.fcntl, "ioctl", ioctl)
    with pytest.raises(OSError) as caught:
        wsdisk._bind(device=5, backing=7)
    assert caught.value.errno == errno.EBUSY and len(ioctl.calls) == 1


def test_the_sweep_leaves_young_images_of_other_servers_whatever_the_grace(tmp_path: Path) -> None:
    """With BOXWRIGHT_FOREIGN_GRACE=0 another server's just-made image (its volume and container do not
    exist yet) was freed under its create: 4 of 6 creates failed with an I/O error on mount."""
    now = time.time()

    def image(server: str, sandbox: str, age_s: float) -> Path:
        path = tmp_path / server / f"{sandbox}.img"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"")
        os.utime(path, (now - age_s, now - age_s))
        return path

    young_foreign, old_foreign = image("srv-b", "sbx_young", 5), image("srv-b", "sbx_old", 120)
    young_own, old_own = image("srv-a", "sbx_mine_young", 5), image("srv-a", "sbx_mine_old", 120)
    live_foreign = image("srv-c", "sbx_running", 3600)
    freed = wsdisk.sweep(tmp_path, "srv-a", {"sbx_running"}, grace_s=0)
    assert sorted(freed) == ["sbx_mine_old", "sbx_old"]
    assert young_foreign.exists() and young_own.exists() and live_foreign.exists()
    assert not old_foreign.exists() and not old_own.exists()
