"""Synchronous `code.run`: run to completion (or timeout), capture both streams, leave nothing behind."""

from __future__ import annotations

import asyncio
import os
import secrets
import time

from rpc.deadline import LADDER, Deadline
from rpc.models.code import CodeRunParams, CodeRunResult
from sandbox_image.code.outputs import CappedBuffer
from sandbox_image.code.procs import Children, exit_code, kill_session, kill_session_now, oom_kills, out_of_memory
from sandbox_image.code.spawn import PipeReader, Script, open_reader, spawn, user_env, write_script
from sandbox_image.config import SandboxSettings
from sandbox_image.files.workspace import Workspace

# After the main process exits and its session is killed, wait this long for the pipes to drain.
# Only a process that escaped the session (setsid) keeps them open longer; then we stop reading.
DRAIN_GRACE_S = 0.5
# What a timed-out run needs after its timeout to answer in time: killing its session (kill_session: up to
# 0.2 s of passes), reaping, the orphans sweep and the reply — on a busy machine. Its timeout fires this much
# before the operation's deadline; only a deadline shorter than the run's own timeoutMs brings it into play.
CLEANUP_S = 0.35


class CodeRunner:
    """Turns `code.run` params into a started process; runs sync ones to completion."""

    def __init__(self, settings: SandboxSettings, workspace: Workspace | None = None) -> None:
        self.settings = settings
        self.workspace = workspace or Workspace(settings.workspace)
        self.children = Children()

    def argv(self, params: CodeRunParams, script: Script) -> list[str]:
        interpreter = self.settings.python if params.language == "python" else self.settings.bash
        return [interpreter, script.path]

    def prepare(self, params: CodeRunParams, run_id: str) -> tuple[str, dict[str, str], Script]:
        """cwd (confined to the workspace), env and script file; raises before anything starts."""
        cwd = self.workspace.directory(params.cwd)
        env = user_env(params.env, run_id)
        return cwd, env, write_script(params, self.settings.runner_scratch)

    async def run_sync(self, params: CodeRunParams, deadline: Deadline) -> CodeRunResult:
        # The run's own timeout fires inside the handler's deadline, early enough for the clean-up, so a
        # timed-out run still answers with its output and `timedOut: true` instead of an OPERATION_TIMEOUT.
        timeout = LADDER.operation(deadline.child(CLEANUP_S), params.timeoutMs).remaining()
        run_id = "run_" + secrets.token_hex(6)
        cwd, env, script = self.prepare(params, run_id)
        stdout, stderr = CappedBuffer(params.maxOutputBytes), CappedBuffer(params.maxOutputBytes)
        readers: list[tuple[asyncio.ReadTransport, PipeReader]] = []
        proc: asyncio.subprocess.Process | None = None
        self.children.live_runs.add(run_id)
        try:
            write_ends: list[int] = []
            try:
                for buffer in (stdout, stderr):
                    read_end, write_end = os.pipe()
                    write_ends.append(write_end)
                    readers.append(await open_reader(read_end, buffer.write))
                started = time.monotonic()
                kills_before = oom_kills()
                proc = await spawn(
                    self.argv(params, script),
                    cwd=cwd,
                    env=env,
                    stdin_path=script.stdin_path,
                    stdout_fd=write_ends[0],
                    stderr_fd=write_ends[1],
                    children=self.children,
                )
            finally:
                for fd in write_ends:  # the child has its copies; ours would keep the pipes open forever
                    os.close(fd)
            timed_out = False
            try:
                async with asyncio.timeout(timeout):
                    returncode = await proc.wait()
            except TimeoutError:
                timed_out = True
                kill_session_now(proc.pid)
                returncode = await proc.wait()
            duration_ms = int((time.monotonic() - started) * 1000)
            # A sync run leaves nothing behind; long-lived processes belong in background runs.
            await kill_session(proc.pid)
            drain = min(DRAIN_GRACE_S, LADDER.operation(deadline).remaining())  # never past the answer's time
            await asyncio.wait([protocol.done for _, protocol in readers], timeout=max(drain, 0.01))
        finally:
            if proc is not None:  # also when cancelled (deadline, shutdown) half-way through
                kill_session_now(proc.pid)
                if proc.returncode is not None:
                    self.children.started.discard(proc.pid)
            self.children.live_runs.discard(run_id)
            for transport, _ in readers:
                transport.close()
            script.remove()
        # What escaped the session (setsid) and outlived its parent was reparented to the daemon: it ends
        # with the run too.
        await self.children.end_orphans()
        return CodeRunResult(
            stdout=stdout.text(),
            stderr=stderr.text(),
            exitCode=exit_code(returncode),
            timedOut=timed_out,
            outOfMemory=not timed_out and out_of_memory(returncode, kills_before),
            durationMs=duration_ms,
            truncated=stdout.truncated or stderr.truncated,
        )
