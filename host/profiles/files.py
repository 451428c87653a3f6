"""Files of a profile, written so that a reader sees the old content or the new, never half of one:
a temporary file in the profile's `tmp/`, fsync, rename over the target, fsync of the directory.
Directories and files get the configured modes (700/600 by default) whatever the umask."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def ensure_dir(path: Path, mode: int) -> None:
    path.mkdir(mode=mode, exist_ok=True)
    os.chmod(path, mode)  # mkdir's mode is filtered by the umask; chmod is not


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(target: Path, data: bytes, *, tmp_dir: Path, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(dir=tmp_dir, prefix=f"{target.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, target)
        fsync_dir(target.parent)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
