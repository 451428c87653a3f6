"""The durable store of template runs, under the state directory, so results and artifacts outlive the
sandbox that made them and the server that ran them.

    <state_dir>/runs/<namespace>/            700
        run_<id>/                            700, one per run
            run.json                         600, the RunRecord
            art_<id>                         600, each artifact's bytes, copied from the agent
        locks/live/run_<id>.lock             an flock held while a run is in flight in this process

Every file is written to a temporary name, fsync'ed and renamed, so a reader (or a server restarted
after SIGKILL) sees the old file or the new one, never half of one. The lock says whether the run's
server is alive: an flock dies with its process, so a run that is not finished and whose lock can be
taken was in flight when its server died (host.runs.manager applies the restart rule).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from pydantic import ValidationError

from host.runs.records import RunRecord
from host.sandboxes.locks import OwnershipLocks

log = logging.getLogger(__name__)

RECORD = "run.json"
_RUN_DIR = re.compile(r"^run_[A-Za-z0-9_-]{1,60}$")
_ARTIFACT = re.compile(r"^art_[A-Za-z0-9_-]{1,100}$")
_TMP_PREFIX = ".tmp-"


def _mkdir_private(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)  # mkdir's mode is filtered by the umask; the store is private whatever it is


class RunStore:
    def __init__(self, state_dir: Path, namespace: str) -> None:
        _mkdir_private(state_dir)
        _mkdir_private(state_dir / "runs")
        self.root = state_dir / "runs" / namespace
        _mkdir_private(self.root)
        self.locks = OwnershipLocks(self.root, "live")

    # -- records -----------------------------------------------------------------------------
    def run_dir(self, run_id: str) -> Path:
        if not _RUN_DIR.match(run_id):  # ids are ours, but a path is never built from an unchecked name
            raise ValueError(f"not a run id: {run_id!r}")
        return self.root / run_id

    def save(self, record: RunRecord) -> None:
        folder = self.run_dir(record.run_id)
        _mkdir_private(folder)
        with self._atomic(folder / RECORD) as fh:
            fh.write(record.model_dump_json().encode())

    def load_all(self) -> list[RunRecord]:
        """Every stored record; unreadable ones are logged and skipped, leftover temporary files removed."""
        records = []
        for folder in sorted(self.root.iterdir()):
            if not folder.is_dir() or not _RUN_DIR.match(folder.name):
                continue
            for tmp in folder.glob(_TMP_PREFIX + "*"):
                tmp.unlink(missing_ok=True)
            try:
                records.append(RunRecord.model_validate_json((folder / RECORD).read_bytes()))
            except (OSError, ValidationError) as exc:
                log.warning("skipping unreadable run record %s: %s", folder.name, type(exc).__name__)
        return records

    def delete(self, run_id: str) -> None:
        shutil.rmtree(self.run_dir(run_id), ignore_errors=True)

    # -- artifacts ---------------------------------------------------------------------------
    def artifact_path(self, run_id: str, artifact_id: str) -> Path:
        if not _ARTIFACT.match(artifact_id):
            raise ValueError(f"not an artifact id: {artifact_id!r}")
        return self.run_dir(run_id) / artifact_id

    @contextlib.contextmanager
    def write_artifact(self, run_id: str, artifact_id: str) -> Iterator[BinaryIO]:
        """A file to write an artifact into; it appears under its name only when the block completes."""
        path = self.artifact_path(run_id, artifact_id)
        _mkdir_private(path.parent)
        with self._atomic(path) as fh:
            yield fh

    def delete_artifacts(self, record: RunRecord) -> None:
        for ref in record.artifacts:
            self.artifact_path(record.run_id, ref.artifactId).unlink(missing_ok=True)

    # -- liveness ----------------------------------------------------------------------------
    def hold(self, run_id: str) -> bool:
        """Mark the run as in flight in this process; False if a live process already does."""
        return self.locks.try_acquire(run_id)

    def let_go(self, run_id: str) -> None:
        self.locks.release(run_id)

    # -- helpers -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def _atomic(self, path: Path) -> Iterator[BinaryIO]:
        tmp = path.with_name(f"{_TMP_PREFIX}{secrets.token_hex(6)}-{path.name}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                yield fh
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)  # the rename itself survives a crash
        finally:
            os.close(dir_fd)
