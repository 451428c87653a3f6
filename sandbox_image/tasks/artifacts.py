"""A run's artifacts (its full result as JSON, a CSV of a batch's items) and the inline form of its result.

Artifacts are made once, when the run ends, and read in chunks (task.artifact_read) so that one of
any size crosses to the host under the agent's body limits. The result inlined in task.status is the
full result while it fits in maxArtifactInlineBytes; past that, heavy fields and then trailing items
are left out and `truncated`/`artifactId` point to the complete JSON.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import secrets
from dataclasses import dataclass
from typing import Any

from rpc.errors import invalid_parameter
from rpc.models.tasks import MAX_ARTIFACT_INLINE_BYTES, ArtifactChunk, ArtifactRef, RunResult

# Item fields dropped first when a result is too large to inline.
HEAVY_ITEM_FIELDS = ("content", "markdown", "elements", "intents", "summary")


def new_artifact_id() -> str:
    return f"art_{secrets.token_hex(8)}"


def to_json(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


@dataclass(frozen=True)
class Artifact:
    artifact_id: str
    name: str
    type: str
    mime_type: str
    data: bytes

    def ref(self) -> ArtifactRef:
        return ArtifactRef(
            artifactId=self.artifact_id, type=self.type, size=len(self.data), mimeType=self.mime_type, name=self.name
        )

    def read(self, offset: int, limit: int) -> ArtifactChunk:
        size = len(self.data)
        if offset > size:
            raise invalid_parameter(
                "offset",
                f"past the end of {self.artifact_id} ({size} bytes)",
                hint="read from an offset below the artifact's size",
                artifactId=self.artifact_id,
                size=size,
            )
        chunk = self.data[offset : offset + limit]
        return ArtifactChunk(
            artifactId=self.artifact_id,
            mimeType=self.mime_type,
            size=size,
            data=base64.b64encode(chunk).decode("ascii"),
            offset=offset,
            bytesReturned=len(chunk),
            complete=offset + len(chunk) >= size,
        )


def json_artifact(name: str, payload: Any) -> Artifact:
    return Artifact(new_artifact_id(), name, "json", "application/json", to_json(payload))


def csv_artifact(name: str, header: list[str], rows: list[list[Any]]) -> Artifact:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(["" if v is None else v for v in row] for row in rows)
    return Artifact(new_artifact_id(), name, "csv", "text/csv", out.getvalue().encode())


def inline_result(full: dict[str, Any], artifact_id: str | None, limit: int = MAX_ARTIFACT_INLINE_BYTES) -> RunResult:
    """The result as task.status shows it: whole if it fits in `limit` bytes of JSON, else cut down."""
    if artifact_id is not None:
        full = {**full, "artifactId": artifact_id}
    if len(to_json(full)) <= limit:
        return RunResult.model_validate(full)
    light = {**full, "truncated": True, "artifactId": artifact_id}
    light["items"] = [{k: v for k, v in item.items() if k not in HEAVY_ITEM_FIELDS} for item in full.get("items", [])]
    if len(to_json(light)) > limit:
        # Keep the leading items that fit (the rest is in the artifact), leaving room for the other fields.
        items, light["items"] = light["items"], []
        room = limit - len(to_json(light)) - 64
        for item in items:
            room -= len(to_json(item)) + 1
            if room < 0:
                break
            light["items"].append(item)
        light["itemsOmitted"] = len(items) - len(light["items"])
    return RunResult.model_validate(light)
