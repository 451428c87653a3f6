"""child.run_reader: a reader script in a child process — its answer, its reported failure, its crash, and
the deadline that kills it (scrape's PDF, feed and sitemap readers all run this way)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from rpc.errors import BoxwrightError
from sandbox_image.scrape.child import ReaderFailed, run_reader

URL = "https://example.org/files/report.pdf?token=secret"


def reader(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "reader.py"
    script.write_text("import json, sys, time\n" + body)
    return script


async def test_the_answer_and_its_arguments(tmp_path: Path) -> None:
    script = reader(tmp_path, "print(json.dumps({'got': sys.stdin.read(), 'args': sys.argv[1:]}))")
    assert await run_reader(script, b"bytes", 10, "a", what="PDF", url=URL) == {"got": "bytes", "args": ["a"]}


async def test_a_reported_error_and_a_crash_are_reader_failures(tmp_path: Path) -> None:
    with pytest.raises(ReaderFailed, match="bad file"):
        await run_reader(reader(tmp_path, "print(json.dumps({'error': 'bad file'}))"), b"", 10, what="PDF", url=URL)
    with pytest.raises(ReaderFailed, match="RuntimeError: boom"):
        await run_reader(reader(tmp_path, "raise RuntimeError('boom')"), b"", 10, what="PDF", url=URL)


async def test_past_the_deadline_the_child_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = reader(tmp_path, f"open({str(pid_file)!r}, 'w').write(str(__import__('os').getpid()))\ntime.sleep(60)")
    started = time.monotonic()
    with pytest.raises(BoxwrightError) as caught:
        await run_reader(script, b"", 1.0, what="PDF", url=URL)
    assert time.monotonic() - started < 10
    err = caught.value
    assert err.code.value == "OPERATION_TIMEOUT" and "timeoutMs" in (err.hint or "") and "secret" not in err.message
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(int(pid_file.read_text()), 0)
