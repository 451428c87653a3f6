"""Workspace confinement: every path is resolved beneath the workspace, race-safely.

Untrusted code runs concurrently (as another user) and may swap any path component for a
symlink between a check and a use. So there is no separate check: the path is walked component
by component from a directory fd, each component opened with O_PATH|O_NOFOLLOW and typed with
fstat on the fd actually held. Symlinks are never followed by the kernel; their targets are
spliced into the walk and obey the same rules (absolute targets must name the workspace, `..`
may not climb above it). `..` pops the walk's own stack of directory fds instead of asking the
kernel, so a directory moved out of the workspace cannot be used to escape either.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque
from contextlib import suppress
from dataclasses import dataclass, field
from types import TracebackType

from rpc.errors import BoxwrightError, ErrorCode, invalid_parameter
from rpc.models.files import EntryType

MAX_SYMLINKS = 40  # like the kernel's own limit
MAX_STEPS = 10_000  # bounds the walk even if a racer keeps recreating components

_PATH_FLAGS = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC


def outside(path: str, why: str) -> BoxwrightError:
    return BoxwrightError(
        ErrorCode.PATH_OUTSIDE_WORKSPACE,
        f"{path!r} is outside the workspace: {why}",
        details={"path": path},
    )


def split_relative(path: str) -> list[str]:
    """Components of a workspace-relative path ('.' and empty ones dropped, '..' kept)."""
    if "\x00" in path:
        raise invalid_parameter("path", "must not contain NUL bytes", message="path contains a NUL byte")
    if path.startswith("/"):
        raise outside(path, "absolute paths are not allowed; use a path relative to the workspace")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    depth = 0
    for part in parts:  # refuse an obvious escape before touching the filesystem
        depth += -1 if part == ".." else 1
        if depth < 0:
            raise outside(path, "'..' climbs above it")
    return parts


def kind_of(mode: int) -> EntryType:
    """The entry type names used on the wire."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def os_error(exc: OSError, path: str) -> BoxwrightError:
    """Translate an OSError into the error model; never a traceback, never an internal path."""
    code = exc.errno
    details = {"path": path, "errno": errno.errorcode.get(code or 0, str(code))}
    if code == errno.ENOENT:
        return BoxwrightError(ErrorCode.FILE_NOT_FOUND, f"{path!r} does not exist", details=details)
    if code == errno.ENOTDIR:
        return BoxwrightError(ErrorCode.NOT_A_DIRECTORY, f"a component of {path!r} is not a directory", details=details)
    if code == errno.EISDIR:
        return BoxwrightError(ErrorCode.NOT_A_FILE, f"{path!r} is a directory", details=details)
    if code == errno.ENXIO:
        return BoxwrightError(
            ErrorCode.NOT_A_FILE,
            f"{path!r} is not a regular file",
            hint="only regular files can be read or written",
            details=details,
        )
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return BoxwrightError(ErrorCode.PERMISSION_DENIED, f"permission denied for {path!r}", details=details)
    if code == errno.ELOOP:
        return BoxwrightError(
            ErrorCode.INVALID_PARAMETER, f"{path!r}: too many levels of symbolic links", details=details
        )
    if code == errno.ENAMETOOLONG:
        return BoxwrightError(ErrorCode.INVALID_PARAMETER, f"{path!r}: file name too long", details=details)
    if code == errno.EFBIG:
        return BoxwrightError(ErrorCode.FILE_TOO_LARGE, f"{path!r}: file too large", details=details)
    if code in (errno.ENOSPC, errno.EDQUOT):
        return BoxwrightError(
            ErrorCode.EXECUTION_ERROR,
            "no space left in the workspace",
            hint="delete files you no longer need",
            details=details,
        )
    return BoxwrightError(ErrorCode.EXECUTION_ERROR, f"{path!r}: {exc.strerror or 'I/O error'}", details=details)


@dataclass
class Target:
    """Where a path leads: entry `name` in directory `dir_fd`, or `dir_fd` itself when `name` is None.

    `stat` is the lstat of the entry (never a symlink: those were followed), None when it does
    not exist. `rel` is the canonical workspace-relative path ('.' for the root). Owns `dir_fd`.
    `created` lists the directories the walk made (create_parents), outermost first, so a failed
    write can take them away again.
    """

    dir_fd: int
    name: str | None
    rel: str
    stat: os.stat_result | None
    created: list[str] = field(default_factory=list)

    def close(self) -> None:
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1

    def __enter__(self) -> Target:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class Workspace:
    """Resolves workspace-relative paths into held directory fds; see the module docstring."""

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self._root_parts = [part for part in self.root.split("/") if part]

    def open_root(self) -> int:
        """An O_PATH fd of the workspace directory."""
        try:
            return os.open(self.root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise BoxwrightError(
                ErrorCode.EXECUTION_ERROR,
                f"the workspace is not available: {exc.strerror}",
                hint="the sandbox's workspace volume is missing; recreate the sandbox",
            ) from None

    def locate(self, path: str, *, create_parents: bool = False) -> Target:
        """Walk `path` beneath the workspace, following in-workspace symlinks.

        Every directory on the way must exist (or is created with `create_parents`); the last
        component may be missing. Raises PATH_OUTSIDE_WORKSPACE, FILE_NOT_FOUND, NOT_A_DIRECTORY
        or OSError (map it with `os_error`).
        """
        parts = deque(split_relative(path))
        root_fd = self.open_root()
        stack: list[tuple[str, int]] = []  # directories below the root: (name, O_PATH fd)
        links = steps = 0
        via_link: str | None = None  # the last symlink followed, for clearer errors
        created: list[str] = []  # workspace-relative directories made by this walk

        def cur() -> int:
            return stack[-1][1] if stack else root_fd

        def rel(name: str | None = None) -> str:
            names = [n for n, _ in stack] + ([name] if name else [])
            return "/".join(names) or "."

        def drop_stack() -> None:
            while stack:
                os.close(stack.pop()[1])

        try:
            while parts:
                steps += 1
                if steps > MAX_STEPS:
                    raise BoxwrightError(ErrorCode.EXECUTION_ERROR, f"{path!r} keeps changing while being resolved")
                name = parts.popleft()
                if name == "..":
                    if not stack:
                        why = f"symlink {via_link!r} points outside it" if via_link else "'..' climbs above it"
                        raise outside(path, why)
                    os.close(stack.pop()[1])
                    continue
                last = not parts
                try:
                    fd = os.open(name, _PATH_FLAGS, dir_fd=cur())
                except FileNotFoundError:
                    if last:
                        return Target(os.dup(cur()), name, rel(name), None, created)
                    if not create_parents:
                        raise BoxwrightError(
                            ErrorCode.FILE_NOT_FOUND,
                            f"{path!r}: directory {rel(name)!r} does not exist",
                            details={"path": path},
                        ) from None
                    with suppress(FileExistsError):
                        os.mkdir(name, 0o775, dir_fd=cur())
                        created.append(rel(name))
                    parts.appendleft(name)  # look again at whatever is there now
                    continue
                try:
                    st = os.fstat(fd)
                    if stat.S_ISLNK(st.st_mode):
                        links += 1
                        if links > MAX_SYMLINKS:
                            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
                        via_link = rel(name)
                        target = os.readlink("", dir_fd=fd)  # the link we hold, not whatever is there now
                        if target.startswith("/"):
                            tparts = [p for p in target.split("/") if p not in ("", ".")]
                            if tparts[: len(self._root_parts)] != self._root_parts:
                                raise outside(path, f"symlink {via_link!r} points outside it")
                            drop_stack()
                            remainder = tparts[len(self._root_parts) :]
                        else:
                            remainder = [p for p in target.split("/") if p not in ("", ".")]
                        parts.extendleft(reversed(remainder))
                        continue
                    if last:
                        return Target(os.dup(cur()), name, rel(name), st, created)
                    if not stat.S_ISDIR(st.st_mode):
                        raise BoxwrightError(
                            ErrorCode.NOT_A_DIRECTORY,
                            f"{path!r}: {rel(name)!r} is not a directory",
                            details={"path": path},
                        )
                    stack.append((name, fd))
                    fd = -1  # now owned by the stack
                finally:
                    if fd >= 0:
                        os.close(fd)
            # The path ends on a directory we hold (the root, or after '..' / a symlink to a directory).
            return Target(os.dup(cur()), None, rel(), os.fstat(cur()), created)
        finally:
            drop_stack()
            os.close(root_fd)

    def directory(self, path: str) -> str:
        """Absolute path of an existing directory inside the workspace (used for code.run's cwd)."""
        try:
            with self.locate(path) as target:
                if target.stat is None:
                    raise BoxwrightError(
                        ErrorCode.FILE_NOT_FOUND, f"directory {path!r} does not exist", details={"path": path}
                    )
                if not stat.S_ISDIR(target.stat.st_mode):
                    raise BoxwrightError(
                        ErrorCode.NOT_A_DIRECTORY, f"{path!r} is not a directory", details={"path": path}
                    )
                return self.root if target.rel == "." else os.path.join(self.root, target.rel)
        except OSError as exc:
            raise os_error(exc, path) from None
