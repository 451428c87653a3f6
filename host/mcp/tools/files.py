"""Workspace file tools."""

from typing import Any

from mcp.types import ToolAnnotations

from host.mcp.forward import forward_tool
from host.mcp.registry import ToolSpec
from host.sandboxes.manager import SandboxManager
from rpc import methods
from rpc.models.files import FileReadParams, FileReadResult


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
                "text or 'base64' for any bytes; large files in parts with offset/limit (see eof, nextOffset)."
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
                "base64 for binary data."
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
                "have name, path, type (file/directory/symlink/other), size and mtime."
            ),
            summary=lambda _, r: f"{r.path} ({len(r.entries)} entries{', truncated' if r.truncated else ''})",
            annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
        ),
    ]
