"""A document from an untrusted site parsed in a child process: a reader script (pdf_reader.py,
feed_reader.py) run by path, the bytes on its stdin, one JSON object on its stdout — killed at the call's
deadline or when the call is cancelled, so a parser's worst case costs that process only (each reader sets
its own memory and CPU limits before it touches the bytes)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from rpc.errors import BoxwrightError, ErrorCode
from sandbox_image.browser.urls import redact


class ReaderFailed(Exception):
    """The reader could not read the document: why, in a few words."""


async def run_reader(script: Path, data: bytes, timeout_s: float, *args: str, what: str, url: str) -> dict[str, Any]:
    """The reader's JSON object; OPERATION_TIMEOUT past `timeout_s` (reading `what`, e.g. "PDF", from `url`),
    ReaderFailed when it reports an error or dies without an answer."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(data), max(0.1, timeout_s))
    except TimeoutError:
        raise BoxwrightError(
            ErrorCode.OPERATION_TIMEOUT,
            f"reading the {what} at {redact(url)} did not finish in time",
            hint=f"a long or complex {what}: retry with a larger timeoutMs, or fetch the file with code_run",
            details={"url": redact(url)},
        ) from None
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await asyncio.shield(proc.wait())
    try:
        parsed = json.loads(out)
    except ValueError:
        reason = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise ReaderFailed(reason[0][:300]) from None
    if not isinstance(parsed, dict):
        raise ReaderFailed("the reader answered no object")
    if "error" in parsed:
        raise ReaderFailed(str(parsed["error"])[:300])
    return parsed
