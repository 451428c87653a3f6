"""A run's artifacts (its full result as JSON, a CSV of a batch's items) and the inline form of its result.

Artifacts are made once, when the run ends, and read in chunks (task.artifact_read) so that one of
any size crosses to the host under the agent's body limits. The result inlined in task.status is the
full result while it fits in maxArtifactInlineBytes; past that, heavy fields and then trailing items
are left out and `truncated`/`artifactId` point to the complete JSON. Whatever a template's result holds
besides its items (multi_tab_compare's comparison) is cut down, then left out, the same way: the bound holds
for any result shape, down to `{summary, items: [], truncated, artifactId}`.

A CSV cell read from a page or given as input that a spreadsheet would take for a formula (starting with
=, +, -, @, a tab or a line break) is written with a leading single quote (OWASP's CSV injection advice).
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
# Top-level fields of a result that are never cut (the rest are the template's own: items, comparison…).
KEPT_FIELDS = ("summary", "truncated", "artifactId")
# When the template's own fields are cut down: strings to this many characters, lists to this many entries.
COMPACT_TEXT_CHARS = 500
COMPACT_LIST_ENTRIES = 20
# Items kept whole (after the heavy fields went) are still cut to these when even that does not fit.
ITEM_TEXT_CHARS = 2000
ITEM_LIST_ENTRIES = 50
# A spreadsheet reads a cell starting with one of these as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


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


def csv_cell(value: Any) -> Any:
    """A cell as written: text a spreadsheet would run as a formula gets a leading quote; numbers stay numbers."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_artifact(name: str, header: list[str], rows: list[list[Any]]) -> Artifact:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([csv_cell(v) for v in row] for row in rows)
    return Artifact(new_artifact_id(), name, "csv", "text/csv", out.getvalue().encode())


def compact(value: Any, text_chars: int, list_entries: int) -> Any:
    """`value` with every string cut to `text_chars` characters and every list to `list_entries` entries."""
    if isinstance(value, str):
        return value if len(value) <= text_chars else value[:text_chars] + "…"
    if isinstance(value, list):
        return [compact(v, text_chars, list_entries) for v in value[:list_entries]]
    if isinstance(value, dict):
        return {k: compact(v, text_chars, list_entries) for k, v in value.items()}
    return value


def _fits(payload: dict[str, Any], limit: int) -> bool:
    return len(to_json(payload)) <= limit


def _leading_items(light: dict[str, Any], items: list[dict[str, Any]], limit: int) -> dict[str, Any]:
    """`light` with the leading items that fit in `limit` beside its other fields (the rest are counted)."""
    light = {**light, "items": []}
    room = limit - len(to_json(light)) - 64  # the itemsOmitted field and separators
    for item in items:
        room -= len(to_json(item)) + 1
        if room < 0:
            break
        light["items"].append(item)
    light["itemsOmitted"] = len(items) - len(light["items"])
    return light


def inline_result(full: dict[str, Any], artifact_id: str | None, limit: int = MAX_ARTIFACT_INLINE_BYTES) -> RunResult:
    """The result as task.status shows it: whole if it fits in `limit` bytes of JSON, else cut down — in
    order: items' heavy fields, the template's other fields shortened, then left out, then trailing items,
    then every item — until it fits. Never larger than `limit`, whatever the template put in it."""
    if artifact_id is not None:
        full = {**full, "artifactId": artifact_id}
    if _fits(full, limit):
        return RunResult.model_validate(full)
    items = [{k: v for k, v in item.items() if k not in HEAVY_ITEM_FIELDS} for item in full.get("items", [])]
    extras = {k: v for k, v in full.items() if k not in (*KEPT_FIELDS, "items")}
    base = {k: full[k] for k in KEPT_FIELDS if k in full} | {"truncated": True, "artifactId": artifact_id}
    light = {**base, "items": items, **extras}
    if _fits(light, limit):
        return RunResult.model_validate(light)
    light = {**base, "items": items, **compact(extras, COMPACT_TEXT_CHARS, COMPACT_LIST_ENTRIES)}
    if _fits(light, limit):
        return RunResult.model_validate(light)
    dropped = {**base, "items": items}
    if extras:
        dropped["fieldsOmitted"] = sorted(extras)
    if _fits(dropped, limit):
        return RunResult.model_validate(dropped)
    short = [compact(item, ITEM_TEXT_CHARS, ITEM_LIST_ENTRIES) for item in items]
    cut = _leading_items({k: v for k, v in dropped.items() if k != "items"}, short, limit)
    if _fits(cut, limit):
        return RunResult.model_validate(cut)
    return RunResult.model_validate({**base, "items": [], "itemsOmitted": len(items)})
