"""file.write / file.read edge cases: all-or-nothing appends, no leftover directories, long names, trailing '/'."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.files import FileDeleteParams, FileListParams, FileReadParams, FileWriteParams
from sandbox_image.files import ops
from sandbox_image.files.ops import delete_path, list_dir, read_file, write_file
from sandbox_image.files.workspace import Workspace


@pytest.fixture
def ws(workspace: Path) -> Workspace:
    return Workspace(str(workspace))


def write(ws: Workspace, path: str, content: str, **kw: Any) -> Any:
    return write_file(ws, FileWriteParams(path=path, content=content, **kw))


def error_of(fn: Any, *args: Any, **kw: Any) -> BoxwrightError:
    with pytest.raises(BoxwrightError) as info:
        fn(*args, **kw)
    return info.value


@pytest.fixture
def disk_fills_halfway(monkeypatch: pytest.MonkeyPatch) -> None:
    """The low-level write puts half the bytes on disk, then the disk is full (ENOSPC)."""

    def half_then_enospc(fd: int, data: bytes) -> None:
        os.write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(ops, "_write_all", half_then_enospc)


# ---------------------------------------------------------------- full disk


def test_a_failed_append_leaves_the_file_as_it_was_so_a_retry_does_not_duplicate(
    ws: Workspace, workspace: Path, disk_fills_halfway: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "log.txt").write_text("abc")
    err = error_of(lambda: write(ws, "log.txt", "defghij", append=True))
    assert err.code == ErrorCode.EXECUTION_ERROR and "no space left" in err.message
    assert (workspace / "log.txt").read_text() == "abc"
    monkeypatch.undo()  # space again: the retry appends exactly once
    assert write(ws, "log.txt", "defghij", append=True).size == 10
    assert (workspace / "log.txt").read_text() == "abcdefghij"


def test_a_failed_append_to_a_new_file_leaves_neither_file_nor_directories(
    ws: Workspace, workspace: Path, disk_fills_halfway: None
) -> None:
    (workspace / "keep").mkdir()
    assert error_of(lambda: write(ws, "keep/new/deeper/log.txt", "data", append=True)).code == (
        ErrorCode.EXECUTION_ERROR
    )
    assert list(workspace.iterdir()) == [workspace / "keep"] and list((workspace / "keep").iterdir()) == []


def test_a_failed_write_removes_the_parent_directories_it_made_but_nothing_else(
    ws: Workspace, workspace: Path, disk_fills_halfway: None
) -> None:
    (workspace / "keep").mkdir()
    (workspace / "keep" / "other.txt").write_text("x")
    assert error_of(lambda: write(ws, "keep/a/b/c.txt", "content")).code == ErrorCode.EXECUTION_ERROR
    assert error_of(lambda: write(ws, "x/y.txt", "content")).code == ErrorCode.EXECUTION_ERROR
    assert sorted(p.name for p in workspace.iterdir()) == ["keep"]
    assert sorted(p.name for p in (workspace / "keep").iterdir()) == ["other.txt"]


# ---------------------------------------------------------------- long names


@pytest.mark.parametrize("name", ["é" * 127, "😀" * 63, "a" * 255, "ü" + "€" * 84])
def test_names_up_to_255_bytes_can_be_written_whatever_their_characters(
    ws: Workspace, workspace: Path, name: str
) -> None:
    assert len(name.encode()) <= 255
    assert write(ws, name, "x").created
    assert write(ws, name, "y").size == 1  # replacing an existing one too
    assert (workspace / name).read_text() == "y" and [p.name for p in workspace.iterdir()] == [name]


def test_the_temp_name_is_bounded_in_bytes_and_cut_between_characters() -> None:
    for name in ["é" * 127, "😀" * 63, "€" * 85, "a" * 255, os.fsdecode(b"\xff" * 255)]:
        tmp = ops._tmp_name(name)
        raw = os.fsencode(tmp)
        assert len(raw) <= 255 and tmp.endswith(".boxwright-tmp")
        prefix = tmp[1 : -len(".0123456789ab.boxwright-tmp")]
        assert name.startswith(prefix) and len(os.fsencode(prefix)) <= ops._TMP_PREFIX_BYTES
    assert ops._tmp_name("short.txt").startswith(".short.txt.")


# ---------------------------------------------------------------- trailing slash


@pytest.mark.parametrize("path", ["newdir/", "a/b/", "newdir/."])
def test_writing_to_a_path_ending_in_slash_is_refused_and_creates_nothing(
    ws: Workspace, workspace: Path, path: str
) -> None:
    for append in (False, True):
        err = error_of(write, ws, path, "x", append=append)
        assert err.code == ErrorCode.NOT_A_FILE and "names a directory" in err.message
        assert "trailing '/'" in err.hint
    assert list(workspace.iterdir()) == []


def test_reading_a_file_with_a_trailing_slash_is_refused(ws: Workspace, workspace: Path) -> None:
    (workspace / "afile").write_text("secret")
    for path in ["afile/", "afile/."]:
        err = error_of(read_file, ws, FileReadParams(path=path))
        assert err.code == ErrorCode.NOT_A_FILE and "names a directory" in err.message
    assert read_file(ws, FileReadParams(path="afile")).content == "secret"


def test_directory_operations_still_take_a_trailing_slash(ws: Workspace, workspace: Path) -> None:
    (workspace / "d" / "sub").mkdir(parents=True)
    (workspace / "d" / "f.txt").write_text("x")
    assert [e.name for e in list_dir(ws, FileListParams(path="d/")).entries] == ["f.txt", "sub"]
    assert delete_path(ws, FileDeleteParams(path="d/sub/")).type == "directory"
    assert delete_path(ws, FileDeleteParams(path="d/", recursive=True)).type == "directory"
    assert list(workspace.iterdir()) == []
