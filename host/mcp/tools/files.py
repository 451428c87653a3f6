"""Workspace file tools."""

from typing import Any

from mcp.types import ToolAnnotations

from host.mcp.forward import forward_tool
from host.mcp.registry import ToolSpec
from host.sandboxes.manager import SandboxManager
from rpc import methods
from rpc.models.files import MAX_READ_BYTES, MAX_WRITE_BYTES, FileReadParams, FileReadResult

MIB = 1024 * 1024
ODD_NAMES = (
    "Names that are not UTF-8 are shown with \\xNN escapes and come with pathBase64; pass that as path with "
    "pathEncoding 'base64' to address the file."
)


def _read_summary(_: FileReadParams, r: FileReadResult) -> str:
    part = "" if r.offset == 0 and r.eof else f", bytes {r.offset}-{r.offset + r.length} of {r.size}"
    return f"{r.path} ({r.size} bytes, {r.encoding}{part})"


def tools(manager: SandboxManager) -> list[ToolSpec[Any]]:
    return [
        forward_tool(
            manager,
            methods.FILE_READ,
            title="Read a workspace file",
            description=(
                "Read a file of the sandbox workspace (path relative to /workspace). encoding 'utf-8' for "
                f"text or 'base64' for any bytes. At most {MAX_READ_BYTES // MIB} MiB per call: read larger "
                "files in parts, passing nextOffset as offset until eof is true."
            ),
            summary=_read_summary,
            annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
        ),
        forward_tool(
            manager,
            methods.FILE_WRITE,
            title="Write a workspace file",
            description=(
                "Write a file in the sandbox workspace (path relative to /workspace), creating parent "
                "directories. Replaces the file atomically unless append=true. content is text ('utf-8') or "
                f"base64 for binary data, at most {MAX_WRITE_BYTES // MIB} MiB per call: write larger files in "
                "parts, the first without and the rest with append=true."
            ),
            summary=lambda _, r: f"{r.path} ({r.size} bytes{', created' if r.created else ''})",
            annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True),
        ),
        forward_tool(
            manager,
            methods.FILE_LIST,
            title="List workspace files",
            description=(
                "List a directory of the sandbox workspace (default '.'), optionally recursive; entries "
                f"have name, path, type (file/directory/symlink/other), size and mtime. {ODD_NAMES}"
            ),
            summary=lambda _, r: f"{r.path} ({len(r.entries)} entries{', truncated' if r.truncated else ''})",
            annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
        ),
        forward_tool(
            manager,
            methods.FILE_DELETE,
            title="Delete a workspace file",
            description=(
                "Delete a file, symlink (the link itself, never its target) or empty directory of the sandbox "
                "workspace; recursive=true also deletes a directory with everything in it. The workspace "
                f"itself cannot be deleted. {ODD_NAMES}"
            ),
            summary=lambda _, r: f"deleted {r.type} {r.path}",
            annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False),
        ),
    ]
