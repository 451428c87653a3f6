"""Results at the documented limits fit one MCP message whatever the bytes are. A text travels twice, as
JSON and inside the text block's JSON: a control character takes 13 bytes, a newline 5, invalid UTF-8 6
(U+FFFD) — so code_run's output at its largest cap and file_read at its largest limit came back
PAYLOAD_TOO_LARGE, for code_run after the code had run, its output lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from host.mcp.results import MAX_RESULT_BYTES, success, wire_bytes
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.code import (
    MAX_OUTPUT_BYTES,
    MAX_OUTPUT_WIRE_BYTES,
    MAX_PROCESS_OUTPUT_WIRE_BYTES,
    CodeRunParams,
    CodeRunResult,
    ProcessOutputParams,
)
from rpc.models.files import MAX_READ_BYTES, MAX_READ_WIRE_BYTES, FileReadParams
from rpc.sizes import result_size
from sandbox_image.code.background import ProcessManager
from sandbox_image.code.outputs import CappedBuffer
from sandbox_image.code.runner import CodeRunner
from sandbox_image.config import SandboxSettings
from sandbox_image.files.ops import read_file
from sandbox_image.files.workspace import Workspace


def captured(data: bytes, cap: int = MAX_OUTPUT_BYTES) -> CappedBuffer:
    buffer = CappedBuffer(cap)
    for start in range(0, len(data), 65536):
        buffer.write(data[start : start + 65536])
    return buffer


def test_code_run_at_its_largest_cap_fits_one_message_whatever_the_bytes() -> None:
    noisy_streams = (b"\x01" * 2, b"\xff" * 2, b'"\\', b"x\n")
    for noisy in (pattern * MAX_OUTPUT_BYTES for pattern in noisy_streams):
        stdout, stderr = captured(noisy), captured(noisy[::-1])
        result = CodeRunResult(stdout=stdout.text(), stderr=stderr.text(), exitCode=0, durationMs=1, truncated=True)
        assert stdout.truncated and stderr.truncated
        assert result_size(result.stdout) <= MAX_OUTPUT_WIRE_BYTES and "bytes truncated]" in result.stdout
        assert wire_bytes(success("code_run", "code_run ok", result)) <= MAX_RESULT_BYTES


def test_output_under_the_cap_but_costly_as_json_is_cut_and_says_so() -> None:
    start, end = b"START " + b"\x01" * 300_000, b"\x02" * 300_000 + b" END"
    buffer = captured(start + b"\x03" * 300_000 + end)  # 900 KB: under the cap, 11.7 MB in a result
    text = buffer.text()
    assert buffer.truncated and text.startswith("START \x01") and text.endswith("\x02 END")
    assert "bytes truncated]" in text and result_size(text) <= MAX_OUTPUT_WIRE_BYTES


def test_ordinary_output_is_not_cut() -> None:
    lines = b"".join(f'line {i}: "quoted"\tand tabbed\n'.encode() for i in range(30_000))  # ~0.9 MB
    buffer = captured(lines)
    assert not buffer.truncated and buffer.text() == lines.decode()


def test_a_text_read_of_control_characters_comes_in_parts_that_fit(workspace: Path) -> None:
    data = ("\x01" * MAX_READ_BYTES + "tail\n").encode()
    (workspace / "ctl.txt").write_bytes(data)
    ws = Workspace(str(workspace))
    first = read_file(ws, FileReadParams(path="ctl.txt"))
    assert result_size(first.content) <= MAX_READ_WIRE_BYTES and not first.eof
    assert first.length == len(first.content.encode()) and first.nextOffset == first.length
    parts, offset = [first.content], first.nextOffset
    while offset is not None:
        part = read_file(ws, FileReadParams(path="ctl.txt", offset=offset))
        parts.append(part.content)
        offset = part.nextOffset
    assert "".join(parts).encode() == data  # nothing lost
    assert wire_bytes(success("file_read", "file_read ok", first)) <= MAX_RESULT_BYTES
    (workspace / "plain.txt").write_bytes(b"x\n" * (MAX_READ_BYTES // 2))
    plain = read_file(ws, FileReadParams(path="plain.txt"))
    assert plain.eof and plain.length == MAX_READ_BYTES  # ordinary text: the whole limit, as before


async def test_process_output_of_control_characters_comes_in_parts_that_fit(runner_config: SandboxSettings) -> None:
    """process_output at its largest maxBytes: a part that would not fit a result comes back shorter, the
    rest from nextOffset; and a maxBytes smaller than the character at the offset is refused (its bytes
    came back as U+FFFD and were skipped)."""
    manager = ProcessManager(CodeRunner(runner_config), ring_bytes=4 * MAX_OUTPUT_BYTES)
    try:
        code = "import sys; sys.stdout.write('\\x01' * 1048576 + 'é-end'); sys.stdout.flush()"
        started = await manager.start(CodeRunParams(language="python", code=code, background=True))
        pid = started.processId
        assert pid is not None
        text, offset = "", 0
        for _ in range(20):
            part = await manager.output(
                ProcessOutputParams(processId=pid, offset=offset, maxBytes=MAX_OUTPUT_BYTES, waitMs=2000),
                Deadline.after(10),
            )
            assert result_size(part.output) <= MAX_PROCESS_OUTPUT_WIRE_BYTES
            assert wire_bytes(success("process_output", "ok", part)) <= MAX_RESULT_BYTES
            text, offset = text + part.output, part.nextOffset
            if text.endswith("-end"):
                break
        assert text == "\x01" * 1048576 + "é-end"
        inside = offset - len("é-end".encode())  # the first byte of é
        with pytest.raises(BoxwrightError) as refused:
            await manager.output(ProcessOutputParams(processId=pid, offset=inside, maxBytes=1), Deadline.after(10))
        assert refused.value.code is ErrorCode.INVALID_PARAMETER and refused.value.hint
    finally:
        await manager.shutdown()
