"""Background `code.run` and the process.* methods: long-lived processes with readable output.

stdout and stderr share one pipe, so the retained stream keeps their order. Output is kept in
a ring (absolute offsets; older bytes are reported as dropped). A few finished processes are
kept so their output and exit code can still be read.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from rpc.deadline import LADDER, Deadline
from rpc.errors import BoxwrightError, ErrorCode, invalid_parameter
from rpc.models.code import (
    MAX_PROCESS_OUTPUT_WIRE_BYTES,
    CodeRunParams,
    CodeRunResult,
    Language,
    ProcessInfo,
    ProcessKillParams,
    ProcessKillResult,
    ProcessListResult,
    ProcessOutputParams,
    ProcessOutputResult,
)
from rpc.sizes import result_size
from sandbox_image.code.outputs import RingBuffer
from sandbox_image.code.procs import exit_code, kill_session_now, oom_kills, out_of_memory, signal_group
from sandbox_image.code.runner import DRAIN_GRACE_S, CodeRunner
from sandbox_image.code.spawn import PipeReader, Script, open_reader, spawn
from sandbox_image.utf8 import complete_prefix_len

MAX_RUNNING = 16
MAX_FINISHED = 50
RING_BYTES = 1024 * 1024
KILL_WAIT_MS = 2000  # how long process.kill waits to report whether the signal ended the process
_SIGNALS = {"TERM": signal.SIGTERM, "KILL": signal.SIGKILL, "INT": signal.SIGINT}


def _command(code: str) -> str:
    first = next((line.strip() for line in code.splitlines() if line.strip()), "")
    return first if len(first) <= 80 else first[:79] + "…"


@dataclass(eq=False)
class Managed:
    """One background process and what is known about it."""

    process_id: str
    language: Language
    command: str
    ring: RingBuffer
    script: Script
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    exit_code: int | None = None
    oom_kills_before: int | None = field(default_factory=oom_kills)
    killed: bool = False  # by process_kill or shutdown: a SIGKILL of ours, not the kernel's
    out_of_memory: bool = False
    proc: asyncio.subprocess.Process | None = None
    reader: tuple[asyncio.ReadTransport, PipeReader] | None = None
    watcher: asyncio.Task[None] | None = None
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def running(self) -> bool:
        return not self.finished.is_set()

    def notify(self) -> None:
        """Wake every long-poll waiting on this process (new output or exit)."""
        self._changed.set()
        self._changed = asyncio.Event()

    def on_output(self, data: bytes) -> None:
        self.ring.write(data)
        self.notify()

    async def wait_change(self, seconds: float) -> None:
        """Return after the next change, or after `seconds`."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), seconds)

    def info(self) -> ProcessInfo:
        end = self.ended if self.ended is not None else time.monotonic()
        return ProcessInfo(
            processId=self.process_id,
            language=self.language,
            command=self.command,
            pid=self.proc.pid if self.proc else 0,
            running=self.running,
            exitCode=self.exit_code,
            outOfMemory=self.out_of_memory,
            startedAt=self.started_at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            durationMs=int((end - self.started) * 1000),
            outputBytes=self.ring.end,
        )

    def close(self) -> None:
        """Stop reading (an orphan may still hold the pipe) and forget the script."""
        if self.reader is not None:
            self.reader[0].close()
        self.script.remove()


def _longest_fitting(data: bytes) -> bytes:
    """The longest prefix of `data`, ending on a whole character, whose text fits a result."""
    lo, hi = 1, len(data)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if result_size(data[:mid].decode("utf-8", "replace")) <= MAX_PROCESS_OUTPUT_WIRE_BYTES:
            lo = mid
        else:
            hi = mid - 1
    return data[: complete_prefix_len(data[:lo]) or lo]


class ProcessManager:
    """Starts, tracks, reads and signals background processes."""

    def __init__(
        self,
        runner: CodeRunner,
        *,
        max_running: int = MAX_RUNNING,
        max_finished: int = MAX_FINISHED,
        ring_bytes: int = RING_BYTES,
    ) -> None:
        self.runner = runner
        self.max_running = max_running
        self.max_finished = max_finished
        self.ring_bytes = ring_bytes
        self._procs: dict[str, Managed] = {}

    def _running_count(self) -> int:
        return sum(1 for m in self._procs.values() if m.running)

    def get(self, process_id: str) -> Managed:
        try:
            return self._procs[process_id]
        except KeyError:
            raise BoxwrightError(
                ErrorCode.PROCESS_NOT_FOUND,
                f"no process {process_id!r} (it never existed or was forgotten after finishing)",
                details={"processId": process_id},
            ) from None

    async def start(self, params: CodeRunParams) -> CodeRunResult:
        if self._running_count() >= self.max_running:
            raise BoxwrightError(
                ErrorCode.PROCESS_LIMIT_REACHED,
                f"{self.max_running} background processes are already running",
                details={"maxRunning": self.max_running},
            )
        began = time.monotonic()
        process_id = f"proc_{secrets.token_hex(6)}"
        cwd, env, script = self.runner.prepare(params, process_id)
        managed = Managed(
            process_id=process_id,
            language=params.language,
            command=_command(params.code),
            ring=RingBuffer(self.ring_bytes),
            script=script,
        )
        try:
            read_end, write_end = os.pipe()
            try:
                managed.reader = await open_reader(read_end, managed.on_output)
                managed.proc = await spawn(
                    self.runner.argv(params, script),
                    cwd=cwd,
                    env=env,
                    stdin_path=script.stdin_path,
                    stdout_fd=write_end,
                    stderr_fd=write_end,
                    children=self.runner.children,
                )
            finally:
                os.close(write_end)
        except BaseException:
            managed.close()
            raise
        self._procs[managed.process_id] = managed
        # Its orphans (a daemonizing server, say) live as long as the process is known and not killed.
        self.runner.children.live_runs.add(managed.process_id)
        managed.watcher = asyncio.create_task(self._watch(managed), name=f"watch {managed.process_id}")
        return CodeRunResult(processId=managed.process_id, durationMs=int((time.monotonic() - began) * 1000))

    async def _watch(self, managed: Managed) -> None:
        assert managed.proc is not None and managed.reader is not None
        returncode = await managed.proc.wait()
        self.runner.children.started.discard(managed.proc.pid)
        managed.ended = time.monotonic()
        # Let the last output arrive before reporting the exit, so "exited" implies "output complete"
        # (unless something the process left behind still holds the pipe).
        await asyncio.wait([managed.reader[1].done], timeout=DRAIN_GRACE_S)
        managed.exit_code = exit_code(returncode)
        managed.out_of_memory = not managed.killed and out_of_memory(returncode, managed.oom_kills_before)
        managed.finished.set()
        managed.script.remove()
        managed.notify()
        self._evict()

    def _evict(self) -> None:
        finished = sorted((m for m in self._procs.values() if not m.running), key=lambda m: m.ended or 0.0)
        for managed in finished[: max(0, len(finished) - self.max_finished)]:
            managed.close()
            del self._procs[managed.process_id]
            self.runner.children.live_runs.discard(managed.process_id)

    def list_processes(self) -> ProcessListResult:
        ordered = sorted(self._procs.values(), key=lambda m: m.started)
        return ProcessListResult(processes=[m.info() for m in ordered])

    async def output(self, params: ProcessOutputParams, deadline: Deadline) -> ProcessOutputResult:
        managed = self.get(params.processId)
        wait = LADDER.operation(deadline, params.waitMs).remaining()
        if wait > 0 and managed.running and managed.ring.end <= params.offset:
            await managed.wait_change(wait)
        data, offset, dropped = managed.ring.read(params.offset, params.maxBytes, complete=True)
        if data and complete_prefix_len(data) == 0 and offset + len(data) < managed.ring.end:
            raise invalid_parameter(
                "maxBytes",
                "smaller than the character at offset",
                message=f"maxBytes {params.maxBytes} is smaller than the UTF-8 character at offset {offset}",
                hint="raise maxBytes (4 bytes always hold a whole character)",
            )  # returned, its bytes would come back as U+FFFD and be skipped: lost
        text = data.decode("utf-8", "replace")
        if result_size(text) > MAX_PROCESS_OUTPUT_WIRE_BYTES:  # control characters, short lines: shorter part
            data = _longest_fitting(data)
            text = data.decode("utf-8", "replace")
        return ProcessOutputResult(
            processId=managed.process_id,
            running=managed.running,
            exitCode=managed.exit_code,
            outOfMemory=managed.out_of_memory,
            output=text,
            offset=offset,
            nextOffset=offset + len(data),
            droppedBytes=dropped,
        )

    async def kill(self, params: ProcessKillParams, deadline: Deadline) -> ProcessKillResult:
        managed = self.get(params.processId)
        self.runner.children.live_runs.discard(managed.process_id)  # its orphans go with it
        await self.runner.children.end_orphans()
        if managed.running and managed.proc is not None:
            managed.killed = True
            signal_group(managed.proc.pid, _SIGNALS[params.signal])
            if params.signal == "KILL":
                kill_session_now(managed.proc.pid)
            wait = LADDER.operation(deadline, KILL_WAIT_MS).remaining()
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(managed.finished.wait(), wait)
            if not managed.running:  # what outlived it (a child deaf to INT or TERM) was orphaned just now
                await self.runner.children.end_orphans()
        return ProcessKillResult(processId=managed.process_id, running=managed.running, exitCode=managed.exit_code)

    async def shutdown(self) -> None:
        """Kill every background process (the daemon is going away) and stop reading."""
        for managed in list(self._procs.values()):
            if managed.running and managed.proc is not None:
                managed.killed = True
                kill_session_now(managed.proc.pid)
        watchers = [m.watcher for m in self._procs.values() if m.watcher is not None and not m.watcher.done()]
        if watchers:
            await asyncio.wait(watchers, timeout=2.0)
        for managed in list(self._procs.values()):
            if managed.watcher is not None:
                managed.watcher.cancel()
            managed.close()
            self.runner.children.live_runs.discard(managed.process_id)
        self._procs.clear()
