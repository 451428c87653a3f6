"""Workspace file methods: file.read / file.write / file.list / file.delete.

Limits fit one MCP message: a read of MAX_READ_BYTES travels twice (structuredContent and the text
block) and still stays far below the 10 MiB at which TypeScript clients drop a stdio connection;
a write of MAX_WRITE_BYTES, base64-encoded, fits the 4 MiB request body of streamable HTTP. Larger
files are read in parts (offset/limit → nextOffset) and written in parts (append).

File names are bytes on Linux and need not be UTF-8 (unzipped archives often carry Latin-1 names).
Every path a result reports is printable text (undecodable bytes shown as `\\xNN`) plus, only when
it is not UTF-8, `pathBase64`: the exact bytes. Passing that back as `path` with
`pathEncoding: "base64"` addresses the file exactly.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rpc.models.base import Params, Result

Encoding = Literal["utf-8", "base64"]

MIB = 1024 * 1024
MAX_READ_BYTES = 1 * MIB
# What a text read's content may take in a tool result (rpc.sizes.result_size); a part of short lines or
# control characters (\u0001: 6 + 7 bytes each) comes back shorter than `limit`, the rest from nextOffset.
MAX_READ_WIRE_BYTES = 5 * MIB + MIB // 2
DEFAULT_READ_BYTES = MAX_READ_BYTES
MAX_WRITE_BYTES = 2 * MIB
MAX_LIST_ENTRIES = 10_000
# The largest offset a caller may name: the largest integer a JSON number holds exactly in JavaScript
# (2**53 - 1), far past any file, and inside the kernel's off_t.
MAX_OFFSET = 2**53 - 1

PATH_DOC = "Path relative to the workspace"
PATH_ENCODING_DOC = (
    "'utf-8' (default): path is text. 'base64': path is the base64 of the raw path bytes, for names that "
    "are not UTF-8 (pass the pathBase64 a listing or result reported)"
)
PATH_BASE64_DOC = "Only when the path is not valid UTF-8: its exact bytes, base64 (path then shows them as \\xNN)"


class PathParams(Params):
    path: str = Field(min_length=1, max_length=4096, description=PATH_DOC)
    pathEncoding: Encoding = Field("utf-8", description=PATH_ENCODING_DOC)


class PathResult(Result):
    path: str = Field(description=PATH_DOC)
    # Left out of the wire form when absent (nearly always): no `null` on every listed entry.
    pathBase64: str | None = Field(None, description=PATH_BASE64_DOC, exclude_if=lambda v: v is None)


class FileReadParams(PathParams):
    encoding: Encoding = Field("utf-8", description="'utf-8' for text, 'base64' for any bytes")
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="Byte offset to start at")
    limit: int = Field(
        DEFAULT_READ_BYTES,
        ge=1,
        le=MAX_READ_BYTES,
        description=f"Maximum bytes to return (at most {MAX_READ_BYTES}; read larger files in parts)",
    )


class FileReadResult(PathResult):
    content: str
    encoding: Encoding
    size: int = Field(description="Total size of the file in bytes")
    offset: int
    length: int = Field(description="Bytes returned (before encoding)")
    eof: bool = Field(description="True when the returned part reaches the end of the file")
    nextOffset: int | None = Field(None, description="Where to continue when eof is false")


class FileWriteParams(PathParams):
    content: str = Field(
        max_length=MAX_WRITE_BYTES * 4 // 3 + 4,
        description=f"At most {MAX_WRITE_BYTES} bytes once decoded; write larger files in parts with append",
    )
    encoding: Encoding = "utf-8"
    append: bool = Field(False, description="Append instead of atomically replacing the file")
    createParents: bool = Field(True, description="Create missing parent directories")


class FileWriteResult(PathResult):
    size: int = Field(description="Size of the file after the write")
    created: bool


class FileListParams(PathParams):
    path: str = Field(".", min_length=1, max_length=4096, description=PATH_DOC)
    recursive: bool = False
    maxEntries: int = Field(1000, ge=1, le=MAX_LIST_ENTRIES)


EntryType = Literal["file", "directory", "symlink", "other"]


class FileEntry(PathResult):
    name: str = Field(description="The entry's name, printable (see pathBase64 for the exact bytes)")
    type: EntryType
    size: int
    mtime: str = Field(description="ISO 8601 UTC")


class FileListResult(PathResult):
    entries: list[FileEntry]
    truncated: bool = False


class FileDeleteParams(PathParams):
    recursive: bool = Field(False, description="Also delete a directory that is not empty, with everything in it")


class FileDeleteResult(PathResult):
    type: EntryType = Field(description="What was deleted (a symlink is deleted itself, never its target)")
