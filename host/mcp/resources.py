"""MCP resources (seed 002): every artifact of a finished template run is readable whole as
`boxwright://artifacts/{artifactId}`, so clients that read resources need no chunking loop.

Resources are owned like the runs they come from. The SDK lists and reads resources without knowing
who asks, so one middleware applies the caller's owner: `resources/list` answers each caller with
their own artifacts, and `resources/read` gives each its artifact's own MIME type. Reading goes
through the resource template registered here; another owner's artifact reads as a missing one.
This module is the one place resources are registered.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from typing import Any

from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import INVALID_PARAMS, Resource
from pydantic import BaseModel

from host.runs.artifacts import StoredArtifact
from host.runs.manager import RunManager
from host.sandboxes.models import Caller
from rpc.errors import BoxwrightError

ARTIFACT_PREFIX = "boxwright://artifacts/"
ARTIFACT_URI = ARTIFACT_PREFIX + "{artifactId}"
# Largest artifact read whole; bigger ones are read with get_artifact in chunks (TypeScript clients
# drop a stdio connection at 10 MiB per message, and base64 or JSON escaping adds to the bytes).
MAX_RESOURCE_BYTES = 4 * 1024 * 1024
# Artifacts per resources/list page; a client follows `nextCursor` for the rest (MCP pagination).
PAGE_SIZE = 100

Resolver = Callable[[Context], Caller]


def artifact_uri(artifact_id: str) -> str:
    return ARTIFACT_PREFIX + artifact_id


def register_resources(server: MCPServer, runs: RunManager, resolver: Resolver) -> None:
    """The artifact resource template and the middleware that scopes it to its owner."""

    @server.resource(
        ARTIFACT_URI,
        name="artifact",
        title="Template run artifact",
        description="An artifact of one of your finished template runs (result.json, items.csv), read whole. "
        "Listed under resources/list while it is kept (24 h by default after its run ends).",
    )
    async def read_artifact(artifactId: str, ctx: Context) -> str | bytes:
        caller = resolver(ctx)
        try:
            entry, data = runs.artifacts.read_all(caller.owner, artifactId, MAX_RESOURCE_BYTES)
        except BoxwrightError as exc:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"{exc.message} [{exc.code.value}]",
                data={"uri": artifact_uri(artifactId), **exc.to_body().model_dump(mode="json")},
            ) from None
        if entry.is_text:
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                pass
        return data

    server.middleware.append(OwnedArtifacts(server, runs, resolver))


def describe(entry: StoredArtifact) -> Resource:
    name = entry.ref.name or entry.artifact_id
    return Resource(
        uri=artifact_uri(entry.artifact_id),
        name=f"{entry.run_id}/{name}",
        title=f"{name} of run {entry.run_id}",
        description=f"Artifact {entry.artifact_id} ({entry.ref.type}) of template run {entry.run_id}",
        mime_type=entry.mime_type,
        size=entry.ref.size,
    )


def _sort_key(entry: StoredArtifact) -> tuple[int, str, str]:
    """owned_by's order (newest run first), with the artifact id to make it total."""
    return (-entry.ended_at, entry.run_id, entry.artifact_id)


def encode_cursor(entry: StoredArtifact) -> str:
    return base64.urlsafe_b64encode(json.dumps(_sort_key(entry)).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[int, str, str]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not isinstance(raw[0], int) or isinstance(raw[0], bool):  # 1e3080 is a float: inf, int() overflows
            raise TypeError("not a cursor")
        key = (raw[0], str(raw[1]), str(raw[2]))
    except (ValueError, TypeError, IndexError, KeyError, OverflowError) as exc:
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"invalid cursor {cursor[:80]!r}: pass the nextCursor of "
            "the previous resources/list answer, or none for the first page",
        ) from exc
    if len(raw) != 3:
        raise MCPError(code=INVALID_PARAMS, message=f"invalid cursor {cursor[:80]!r}")
    return key


def page_of(
    entries: Sequence[StoredArtifact], cursor: str | None, size: int | None = None
) -> tuple[list[StoredArtifact], str | None]:
    """One page after `cursor` and the cursor of the next page (None on the last).

    The cursor is the last listed artifact's sort key, not an offset, so artifacts that expire or
    arrive between two pages shift nothing: no artifact is listed twice, none that stays is skipped.
    """
    size = size or PAGE_SIZE
    ordered = sorted(entries, key=_sort_key)
    if cursor is not None:
        after = _decode_cursor(cursor)
        ordered = [e for e in ordered if _sort_key(e) > after]
    page = ordered[:size]
    return page, encode_cursor(page[-1]) if len(ordered) > size else None


def _as_dict(result: HandlerResult) -> dict[str, Any]:
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dict(result or {})


class OwnedArtifacts:
    """A `Server.middleware` entry (see the module docstring)."""

    def __init__(self, server: MCPServer, runs: RunManager, resolver: Resolver) -> None:
        self.server = server
        self.runs = runs
        self.resolver = resolver

    def _caller(self, ctx: ServerRequestContext[Any, Any]) -> Caller:
        return self.resolver(Context(request_context=ctx, mcp_server=self.server))

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "resources/list":
            cursor = (ctx.params or {}).get("cursor")
            # The SDK's own (static) resources come on the first page; artifacts are paged after them.
            answer = _as_dict(await call_next(ctx))
            if cursor is not None:
                answer["resources"] = []
            mine, next_cursor = page_of(
                self.runs.artifacts.owned_by(self._caller(ctx).owner), None if cursor is None else str(cursor)
            )
            answer["resources"] = [
                *answer.get("resources", []),
                *(describe(e).model_dump(mode="json", by_alias=True, exclude_none=True) for e in mine),
            ]
            answer.pop("nextCursor", None)
            if next_cursor is not None:
                answer["nextCursor"] = next_cursor
            # Per caller and changing with every run: a client may not cache it, nor share it.
            answer.update(ttlMs=0, cacheScope="private")
            return answer
        if ctx.method == "resources/read":
            uri = str((ctx.params or {}).get("uri", ""))
            read = await call_next(ctx)
            if not uri.startswith(ARTIFACT_PREFIX):
                return read
            try:
                entry = self.runs.artifacts.get(self._caller(ctx).owner, uri.removeprefix(ARTIFACT_PREFIX))
            except BoxwrightError:  # it just read fine; gone in between: leave the answer as it is
                return read
            data = _as_dict(read)
            for content in data.get("contents", []):
                content["mimeType"] = entry.mime_type
            return data
        return await call_next(ctx)
