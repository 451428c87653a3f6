"""ArtifactStore (seed 000 §5, §8.2): the artifacts of finished runs, owned like their runs, read in
base64 chunks by get_artifact or whole as MCP resources, kept for the retention time after their run
ends.

An expired artifact answers ARTIFACT_EXPIRED until its run's tombstone goes (another retention
period), then ARTIFACT_NOT_FOUND, like an id that never existed or another owner's.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from host.runs.records import RunRecord, now_ms
from host.runs.store import RunStore
from rpc.errors import BoxwrightError, ErrorCode, invalid_parameter
from rpc.models.tasks import MAX_ARTIFACT_INLINE_BYTES, ArtifactChunk, ArtifactRef

TEXT_MIME_TYPES = frozenset({"application/json"})


@dataclass(frozen=True)
class StoredArtifact:
    run_id: str
    owner: str
    ref: ArtifactRef
    ended_at: int  # epoch ms: the retention counts from here
    deleted: bool = False  # its run's tombstone: the files went (a retention longer now does not bring them back)

    @property
    def artifact_id(self) -> str:
        return self.ref.artifactId

    @property
    def mime_type(self) -> str:
        return self.ref.mimeType or "application/octet-stream"

    @property
    def is_text(self) -> bool:
        return self.mime_type.startswith("text/") or self.mime_type in TEXT_MIME_TYPES


class ArtifactStore:
    def __init__(self, store: RunStore, retention_s: float) -> None:
        self.store = store
        self.retention_s = retention_s
        # By owner and id: the ids are the sandbox's, and a sandbox (whatever runs in it) could name one
        # that another owner's run has; it then only ever names its own owner's.
        self._index: dict[tuple[str, str], StoredArtifact] = {}

    # -- what exists -------------------------------------------------------------------------
    def add_run(self, record: RunRecord) -> None:
        """Index the artifacts of a finished run (copied to the store before it is marked terminal)."""
        if record.ended_at is None:
            return
        for ref in record.artifacts:
            self._index[(record.owner, ref.artifactId)] = StoredArtifact(
                record.run_id, record.owner, ref, record.ended_at, deleted=record.expired
            )

    def drop_run(self, record: RunRecord) -> None:
        for ref in record.artifacts:
            key = (record.owner, ref.artifactId)
            entry = self._index.get(key)
            if entry is not None and entry.run_id == record.run_id:  # not a later run's of the same id
                del self._index[key]

    def expired(self, entry: StoredArtifact, now: int | None = None) -> bool:
        return entry.deleted or (now or now_ms()) >= entry.ended_at + int(self.retention_s * 1000)

    def owned_by(self, owner: str) -> list[StoredArtifact]:
        """The owner's readable artifacts, newest run first."""
        now = now_ms()
        mine = [e for e in self._index.values() if e.owner == owner and not self.expired(e, now)]
        return sorted(mine, key=lambda e: (-e.ended_at, e.run_id, e.ref.name or ""))

    def get(self, owner: str, artifact_id: str) -> StoredArtifact:
        entry = self._index.get((owner, artifact_id))
        if entry is None:  # another owner's is answered like a missing one
            raise BoxwrightError(
                ErrorCode.ARTIFACT_NOT_FOUND, f"no artifact {artifact_id!r}", details={"artifactId": artifact_id}
            )
        if self.expired(entry):
            raise self._expired(entry)
        return entry

    def _expired(self, entry: StoredArtifact) -> BoxwrightError:
        return BoxwrightError(
            ErrorCode.ARTIFACT_EXPIRED,
            f"artifact {entry.artifact_id!r} of run {entry.run_id} expired "
            f"(artifacts are kept {self.retention_s:g} s after their run ends)",
            details={"artifactId": entry.artifact_id, "runId": entry.run_id},
        )

    # -- reading -----------------------------------------------------------------------------
    def read_chunk(
        self, owner: str, artifact_id: str, offset: int = 0, limit: int = MAX_ARTIFACT_INLINE_BYTES
    ) -> ArtifactChunk:
        entry = self.get(owner, artifact_id)
        size = entry.ref.size
        if offset > size:
            raise invalid_parameter(
                "offset",
                f"past the end of {artifact_id} ({size} bytes)",
                hint="read from an offset below the artifact's size",
                artifactId=artifact_id,
                size=size,
            )
        limit = min(limit, MAX_ARTIFACT_INLINE_BYTES)
        try:
            with self.store.artifact_path(entry.run_id, artifact_id).open("rb") as fh:
                fh.seek(offset)
                chunk = fh.read(limit)
        except FileNotFoundError:  # deleted by another process's sweep of the same state dir
            raise self._expired(entry) from None
        return ArtifactChunk(
            artifactId=artifact_id,
            mimeType=entry.mime_type,
            size=size,
            data=base64.b64encode(chunk).decode("ascii"),
            offset=offset,
            bytesReturned=len(chunk),
            complete=offset + len(chunk) >= size,
        )

    def read_all(self, owner: str, artifact_id: str, max_bytes: int) -> tuple[StoredArtifact, bytes]:
        """The whole artifact (MCP resources), if it is at most `max_bytes`."""
        entry = self.get(owner, artifact_id)
        if entry.ref.size > max_bytes:
            raise BoxwrightError(
                ErrorCode.PAYLOAD_TOO_LARGE,
                f"artifact {artifact_id!r} ({entry.ref.size} bytes) is too large to read in one message",
                hint="read it in chunks with get_artifact (offset/limit)",
                details={"artifactId": artifact_id, "size": entry.ref.size, "maxBytes": max_bytes},
            )
        try:
            return entry, self.store.artifact_path(entry.run_id, artifact_id).read_bytes()
        except FileNotFoundError:
            raise self._expired(entry) from None
