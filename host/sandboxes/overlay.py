"""What changed about a sandbox after its labels were written — labels cannot change once a container
exists: a pooled sandbox's owner, name, TTL, token and job (set when it is claimed), and any TTL
extended later (sandbox_keepalive).

One JSON file per sandbox under the state dir (`overlays/<namespace>/<id>.json`; directories 700,
files 600, written atomically), read back by reconcile after a restart and by `boxwright ls`. It holds
a claimed sandbox's token, so it is as private as the ownership locks beside it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from host.sandboxes.models import SandboxRecord


class Overlay(BaseModel):
    model_config = ConfigDict(extra="forbid")

    owner: str
    name: str | None = None
    createdAt: datetime  # when it was claimed: the sandbox's life as its owner sees it starts then
    expiresAt: datetime
    token: str
    network: str
    allowHosts: list[str] = []
    job: str | None = None

    @classmethod
    def of(cls, rec: SandboxRecord) -> Overlay:
        return cls(
            owner=rec.owner,
            name=rec.name,
            createdAt=rec.created_at,
            expiresAt=rec.expires_at,
            token=rec.token,
            network=rec.network,
            allowHosts=list(rec.allow_hosts),
            job=rec.job,
        )

    def apply(self, rec: SandboxRecord) -> None:
        rec.owner, rec.name, rec.token, rec.job = self.owner, self.name, self.token, self.job
        rec.created_at, rec.expires_at = self.createdAt, self.expiresAt
        rec.network, rec.allow_hosts = self.network, list(self.allowHosts)


class OverlayStore:
    def __init__(self, state_dir: Path, namespace: str) -> None:
        self.dir = state_dir / "overlays" / namespace
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)

    def _path(self, sandbox_id: str) -> Path:
        return self.dir / f"{sandbox_id}.json"

    def save(self, sandbox_id: str, overlay: Overlay) -> None:
        tmp = self.dir / f".{sandbox_id}.{secrets.token_hex(4)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(overlay.model_dump_json())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self._path(sandbox_id))
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    def load(self, sandbox_id: str) -> Overlay | None:
        """The overlay, or None when there is none or it cannot be read (then the labels stand alone)."""
        try:
            return Overlay.model_validate_json(self._path(sandbox_id).read_bytes())
        except (FileNotFoundError, ValidationError, OSError):
            return None

    def delete(self, sandbox_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._path(sandbox_id))

    def ids(self) -> set[str]:
        return {p.stem for p in self.dir.glob("*.json")}
