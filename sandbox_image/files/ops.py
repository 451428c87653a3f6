"""file.read / file.write / file.list / file.delete on top of the confined `Workspace` walk.

Synchronous on purpose (plain syscalls); the handlers run them in a worker thread. Every file is
opened relative to a held directory fd with O_NOFOLLOW|O_NONBLOCK and checked to be a regular
file on the fd itself, so a FIFO or a last-moment symlink swap can neither hang nor misdirect us.
"""

from __future__ import annotations

import base64
import binascii
import errno
import os
import secrets
import shutil
import stat
import threading
from collections import deque
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime

from rpc.errors import BoxwrightError, ErrorCode, invalid_parameter
from rpc.models.files import (
    MAX_READ_WIRE_BYTES,
    MAX_WRITE_BYTES,
    FileDeleteParams,
    FileDeleteResult,
    FileEntry,
    FileListParams,
    FileListResult,
    FileReadParams,
    FileReadResult,
    FileWriteParams,
    FileWriteResult,
)
from rpc.sizes import cap_text, result_size
from sandbox_image.files.names import fs_path, printable, wire_path
from sandbox_image.files.workspace import Target, Workspace, kind_of, os_error, split_relative
from sandbox_image.utf8 import complete_prefix_len, ends_inside_sequence, is_continuation

_ATTEMPTS = 3  # re-resolve when the final component is swapped for a symlink under our feet
_NEW_FILE_MODE = 0o666  # minus umask; the agent runs with 0002 so the runner (group sandbox) can edit
_TMP_PREFIX_BYTES = 180  # of the target's name in its temp name; with the suffix well under NAME_MAX (255 bytes)


def _not_regular(rel: str, st: os.stat_result) -> BoxwrightError:
    if stat.S_ISDIR(st.st_mode):
        return BoxwrightError(ErrorCode.NOT_A_FILE, f"{rel!r} is a directory", details={"path": rel})
    return BoxwrightError(
        ErrorCode.NOT_A_FILE,
        f"{rel!r} is not a regular file ({kind_of(st.st_mode)})",
        hint="only regular files can be read or written",
        details={"path": rel},
    )


def _check_target_is_file(target: Target) -> None:
    if target.name is None:
        raise BoxwrightError(ErrorCode.NOT_A_FILE, f"{target.rel!r} is a directory", details={"path": target.rel})
    if target.stat is not None and not stat.S_ISREG(target.stat.st_mode):
        raise _not_regular(target.rel, target.stat)


def _refuse_directory_syntax(path: str) -> None:
    """A path ending in '/' (or '/.') names a directory, as in POSIX; the walk drops empty and '.'
    components, so without this 'file/' would read the file and 'new/' would create a file 'new'."""
    split_relative(path)  # NUL, absolute and escaping paths keep their own errors
    if path.rsplit("/", 1)[-1] in ("", "."):
        shown = printable(path)
        raise BoxwrightError(
            ErrorCode.NOT_A_FILE,
            f"{shown!r} ends in '/', so it names a directory, not a file",
            hint="name the file without the trailing '/' (file_list shows what a directory holds)",
            details={"path": shown},
        )


def _changing(path: str) -> BoxwrightError:
    return BoxwrightError(ErrorCode.EXECUTION_ERROR, f"{path!r} kept changing while being opened; try again")


def iso_utc(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# ---------------------------------------------------------------- read


def _open_for_read(ws: Workspace, path: str) -> tuple[int, str]:
    for _ in range(_ATTEMPTS):
        with ws.locate(path) as target:
            _check_target_is_file(target)
            if target.stat is None:
                raise BoxwrightError(ErrorCode.FILE_NOT_FOUND, f"{target.rel!r} does not exist", details={"path": path})
            assert target.name is not None
            try:
                flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
                fd = os.open(target.name, flags, dir_fd=target.dir_fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:  # became a symlink after the walk: resolve it again
                    continue
                raise
            return fd, target.rel
    raise _changing(path)


def _pread(fd: int, size: int, offset: int) -> bytes:
    chunks: list[bytes] = []
    while size > 0:
        chunk = os.pread(fd, size, offset)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _text_part(fd: int, rel: str, data: bytes, offset: int, limit: int, eof: bool) -> tuple[bytes, str]:
    """Cut `data` at a character boundary and decode it strictly."""
    if (
        offset > 0
        and data
        and is_continuation(data[0])
        and ends_inside_sequence(os.pread(fd, min(3, offset), offset - min(3, offset)))
    ):
        raise invalid_parameter(
            "offset",
            "not at a character boundary",
            message=f"offset {offset} falls inside a multibyte UTF-8 character",
            hint="continue from the nextOffset of the previous read, or read with encoding 'base64'",
        )
    if not eof:
        keep = complete_prefix_len(data)
        if keep == 0 and data:
            raise invalid_parameter(
                "limit",
                "too small for the character at offset",
                message=f"limit {limit} is smaller than the UTF-8 character at offset {offset}",
                hint="raise limit (4 bytes always hold a whole character)",
            )
        data = data[:keep]
    try:
        return data, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BoxwrightError(
            ErrorCode.NOT_TEXT,
            f"{rel!r} is not UTF-8 text (invalid byte at offset {offset + exc.start})",
            details={"path": rel, "invalidByteOffset": offset + exc.start},
        ) from None


# A read of at most this many bytes runs on the event loop (agent): from the page cache it takes
# microseconds, less than the hop to a worker thread and back (~0.1-0.2 ms of CPU and two wake-ups).
INLINE_READ_BYTES = 64 * 1024


@dataclass
class OpenedRead:
    """A file opened for `params`: `finish()` reads it and closes it, in whatever thread suits."""

    fd: int
    rel: str
    st: os.stat_result
    params: FileReadParams
    path: str
    _claim: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def small(self) -> bool:
        """At most INLINE_READ_BYTES will be read (the file may still grow; the read stays bounded by limit)."""
        return min(self.params.limit, max(0, self.st.st_size - self.params.offset)) <= INLINE_READ_BYTES

    def abandon(self) -> None:
        """Close the file unless `finish()` has it (a cancelled hand-off to a thread that never ran)."""
        if self._claim.acquire(blocking=False):
            os.close(self.fd)

    def finish(self) -> FileReadResult:
        if not self._claim.acquire(blocking=False):
            raise RuntimeError("this read was abandoned or already finished")
        params, fd, rel, st = self.params, self.fd, self.rel, self.st
        try:
            data = _pread(fd, params.limit, params.offset)
            end = params.offset + len(data)
            eof = len(data) < params.limit or end >= st.st_size
            if params.encoding == "utf-8":
                data, content = _text_part(fd, rel, data, params.offset, params.limit, eof)
                if result_size(content) > MAX_READ_WIRE_BYTES:  # e.g. control characters: 13 bytes each
                    content, _ = cap_text(content, MAX_READ_WIRE_BYTES, result_size)
                    data, eof = content.encode("utf-8"), False  # the rest from nextOffset: nothing is lost
            else:
                content = base64.b64encode(data).decode("ascii")
        except OSError as exc:
            raise os_error(exc, printable(self.path)) from None
        finally:
            os.close(fd)
        length = len(data)
        return FileReadResult(
            **wire_path(rel),
            content=content,
            encoding=params.encoding,
            size=max(st.st_size, params.offset + length if length else 0),  # the file may grow while read
            offset=params.offset,
            length=length,
            eof=eof,
            nextOffset=None if eof else params.offset + length,
        )


def open_read(ws: Workspace, params: FileReadParams) -> OpenedRead:
    """Walk, open and check the file (metadata syscalls only); the caller must `finish()` it."""
    path = fs_path(params)
    _refuse_directory_syntax(path)
    try:
        fd, rel = _open_for_read(ws, path)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise _not_regular(rel, st)
        except BaseException:
            os.close(fd)
            raise
    except OSError as exc:
        raise os_error(exc, printable(path)) from None
    return OpenedRead(fd, rel, st, params, path)


def read_file(ws: Workspace, params: FileReadParams) -> FileReadResult:
    return open_read(ws, params).finish()


# ---------------------------------------------------------------- write


def decode_content(params: FileWriteParams) -> bytes:
    """The bytes to write; INVALID_PARAMETER for bad base64 or unencodable text, FILE_TOO_LARGE over the cap."""
    too_large = BoxwrightError(
        ErrorCode.FILE_TOO_LARGE,
        f"content exceeds the write limit of {MAX_WRITE_BYTES} bytes",
        hint="write large files in parts with append: true",
        details={"maxWriteBytes": MAX_WRITE_BYTES},
    )
    if params.encoding == "base64":
        compact = "".join(params.content.split())
        if len(compact) * 3 // 4 > MAX_WRITE_BYTES + 3:
            raise too_large
        try:
            data = base64.b64decode(compact, validate=True)
        except (binascii.Error, ValueError):
            raise invalid_parameter("content", "invalid base64", message="content is not valid base64") from None
    else:
        try:
            data = params.content.encode("utf-8")
        except UnicodeEncodeError:
            raise invalid_parameter(
                "content",
                "not encodable as UTF-8",
                message="content is not valid Unicode text (lone surrogate)",
                hint="send binary data with encoding 'base64'",
            ) from None
    if len(data) > MAX_WRITE_BYTES:
        raise too_large
    return data


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_dir(dir_fd: int) -> None:
    fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _append(target: Target, data: bytes) -> int:
    """All or nothing: a failed append (a full disk part-way) is cut off again, so a retry cannot
    duplicate data; a file this call created is removed. Best effort: another writer appending at the
    same moment loses what it appended during the failed call."""
    assert target.name is not None
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(target.name, flags, _NEW_FILE_MODE, dir_fd=target.dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(target.rel, st)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        except BaseException:
            _undo_append(target, fd, st)
            raise
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def _undo_append(target: Target, fd: int, before: os.stat_result) -> None:
    """Truncate back to the size before the append; unlink the file if this call created it (and it is still ours)."""
    assert target.name is not None
    with suppress(OSError):
        if os.fstat(fd).st_size != before.st_size:
            os.ftruncate(fd, before.st_size)
    if target.stat is None and before.st_size == 0:
        with suppress(OSError):
            now = os.stat(target.name, dir_fd=target.dir_fd, follow_symlinks=False)
            if (now.st_dev, now.st_ino) == (before.st_dev, before.st_ino) and now.st_size == 0:
                os.unlink(target.name, dir_fd=target.dir_fd)


def _tmp_name(name: str) -> str:
    """A hidden temp name next to `name`, its length bounded in bytes on disk (NAME_MAX is 255 bytes,
    which may be only 63 characters), cut between characters, never inside one."""
    kept: list[str] = []
    used = 0
    for char in name:
        used += len(os.fsencode(char))  # an undecodable byte (surrogateescape) counts as one
        if used > _TMP_PREFIX_BYTES:
            break
        kept.append(char)
    return f".{''.join(kept)}.{secrets.token_hex(6)}.boxwright-tmp"


def _replace(target: Target, data: bytes) -> int:
    """Atomic replace: temp file in the same directory, fsync, rename over, fsync the directory."""
    assert target.name is not None
    tmp = _tmp_name(target.name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, _NEW_FILE_MODE, dir_fd=target.dir_fd)
    try:
        try:
            if target.stat is not None:  # keep the permissions of the file being replaced
                os.fchmod(fd, stat.S_IMODE(target.stat.st_mode) & 0o777)
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, target.name, src_dir_fd=target.dir_fd, dst_dir_fd=target.dir_fd)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp, dir_fd=target.dir_fd)
        raise
    _fsync_dir(target.dir_fd)
    return len(data)


def _remove_dirs(ws: Workspace, rels: list[str]) -> None:
    """Best effort: take away (innermost first) the empty directories a failed write made for itself."""
    for rel in reversed(rels):
        parent, _, name = rel.rpartition("/")
        with suppress(OSError, BoxwrightError):
            fd, _ = _open_listed_dir(ws, parent or ".")
            try:
                os.rmdir(name, dir_fd=fd)  # only if still empty; never follows a symlink put there
            finally:
                os.close(fd)


def write_file(ws: Workspace, params: FileWriteParams) -> FileWriteResult:
    data = decode_content(params)
    path = fs_path(params)
    _refuse_directory_syntax(path)
    made_dirs: list[str] = []
    try:
        for _ in range(_ATTEMPTS):
            with ws.locate(path, create_parents=params.createParents) as target:
                made_dirs += target.created
                _check_target_is_file(target)
                created = target.stat is None
                try:
                    size = _append(target, data) if params.append else _replace(target, data)
                except OSError as exc:
                    if exc.errno == errno.ELOOP:  # became a symlink after the walk: resolve it again
                        continue
                    raise
                return FileWriteResult(**wire_path(target.rel), size=size, created=created)
        raise _changing(printable(path))
    except OSError as exc:
        _remove_dirs(ws, made_dirs)
        raise os_error(exc, printable(path)) from None
    except BaseException:
        _remove_dirs(ws, made_dirs)
        raise


# ---------------------------------------------------------------- list

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_listed_dir(ws: Workspace, path: str) -> tuple[int, str]:
    with ws.locate(path) as target:
        if target.stat is None:
            raise BoxwrightError(ErrorCode.FILE_NOT_FOUND, f"{target.rel!r} does not exist", details={"path": path})
        if not stat.S_ISDIR(target.stat.st_mode):
            raise BoxwrightError(
                ErrorCode.NOT_A_DIRECTORY, f"{target.rel!r} is not a directory", details={"path": target.rel}
            )
        fd = os.open("." if target.name is None else target.name, _DIR_FLAGS, dir_fd=target.dir_fd)
        return fd, target.rel


def _open_below(base_fd: int, names: list[str]) -> int:
    """Open a subdirectory of the listed one without following any symlink on the way."""
    fd = os.dup(base_fd)
    try:
        for name in names:
            nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


# What one listing holds at most, as text: its answer fits an MCP result (6 MiB) with room to spare, and the
# agent never builds one that could take its memory (paths of 250 levels of long names: 25 KB each).
MAX_LIST_BYTES = 4 * 1024 * 1024
ENTRY_BYTES = 100  # an entry's type, size, mtime and keys


def list_dir(ws: Workspace, params: FileListParams) -> FileListResult:
    """Breadth-first (so a truncated listing keeps the shallow entries), then sorted in tree order."""
    path = fs_path(params)
    try:
        base_fd, base_rel = _open_listed_dir(ws, path)
    except OSError as exc:
        raise os_error(exc, printable(path)) from None
    found: list[tuple[list[str], FileEntry]] = []  # sorted by the real names, not their printable forms
    truncated = False
    listed_bytes = 0  # of paths and names as sent: deep trees of long names made each entry ~25 KB
    pending: deque[list[str]] = deque([[]])
    try:
        while pending and not truncated:
            names = pending.popleft()
            try:
                fd = _open_below(base_fd, names)
            except OSError:
                if not names:
                    raise
                continue  # vanished, swapped for a symlink, or unreadable: listed but not entered
            try:
                with os.scandir(fd) as it:
                    items = sorted(it, key=lambda e: e.name)
                for item in items:
                    if len(found) >= params.maxEntries or listed_bytes > MAX_LIST_BYTES:
                        truncated = True
                        break
                    try:
                        st = item.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    kind = kind_of(st.st_mode)
                    parts = [*([] if base_rel == "." else base_rel.split("/")), *names, item.name]
                    entry = FileEntry(
                        **wire_path("/".join(parts)),
                        name=printable(item.name),
                        type=kind,
                        size=st.st_size,
                        mtime=iso_utc(st.st_mtime),
                    )
                    found.append((parts, entry))
                    listed_bytes += ENTRY_BYTES + len(entry.path) + len(entry.pathBase64 or "") + len(entry.name)
                    if params.recursive and kind == "directory":
                        pending.append([*names, item.name])
            finally:
                os.close(fd)
    except OSError as exc:
        raise os_error(exc, printable(path)) from None
    finally:
        os.close(base_fd)
    found.sort(key=lambda pair: pair[0])
    return FileListResult(**wire_path(base_rel), entries=[entry for _, entry in found], truncated=truncated)


# ---------------------------------------------------------------- delete


def _refuse_delete(path: str, why: str) -> BoxwrightError:
    return invalid_parameter(
        "path",
        why,
        message=f"cannot delete {printable(path)!r}: {why}",
        hint="name a file, symlink or directory inside the workspace",
    )


def delete_path(ws: Workspace, params: FileDeleteParams) -> FileDeleteResult:
    """Unlink the last component in its (confined) parent directory: a symlink goes itself, never its
    target; a directory only when empty, or with `recursive` (shutil.rmtree on the held parent fd,
    which never follows symlinks)."""
    path = fs_path(params)
    parts = split_relative(path)
    if not parts:
        raise _refuse_delete(path, "that is the workspace itself")
    if parts[-1] == "..":
        raise _refuse_delete(path, "the path must end in a name, not '..'")
    shown = printable(path)
    try:
        parent_fd, parent_rel = _open_listed_dir(ws, "/".join(parts[:-1]) or ".")
        try:
            name = parts[-1]
            st = os.lstat(name, dir_fd=parent_fd)
            kind = kind_of(st.st_mode)
            if kind != "directory":
                os.unlink(name, dir_fd=parent_fd)
            elif params.recursive:
                shutil.rmtree(name, dir_fd=parent_fd)
            else:
                try:
                    os.rmdir(name, dir_fd=parent_fd)
                except OSError as exc:
                    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                        raise
                    raise invalid_parameter(
                        "recursive",
                        "directory not empty",
                        message=f"{shown!r} is a directory that is not empty",
                        hint="pass recursive: true to delete it with everything in it",
                    ) from None
        finally:
            os.close(parent_fd)
    except OSError as exc:
        raise os_error(exc, shown) from None
    rel = name if parent_rel == "." else f"{parent_rel}/{name}"
    return FileDeleteResult(**wire_path(rel), type=kind)
