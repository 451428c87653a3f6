"""Workspace file methods: file.read / file.write / file.list."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rpc.models.base import Params, Result

Encoding = Literal["utf-8", "base64"]

MAX_READ_BYTES = 4 * 1024 * 1024
DEFAULT_READ_BYTES = 1024 * 1024
MAX_WRITE_BYTES = 16 * 1024 * 1024
MAX_LIST_ENTRIES = 10_000


class FileReadParams(Params):
    path: str = Field(min_length=1, max_length=4096, description="Path relative to the workspace")
    encoding: Encoding = Field("utf-8", description="'utf-8' for text, 'base64' for any bytes")
    offset: int = Field(0, ge=0, description="Byte offset to start at")
    limit: int = Field(DEFAULT_READ_BYTES, ge=1, le=MAX_READ_BYTES, description="Maximum bytes to return")


class FileReadResult(Result):
    path: str
    content: str
    encoding: Encoding
    size: int = Field(description="Total size of the file in bytes")
    offset: int
    length: int = Field(description="Bytes returned (before encoding)")
    eof: bool = Field(description="True when the returned part reaches the end of the file")
    nextOffset: int | None = Field(None, description="Where to continue when eof is false")


class FileWriteParams(Params):
    path: str = Field(min_length=1, max_length=4096, description="Path relative to the workspace")
    content: str = Field(max_length=MAX_WRITE_BYTES * 4 // 3 + 4)
    encoding: Encoding = "utf-8"
    append: bool = Field(False, description="Append instead of atomically replacing the file")
    createParents: bool = Field(True, description="Create missing parent directories")


class FileWriteResult(Result):
    path: str
    size: int = Field(description="Size of the file after the write")
    created: bool


class FileListParams(Params):
    path: str = Field(".", min_length=1, max_length=4096)
    recursive: bool = False
    maxEntries: int = Field(1000, ge=1, le=MAX_LIST_ENTRIES)


EntryType = Literal["file", "directory", "symlink", "other"]


class FileEntry(Result):
    name: str
    path: str = Field(description="Relative to the workspace")
    type: EntryType
    size: int
    mtime: str = Field(description="ISO 8601 UTC")


class FileListResult(Result):
    path: str
    entries: list[FileEntry]
    truncated: bool = False
