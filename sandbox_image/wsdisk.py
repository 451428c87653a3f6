"""Size-limited workspaces: each sandbox's /workspace is its own ext4 filesystem in a sparse image file
on a loop device, so the kernel stops writes at the size (ENOSPC) and the host's disk never fills.

    python3 -m sandbox_image.wsdisk make ROOT SERVER SANDBOX_ID SIZE_MB   → prints the loop device
    python3 -m sandbox_image.wsdisk free ROOT SANDBOX_ID
    python3 -m sandbox_image.wsdisk sweep ROOT SERVER GRACE_S [LIVE_ID …]

Needs root (loop devices) on the engine's host. The host runs these functions itself when it is root
next to a local engine, and otherwise in a short-lived privileged helper container of the sandbox
image (host.backends.workspace): that is why this is plain standard library plus e2fsprogs and
losetup, like netguard. Images live in ROOT/SERVER/SANDBOX_ID.img; a blank filesystem per size is
made once (ROOT/templates) and copied sparsely, so a new workspace costs a copy and a losetup.
The engine mounts the device as the sandbox's volume (`nodev,nosuid`, `discard` so deleted files
give their space back to the host); `free` detaches it and deletes the image.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import struct
import subprocess
import sys
import time
from pathlib import Path

RUNNER_UID, SANDBOX_GID = 1001, 1500  # the image's runner user and sandbox group (Dockerfile.sandbox)
MOUNT_OPTIONS = "nodev,nosuid,noinit_itable,discard"
# <linux/loop.h>
LOOP_SET_FD, LOOP_CLR_FD, LOOP_GET_STATUS64, LOOP_SET_DIRECT_IO, LOOP_CONFIGURE, LOOP_CTL_GET_FREE = (
    0x4C00,
    0x4C01,
    0x4C05,
    0x4C08,
    0x4C0A,
    0x4C82,
)
LO_FLAGS_DIRECT_IO = 16
LOOP_MAJOR = 7
_INFO64 = struct.Struct("=QQ")  # the start of struct loop_info64: lo_device, lo_inode (the backing file's)
_INFO64_SIZE = 232
# struct loop_config: fd, block_size, then struct loop_info64 (only lo_flags set, at byte 52 of it) and
# 64 reserved bytes.
_CONFIG = struct.Struct(f"=II52xI{_INFO64_SIZE - 56}x64x")
_DEBUGFS = "rmdir lost+found\nsif <2> mode 042775\n"  # the image's /workspace: runner:sandbox, setgid, 2775


def _run(*argv: str, stdin: str | None = None) -> str:
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed: {(done.stderr or done.stdout).strip()[-300:]}")
    return done.stdout.strip()


def template(root: Path, size_mb: int) -> Path:
    """A blank workspace filesystem of `size_mb`, made once per size."""
    path = root / "templates" / f"ext4-{size_mb}m.img"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.truncate(size_mb << 20)
        # No journal (a workspace does not outlive its host), no blocks reserved for root, inode tables
        # left unzeroed (a new sparse file reads as zeros already).
        _run("mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^has_journal",
             "-E", f"root_owner={RUNNER_UID}:{SANDBOX_GID},lazy_itable_init=1,nodiscard", str(tmp))  # fmt: skip
        _run("debugfs", "-w", "-f", "-", str(tmp), stdin=_DEBUGFS)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return path


def make(root: Path, server: str, sandbox_id: str, size_mb: int) -> str:
    """A fresh workspace image for the sandbox, attached to a loop device; returns the device."""
    blank = template(root, size_mb)
    image = root / server / f"{sandbox_id}.img"
    image.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    _run("cp", "--sparse=always", str(blank), str(image))
    try:
        return attach(image)
    except BaseException:
        image.unlink(missing_ok=True)
        raise


def _node(number: int) -> str:
    """/dev/loopN, made when missing (a container's /dev holds only what it was given)."""
    node = f"/dev/loop{number}"
    if not os.path.exists(node):
        with contextlib.suppress(FileExistsError):
            os.mknod(node, 0o600 | stat.S_IFBLK, os.makedev(LOOP_MAJOR, number))
    return node


def attach(image: Path, *, tries: int = 20) -> str:
    """Bind `image` to a free loop device (direct I/O: no second copy in the page cache)."""
    ctl = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
    backing = os.open(image, os.O_RDWR | os.O_CLOEXEC)
    try:
        for _ in range(tries):
            node = _node(fcntl.ioctl(ctl, LOOP_CTL_GET_FREE))
            device = os.open(node, os.O_RDWR | os.O_CLOEXEC)
            try:
                _bind(device, backing)
            except OSError as exc:
                if exc.errno == errno.EBUSY:  # taken by someone else meanwhile
                    continue
                raise
            finally:
                os.close(device)
            return node
        raise RuntimeError("no free loop device")
    finally:
        os.close(backing)
        os.close(ctl)


def _bind(device: int, backing: int) -> None:
    """One LOOP_CONFIGURE with direct I/O (Linux 5.8+): ~1 ms, where LOOP_SET_FD then LOOP_SET_DIRECT_IO
    freeze the device's queue once more, ~20 ms on every sandbox start. Older kernels take the two steps;
    direct I/O is an optimisation there, so its failure is ignored."""
    try:
        fcntl.ioctl(device, LOOP_CONFIGURE, _CONFIG.pack(backing, 0, LO_FLAGS_DIRECT_IO))
        return
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTTY):
            raise
    fcntl.ioctl(device, LOOP_SET_FD, backing)
    with contextlib.suppress(OSError):
        fcntl.ioctl(device, LOOP_SET_DIRECT_IO, 1)


def devices_of(image: Path) -> list[str]:
    """Loop devices backed by `image`, matched by the file's device and inode (paths differ between a
    helper container and the host)."""
    info = image.stat()
    return devices_backed_by(info.st_dev, info.st_ino)


def devices_backed_by(dev: int, ino: int) -> list[str]:
    """Loop devices whose backing file is inode `ino` of device `dev`."""
    found = []
    for block in Path("/sys/block").glob("loop*"):
        if not (block / "loop").exists():  # not bound to any file
            continue
        node = _node(int(block.name.removeprefix("loop")))
        with contextlib.suppress(OSError), open(node, "rb") as device:
            status = fcntl.ioctl(device, LOOP_GET_STATUS64, bytes(_INFO64_SIZE))
            if _INFO64.unpack_from(status) == (dev, ino):
                found.append(node)
    return found


def detach(node: str) -> None:
    """Unbind a loop device; one still mounted is only marked to unbind once unmounted (never an error)."""
    with contextlib.suppress(OSError), open(node, "rb") as device:
        fcntl.ioctl(device, LOOP_CLR_FD, 0)


def free(root: Path, sandbox_id: str) -> int:
    """Detach and delete the sandbox's workspace image (whichever server made it); returns how many."""
    images = list(root.glob(f"*/{sandbox_id}.img"))
    for image in images:
        _release(image)
    return len(images)


def _release(image: Path) -> None:
    for device in devices_of(image):
        detach(device)
    image.unlink(missing_ok=True)


OWN_MIN_AGE_S = 60.0  # another process of the same server may be creating that sandbox right now


def sweep(root: Path, server: str, live: set[str], grace_s: float) -> list[str]:
    """Free images whose sandbox is not in `live`: this server's once a minute old, other servers' only
    once they are `grace_s` old, and never younger than a minute (a live server may be creating that
    sandbox right now: its image exists a moment before its volume and container do)."""
    freed = []
    now = time.time()
    foreign_age = max(grace_s, OWN_MIN_AGE_S)
    for image in root.glob("*/*.img"):
        if image.parent.name == "templates" or image.stem in live:
            continue
        with contextlib.suppress(FileNotFoundError):
            if now - image.stat().st_mtime > (OWN_MIN_AGE_S if image.parent.name == server else foreign_age):
                _release(image)
                freed.append(image.stem)
    return freed


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["make"] and len(argv) == 5:
            print(make(Path(argv[1]), argv[2], argv[3], int(argv[4])))
        elif argv[:1] == ["free"] and len(argv) == 3:
            print(free(Path(argv[1]), argv[2]))
        elif argv[:1] == ["sweep"] and len(argv) >= 4:
            print(json.dumps(sweep(Path(argv[1]), argv[2], set(argv[4:]), float(argv[3]))))
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except (RuntimeError, OSError, ValueError) as exc:
        print(f"wsdisk: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
