"""Workspace file operations: confinement (incl. symlink swaps), encodings, parts, FIFOs, atomic writes, listing."""

from __future__ import annotations

import base64
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.files import MAX_OFFSET, FileDeleteParams, FileListParams, FileReadParams, FileWriteParams
from sandbox_image.files import ops
from sandbox_image.files.ops import delete_path, list_dir, read_file, write_file
from sandbox_image.files.workspace import Workspace


@pytest.fixture
def ws(workspace: Path) -> Workspace:
    return Workspace(str(workspace))


def read(ws: Workspace, path: str, **kw: Any) -> Any:
    return read_file(ws, FileReadParams(path=path, **kw))


def write(ws: Workspace, path: str, content: str, **kw: Any) -> Any:
    return write_file(ws, FileWriteParams(path=path, content=content, **kw))


def code_of(fn: Callable[[], Any]) -> ErrorCode:
    with pytest.raises(BoxwrightError) as info:
        fn()
    return info.value.code


# ---------------------------------------------------------------- confinement


@pytest.mark.parametrize("path", ["../../etc/passwd", "..", "a/../../x", "/etc/passwd", "/"])
def test_paths_escaping_lexically_are_refused(ws: Workspace, path: str) -> None:
    assert code_of(lambda: read(ws, path)) == ErrorCode.PATH_OUTSIDE_WORKSPACE
    assert code_of(lambda: write(ws, path, "x")) == ErrorCode.PATH_OUTSIDE_WORKSPACE
    assert code_of(lambda: list_dir(ws, FileListParams(path=path))) == ErrorCode.PATH_OUTSIDE_WORKSPACE


def test_absolute_path_message_is_clear(ws: Workspace) -> None:
    with pytest.raises(BoxwrightError) as info:
        read(ws, "/etc/passwd")
    assert "absolute" in info.value.message
    assert info.value.hint


def test_symlink_to_outside_directory_is_refused(ws: Workspace, workspace: Path, outside: Path) -> None:
    (workspace / "out").symlink_to(outside)
    assert code_of(lambda: read(ws, "out/secret.txt")) == ErrorCode.PATH_OUTSIDE_WORKSPACE
    assert code_of(lambda: write(ws, "out/new.txt", "x")) == ErrorCode.PATH_OUTSIDE_WORKSPACE
    assert code_of(lambda: list_dir(ws, FileListParams(path="out"))) == ErrorCode.PATH_OUTSIDE_WORKSPACE
    assert not (outside / "new.txt").exists()


def test_symlink_to_outside_file_and_relative_escape_are_refused(ws: Workspace, workspace: Path, outside: Path) -> None:
    (workspace / "leak.txt").symlink_to(outside / "secret.txt")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "up").symlink_to("../../outside/secret.txt")
    for path in ("leak.txt", "sub/up"):
        with pytest.raises(BoxwrightError) as info:
            read(ws, path)
        assert info.value.code == ErrorCode.PATH_OUTSIDE_WORKSPACE
        assert "symlink" in info.value.message
    # Writing through the link must not touch the target either.
    assert code_of(lambda: write(ws, "leak.txt", "pwned")) == ErrorCode.PATH_OUTSIDE_WORKSPACE
    assert (outside / "secret.txt").read_text() == "top secret"


def test_symlinks_inside_the_workspace_are_followed(ws: Workspace, workspace: Path) -> None:
    (workspace / "data").mkdir()
    (workspace / "data" / "real.txt").write_text("hello")
    (workspace / "rel").symlink_to("data/real.txt")
    (workspace / "abs").symlink_to(workspace / "data" / "real.txt")
    (workspace / "dirlink").symlink_to("data")
    assert read(ws, "rel").content == "hello"
    assert read(ws, "abs").content == "hello"
    assert read(ws, "dirlink/real.txt").path == "data/real.txt"
    assert [e.name for e in list_dir(ws, FileListParams(path="dirlink")).entries] == ["real.txt"]
    write(ws, "rel", "changed")
    assert (workspace / "data" / "real.txt").read_text() == "changed"
    assert (workspace / "rel").is_symlink()


def test_component_swapped_for_symlink_during_walk_is_refused(
    ws: Workspace, workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Untrusted code replaces `sub` by a symlink right after its parent was checked."""
    (workspace / "sub").mkdir()
    (outside / "f.txt").write_text("outside")
    (workspace / "sub" / "f.txt").write_text("inside")
    real_open = os.open
    swapped = []

    def racing_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if path == "sub" and not swapped:
            swapped.append(True)
            os.rename(workspace / "sub", workspace / "sub.moved")
            os.symlink(outside, workspace / "sub")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", racing_open)
    assert code_of(lambda: read(ws, "sub/f.txt")) == ErrorCode.PATH_OUTSIDE_WORKSPACE
    assert swapped


def test_final_file_swapped_for_symlink_before_open_is_refused(
    ws: Workspace, workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The swap happens between the walk and the final open: O_NOFOLLOW catches it, re-resolution refuses."""
    (workspace / "f.txt").write_text("inside")
    real_open = os.open
    swapped = []

    def racing_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if path == "f.txt" and not flags & os.O_PATH and not swapped:
            swapped.append(True)
            os.unlink(workspace / "f.txt")
            os.symlink(outside / "secret.txt", workspace / "f.txt")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", racing_open)
    assert code_of(lambda: read(ws, "f.txt")) == ErrorCode.PATH_OUTSIDE_WORKSPACE
    assert swapped


def test_nul_in_path_is_invalid(ws: Workspace) -> None:
    assert code_of(lambda: read(ws, "a\x00b")) == ErrorCode.INVALID_PARAMETER


# ---------------------------------------------------------------- read / write


def test_base64_round_trip_of_arbitrary_bytes(ws: Workspace, workspace: Path) -> None:
    blob = bytes(range(256)) * 5
    result = write(ws, "bin/blob.dat", base64.b64encode(blob).decode(), encoding="base64")
    assert result.size == len(blob) and result.created and result.path == "bin/blob.dat"
    assert (workspace / "bin" / "blob.dat").read_bytes() == blob
    back = read(ws, "bin/blob.dat", encoding="base64")
    assert base64.b64decode(back.content) == blob
    assert back.eof and back.nextOffset is None and back.size == len(blob)


def test_utf8_round_trip(ws: Workspace) -> None:
    text = "héllo wörld — 你好 🎉\nline 2\n"
    write(ws, "t.txt", text)
    result = read(ws, "t.txt")
    assert result.content == text
    assert result.size == len(text.encode())


def test_non_utf8_is_not_text_with_a_hint(ws: Workspace, workspace: Path) -> None:
    (workspace / "b.bin").write_bytes(b"ok\xff\xfe")
    with pytest.raises(BoxwrightError) as info:
        read(ws, "b.bin")
    assert info.value.code == ErrorCode.NOT_TEXT
    assert "base64" in info.value.hint
    assert info.value.details["invalidByteOffset"] == 2


def test_offset_limit_and_split_multibyte_character(ws: Workspace, workspace: Path) -> None:
    text = "aé€🎉z" * 3  # 1-, 2-, 3- and 4-byte characters
    (workspace / "t.txt").write_text(text)
    first = read(ws, "t.txt", limit=2)  # "a" + half of "é"
    assert first.content == "a" and first.length == 1 and not first.eof and first.nextOffset == 1
    parts, offset = [], 0
    while True:
        part = read(ws, "t.txt", offset=offset, limit=5)
        parts.append(part.content)
        assert part.length <= 5
        if part.eof:
            break
        offset = part.nextOffset
    assert "".join(parts) == text


def test_offset_inside_a_character_and_limit_too_small(ws: Workspace, workspace: Path) -> None:
    (workspace / "t.txt").write_text("é🎉")
    assert code_of(lambda: read(ws, "t.txt", offset=1)) == ErrorCode.INVALID_PARAMETER
    assert code_of(lambda: read(ws, "t.txt", offset=2, limit=2)) == ErrorCode.INVALID_PARAMETER
    (workspace / "euro.txt").write_text("€€")  # e2 82 ac e2 82 ac: offsets 1 and 2 are inside the first one
    for offset in (1, 2, 4, 5):
        assert code_of(lambda at=offset: read(ws, "euro.txt", offset=at)) == ErrorCode.INVALID_PARAMETER, offset
    assert read(ws, "euro.txt", offset=3).content == "€"


def test_an_offset_past_what_a_json_number_holds_exactly_is_refused_by_the_model() -> None:
    assert FileReadParams(path="a", offset=MAX_OFFSET).offset == MAX_OFFSET
    for offset in (MAX_OFFSET + 1, 2**63, 2**64):
        with pytest.raises(ValidationError):
            FileReadParams(path="a", offset=offset)


def test_offset_past_end_is_empty_eof(ws: Workspace, workspace: Path) -> None:
    (workspace / "t.txt").write_text("abc")
    result = read(ws, "t.txt", offset=10)
    assert result.content == "" and result.eof and result.size == 3


def test_fifo_is_refused_without_hanging(ws: Workspace, workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    outcome: list[ErrorCode] = []

    def attempt() -> None:
        outcome.append(code_of(lambda: read(ws, "pipe")))
        outcome.append(code_of(lambda: write(ws, "pipe", "x", append=True)))
        outcome.append(code_of(lambda: write(ws, "pipe", "x")))

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=5)
    assert not worker.is_alive(), "a FIFO made the agent hang"
    assert outcome == [ErrorCode.NOT_A_FILE] * 3


def test_write_replaces_atomically_and_keeps_mode(ws: Workspace, workspace: Path) -> None:
    target = workspace / "f.txt"
    target.write_text("old")
    target.chmod(0o640)
    with open(target) as reader:  # a reader of the old file keeps seeing the old content
        result = write(ws, "f.txt", "new content")
        assert reader.read() == "old"
    assert result.size == len("new content") and not result.created
    assert target.read_text() == "new content"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in workspace.iterdir()) == ["f.txt"]  # no temp file left


def test_append(ws: Workspace, workspace: Path) -> None:
    assert write(ws, "log.txt", "a", append=True).created
    result = write(ws, "log.txt", "bc", append=True)
    assert result.size == 3 and not result.created
    assert (workspace / "log.txt").read_text() == "abc"


def test_create_parents(ws: Workspace, workspace: Path) -> None:
    assert write(ws, "a/b/c.txt", "x").path == "a/b/c.txt"
    assert (workspace / "a" / "b" / "c.txt").read_text() == "x"
    assert code_of(lambda: write(ws, "x/y/z.txt", "x", createParents=False)) == ErrorCode.FILE_NOT_FOUND
    assert not (workspace / "x").exists()


def test_os_errors_are_mapped(ws: Workspace, workspace: Path) -> None:
    (workspace / "d").mkdir()
    (workspace / "f.txt").write_text("x")
    assert code_of(lambda: read(ws, "missing.txt")) == ErrorCode.FILE_NOT_FOUND
    assert code_of(lambda: read(ws, "d")) == ErrorCode.NOT_A_FILE
    assert code_of(lambda: read(ws, ".")) == ErrorCode.NOT_A_FILE
    assert code_of(lambda: write(ws, "d", "x")) == ErrorCode.NOT_A_FILE
    assert code_of(lambda: read(ws, "f.txt/x")) == ErrorCode.NOT_A_DIRECTORY
    assert code_of(lambda: write(ws, "f.txt/x", "x")) == ErrorCode.NOT_A_DIRECTORY
    assert code_of(lambda: list_dir(ws, FileListParams(path="f.txt"))) == ErrorCode.NOT_A_DIRECTORY
    assert code_of(lambda: list_dir(ws, FileListParams(path="nope"))) == ErrorCode.FILE_NOT_FOUND


def test_bad_base64_and_too_large(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    assert code_of(lambda: write(ws, "x.bin", "not base64!!", encoding="base64")) == ErrorCode.INVALID_PARAMETER
    monkeypatch.setattr(ops, "MAX_WRITE_BYTES", 10)
    assert code_of(lambda: write(ws, "x.txt", "x" * 11)) == ErrorCode.FILE_TOO_LARGE
    assert code_of(lambda: write(ws, "x.bin", base64.b64encode(b"x" * 11).decode(), encoding="base64")) == (
        ErrorCode.FILE_TOO_LARGE
    )
    assert write(ws, "x.txt", "x" * 10).size == 10


# ---------------------------------------------------------------- list


@pytest.fixture
def tree(workspace: Path, outside: Path) -> Path:
    (workspace / "b.txt").write_text("bb")
    (workspace / "a").mkdir()
    (workspace / "a" / "inner.txt").write_text("i")
    (workspace / "a" / "deeper").mkdir()
    (workspace / "a" / "deeper" / "leaf.txt").write_text("leaf")
    (workspace / "a-b").mkdir()
    (workspace / "link").symlink_to("a")
    (workspace / "escape").symlink_to(outside)
    os.mkfifo(workspace / "fifo")
    return workspace


def test_list_flat_with_types(ws: Workspace, tree: Path) -> None:
    result = list_dir(ws, FileListParams())
    assert result.path == "." and not result.truncated
    types = {e.name: e.type for e in result.entries}
    assert types == {
        "a": "directory",
        "a-b": "directory",
        "b.txt": "file",
        "escape": "symlink",
        "fifo": "other",
        "link": "symlink",
    }
    assert [e.name for e in result.entries] == sorted(types)
    entry = next(e for e in result.entries if e.name == "b.txt")
    assert entry.size == 2 and entry.path == "b.txt" and entry.mtime.endswith("Z")


def test_list_recursive_does_not_follow_symlinks(ws: Workspace, tree: Path) -> None:
    result = list_dir(ws, FileListParams(recursive=True))
    paths = [e.path for e in result.entries]
    assert paths == ["a", "a/deeper", "a/deeper/leaf.txt", "a/inner.txt", "a-b", "b.txt", "escape", "fifo", "link"]
    sub = list_dir(ws, FileListParams(path="a", recursive=True))
    assert [e.path for e in sub.entries] == ["a/deeper", "a/deeper/leaf.txt", "a/inner.txt"]


def test_list_max_entries_truncates_keeping_shallow_entries(ws: Workspace, tree: Path) -> None:
    result = list_dir(ws, FileListParams(recursive=True, maxEntries=6))
    assert result.truncated
    assert len(result.entries) == 6
    assert {e.path for e in result.entries} == {"a", "a-b", "b.txt", "escape", "fifo", "link"}
    exact = list_dir(ws, FileListParams(recursive=True, maxEntries=9))
    assert not exact.truncated and len(exact.entries) == 9


# ---------------------------------------------------------------- names that are not UTF-8

ODD = b"caf\xe9.txt"  # Latin-1, as unzipped archives leave it
ODD_B64 = base64.b64encode(b"d/" + ODD).decode()


def test_non_utf8_names_are_valid_text_with_their_exact_bytes(ws: Workspace, workspace: Path) -> None:
    (workspace / "d").mkdir()
    with open(os.fsencode(workspace) + b"/d/" + ODD, "wb") as fh:
        fh.write(b"bonjour")
    (workspace / "d" / "plain.txt").write_text("p")
    listing = list_dir(ws, FileListParams(path="d"))
    wire = listing.model_dump_json()
    wire.encode("utf-8")  # no lone surrogates: valid JSON text for strict clients
    odd, plain = listing.entries
    assert odd.name == "caf\\xe9.txt" and odd.path == "d/caf\\xe9.txt" and odd.pathBase64 == ODD_B64
    assert plain.pathBase64 is None and listing.pathBase64 is None
    got = read_file(ws, FileReadParams(path=odd.pathBase64, pathEncoding="base64"))
    assert got.content == "bonjour" and got.pathBase64 == ODD_B64 and got.path == "d/caf\\xe9.txt"
    written = write_file(ws, FileWriteParams(path=ODD_B64, pathEncoding="base64", content="!", append=True))
    assert written.size == 8 and written.pathBase64 == ODD_B64
    # The printable form is a different (nonexistent) name: it never silently hits the odd file.
    assert code_of(lambda: read(ws, odd.path)) == ErrorCode.FILE_NOT_FOUND


def test_path_encoding_base64_must_be_base64(ws: Workspace) -> None:
    for bad in ("not base64!", "===="):
        assert code_of(lambda p=bad: read(ws, p, pathEncoding="base64")) == ErrorCode.INVALID_PARAMETER


# ---------------------------------------------------------------- delete


def delete(ws: Workspace, path: str, **kw: Any) -> Any:
    return delete_path(ws, FileDeleteParams(path=path, **kw))


def test_delete_file_symlink_and_directories(ws: Workspace, tree: Path, outside: Path) -> None:
    assert delete(ws, "b.txt").type == "file" and not (tree / "b.txt").exists()
    assert delete(ws, "escape").type == "symlink"  # the link, not what it points at
    assert not (tree / "escape").is_symlink() and (outside / "secret.txt").exists()
    assert delete(ws, "link").type == "symlink" and (tree / "a" / "inner.txt").exists()
    assert delete(ws, "a-b").type == "directory"  # empty
    with pytest.raises(BoxwrightError) as info:
        delete(ws, "a")
    assert info.value.code == ErrorCode.INVALID_PARAMETER and "recursive" in info.value.hint
    assert delete(ws, "a", recursive=True).path == "a" and not (tree / "a").exists()
    assert delete(ws, "fifo").type == "other"


def test_delete_refuses_the_workspace_escapes_and_missing_files(ws: Workspace, tree: Path, outside: Path) -> None:
    for path in (".", "a/..", "./"):
        assert code_of(lambda p=path: delete(ws, p, recursive=True)) == ErrorCode.INVALID_PARAMETER, path
    for path in ("../x", "/etc/passwd", "escape/secret.txt"):
        assert code_of(lambda p=path: delete(ws, p)) == ErrorCode.PATH_OUTSIDE_WORKSPACE, path
    assert (outside / "secret.txt").exists()
    assert code_of(lambda: delete(ws, "nope.txt")) == ErrorCode.FILE_NOT_FOUND
    assert code_of(lambda: delete(ws, "b.txt/x")) == ErrorCode.NOT_A_DIRECTORY


def test_delete_through_an_inside_symlink_deletes_inside(ws: Workspace, tree: Path) -> None:
    assert delete(ws, "link/inner.txt").path == "a/inner.txt"
    assert not (tree / "a" / "inner.txt").exists()


def test_delete_by_raw_bytes(ws: Workspace, workspace: Path) -> None:
    (workspace / "d").mkdir()
    with open(os.fsencode(workspace) + b"/d/" + ODD, "wb") as fh:
        fh.write(b"x")
    gone = delete(ws, ODD_B64, pathEncoding="base64")
    assert gone.pathBase64 == ODD_B64 and os.listdir(workspace / "d") == []


# ---------------------------------------------------------------- inline small reads (the agent's fast path)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize(
    ("size", "offset", "limit", "small"),
    [
        (1024, 0, FileReadParams.model_fields["limit"].default, True),
        (ops.INLINE_READ_BYTES, 0, 10 * ops.INLINE_READ_BYTES, True),
        (ops.INLINE_READ_BYTES + 1, 0, 10 * ops.INLINE_READ_BYTES, False),
        (ops.INLINE_READ_BYTES + 1, 0, ops.INLINE_READ_BYTES, True),  # the limit bounds the read
        (3 * ops.INLINE_READ_BYTES, 2 * ops.INLINE_READ_BYTES + 1, 10 * ops.INLINE_READ_BYTES, True),
        (10, 50, 100, True),  # offset past the end reads nothing
    ],
)
def test_small_reads_are_told_apart_by_the_bytes_they_read(
    ws: Workspace, workspace: Path, size: int, offset: int, limit: int, small: bool
) -> None:
    (workspace / "f.bin").write_bytes(b"a" * size)
    opened = ops.open_read(ws, FileReadParams(path="f.bin", offset=offset, limit=limit))
    assert opened.small is small
    got = opened.finish()
    assert got.length == max(0, min(limit, size - offset)) and got.size == size


def test_an_abandoned_read_closes_its_file_once_and_cannot_be_finished(ws: Workspace, workspace: Path) -> None:
    (workspace / "f.txt").write_text("hello")
    before = _open_fds()
    opened = ops.open_read(ws, FileReadParams(path="f.txt"))
    assert _open_fds() == before + 1
    opened.abandon()
    opened.abandon()  # idempotent: the fd is not closed twice (it may belong to someone else by now)
    assert _open_fds() == before
    with pytest.raises(RuntimeError):
        opened.finish()


def test_a_finished_read_closes_its_file_and_abandon_is_then_a_no_op(ws: Workspace, workspace: Path) -> None:
    (workspace / "f.txt").write_text("hello")
    before = _open_fds()
    opened = ops.open_read(ws, FileReadParams(path="f.txt"))
    assert opened.finish().content == "hello"
    assert _open_fds() == before
    opened.abandon()
    assert _open_fds() == before


def test_open_read_refuses_what_read_refuses_without_leaking_a_descriptor(ws: Workspace, workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    (workspace / "dir").mkdir()
    before = _open_fds()
    refused = {"pipe": ErrorCode.NOT_A_FILE, "dir": ErrorCode.NOT_A_FILE, "nope": ErrorCode.FILE_NOT_FOUND}
    for path, code in refused.items():
        assert code_of(lambda p=path: ops.open_read(ws, FileReadParams(path=p))) == code
    assert _open_fds() == before


async def test_the_handler_reads_small_files_inline_and_large_ones_in_a_thread(
    ws: Workspace, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from sandbox_image import files
    from sandbox_image.dispatcher import Dispatcher

    hops: list[object] = []
    real = asyncio.to_thread

    async def counting(fn: Any, *args: Any) -> Any:
        hops.append(fn)
        return await real(fn, *args)

    monkeypatch.setattr(files.asyncio, "to_thread", counting)
    dispatcher = Dispatcher("agent")
    files.register(dispatcher, ws)
    (workspace / "small.txt").write_text("s" * 1024)
    (workspace / "big.txt").write_text("b" * (ops.INLINE_READ_BYTES + 10))

    async def length(path: str) -> int:
        answer = await dispatcher.dispatch({"jsonrpc": "2.0", "id": 1, "method": "file.read", "params": {"path": path}})
        return int(answer["result"]["length"])

    assert await length("small.txt") == 1024 and hops == []
    assert await length("big.txt") == ops.INLINE_READ_BYTES + 10 and len(hops) == 1


def test_a_flag_takes_only_true_or_false() -> None:
    """pydantic's lax mode reads "yes", "on" and 1 as true: a `recursive: "yes"` would delete a tree."""
    for value in ("yes", "true", 1, 0, "off"):
        with pytest.raises(ValidationError):
            FileDeleteParams.model_validate({"path": "d", "recursive": value})
    assert FileDeleteParams.model_validate({"path": "d", "recursive": True}).recursive is True
    assert FileDeleteParams.model_validate_json('{"path": "d", "recursive": false}').recursive is False
    assert FileDeleteParams.model_json_schema()["properties"]["recursive"]["type"] == "boolean"


def test_a_listing_of_deep_long_names_stops_at_its_byte_budget(ws: Workspace, workspace: Path) -> None:
    """Each entry carries its whole path: 10 000 files under 100 levels of 250-character names made the
    agent build gigabytes and be killed for memory, taking the sandbox down with it."""
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(60):
            os.mkdir("d" * 240, dir_fd=fd)
            nxt = os.open("d" * 240, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        for i in range(400):
            os.close(os.open(f"f{i:03}", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    listed = list_dir(ws, FileListParams(path=".", recursive=True, maxEntries=10_000))
    sent = sum(ops.ENTRY_BYTES + len(e.path) + len(e.pathBase64 or "") + len(e.name) for e in listed.entries)
    assert listed.truncated and 60 < len(listed.entries) < 460
    assert ops.MAX_LIST_BYTES < sent < ops.MAX_LIST_BYTES + 30_000
