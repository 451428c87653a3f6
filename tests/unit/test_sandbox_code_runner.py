"""The code runner: sync runs (outputs, stdin, env, cwd, caps, timeouts, no leftovers) and background processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.code import CodeRunParams, CodeRunResult, ProcessKillParams, ProcessOutputParams
from sandbox_image.code import procs
from sandbox_image.code.background import ProcessManager
from sandbox_image.code.runner import CodeRunner
from sandbox_image.config import SandboxSettings

FindProcesses = Callable[[str], list[int]]


@pytest.fixture
def runner(runner_config: SandboxSettings) -> CodeRunner:
    return CodeRunner(runner_config)


@pytest.fixture
async def manager(runner: CodeRunner) -> Any:
    mgr = ProcessManager(runner, max_running=3, max_finished=2, ring_bytes=4096)
    yield mgr
    await mgr.shutdown()


async def run(runner: CodeRunner, language: str, code: str, *, budget: float = 20.0, **kw: Any) -> CodeRunResult:
    return await runner.run_sync(CodeRunParams(language=language, code=code, **kw), Deadline.after(budget))


def marker() -> str:
    """A unique `sleep` argument, to find the process in /proc afterwards."""
    return f"{100 + secrets.randbelow(10_000)}.{secrets.randbelow(10**6):06d}"


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------- sync runs


async def test_python_outputs_and_exit_code(runner: CodeRunner) -> None:
    result = await run(runner, "python", "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)")
    assert (result.stdout, result.stderr, result.exitCode) == ("out\n", "err\n", 3)
    assert not result.timedOut and not result.truncated and result.processId is None


async def test_python_traceback_has_line_numbers_and_uses_system_python(runner: CodeRunner) -> None:
    result = await run(runner, "python", "import sys\nprint(sys.executable)\n\n1/0\n")
    assert result.exitCode == 1
    assert result.stdout.strip() == "/usr/bin/python3"
    assert "line 4" in result.stderr and "ZeroDivisionError" in result.stderr


async def test_bash_outputs_and_exit_code(runner: CodeRunner) -> None:
    result = await run(runner, "bash", "echo hello; echo oops >&2; exit 7")
    assert (result.stdout, result.stderr, result.exitCode) == ("hello\n", "oops\n", 7)


async def test_stdin_is_fed_or_empty(runner: CodeRunner) -> None:
    fed = await run(runner, "python", "import sys\nprint(sys.stdin.read().upper())", stdin="abc\nd")
    assert fed.stdout == "ABC\nD\n"
    empty = await run(runner, "bash", "cat; echo done", timeoutMs=5000)
    assert empty.stdout == "done\n" and not empty.timedOut


async def test_env_is_clean_plus_caller_env(runner: CodeRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOXWRIGHT_TOKEN_SHA256", "f" * 64)
    monkeypatch.setenv("VIRTUAL_ENV", "/work/venv")
    result = await run(runner, "bash", "env | sort", env={"GREETING": "hi there", "LANG": "C"})
    env = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert env["GREETING"] == "hi there" and env["LANG"] == "C"
    assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin" and env["HOME"] == "/home/runner"
    assert env["PYTHONUNBUFFERED"] == "1" and env["TMPDIR"] == "/tmp"
    assert not any(k.startswith("BOXWRIGHT") for k in env) and "VIRTUAL_ENV" not in env
    with pytest.raises(BoxwrightError) as info:
        await run(runner, "bash", "true", env={"A=B": "x"})
    assert info.value.code == ErrorCode.INVALID_PARAMETER


async def test_cwd_is_confined_to_the_workspace(runner: CodeRunner, workspace: Path, outside: Path) -> None:
    (workspace / "sub").mkdir()
    (workspace / "out").symlink_to(outside)
    result = await run(runner, "bash", "pwd", cwd="sub")
    assert result.stdout.strip() == str(workspace / "sub")
    assert (await run(runner, "bash", "pwd")).stdout.strip() == str(workspace)
    for cwd, code in [
        ("..", ErrorCode.PATH_OUTSIDE_WORKSPACE),
        ("/tmp", ErrorCode.PATH_OUTSIDE_WORKSPACE),
        ("out", ErrorCode.PATH_OUTSIDE_WORKSPACE),
        ("missing", ErrorCode.FILE_NOT_FOUND),
    ]:
        with pytest.raises(BoxwrightError) as info:
            await run(runner, "bash", "pwd", cwd=cwd)
        assert info.value.code == code, cwd


async def test_files_created_by_code_are_group_writable(runner: CodeRunner, workspace: Path) -> None:
    await run(runner, "bash", "touch made.txt; mkdir made.d")
    assert (workspace / "made.txt").stat().st_mode & 0o020
    assert (workspace / "made.d").stat().st_mode & 0o020


async def test_output_cap_keeps_head_and_tail(runner: CodeRunner) -> None:
    code = "print('HEAD' + 'x' * 200_000 + 'TAIL')\nimport sys\nprint('small', file=sys.stderr)"
    result = await run(runner, "python", code, maxOutputBytes=1024)
    assert result.truncated
    assert result.stdout.startswith("HEAD") and result.stdout.endswith("TAIL\n")
    assert "bytes truncated]" in result.stdout
    assert len(result.stdout.encode()) < 1024 + 100
    assert result.stderr == "small\n"


async def test_timeout_kills_everything_quickly(runner: CodeRunner, find_processes: FindProcesses) -> None:
    mark = marker()
    started = time.monotonic()
    result = await run(runner, "bash", f"echo before; sleep {mark}; echo after", timeoutMs=500)
    assert time.monotonic() - started < 3
    assert result.timedOut and result.exitCode == 128 + signal.SIGKILL
    assert result.stdout == "before\n"
    assert 400 <= result.durationMs < 3000
    assert find_processes(mark) == []


async def test_deadline_shorter_than_timeout_still_answers_with_timed_out(runner: CodeRunner) -> None:
    started = time.monotonic()
    result = await run(runner, "bash", "sleep 30", timeoutMs=30_000, budget=0.8)
    assert result.timedOut and time.monotonic() - started < 2


async def test_sync_run_leaves_no_background_child(runner: CodeRunner, find_processes: FindProcesses) -> None:
    mark = marker()
    started = time.monotonic()
    result = await run(runner, "bash", f"sleep {mark} &\necho started", timeoutMs=30_000)
    assert time.monotonic() - started < 3
    assert result.stdout == "started\n" and result.exitCode == 0 and not result.timedOut
    assert find_processes(mark) == []


async def test_sync_run_kills_children_that_left_the_process_group(
    runner: CodeRunner, find_processes: FindProcesses
) -> None:
    mark = marker()
    code = f"import os, subprocess\nsubprocess.Popen(['sleep', '{mark}'], process_group=0)\nprint('spawned')"
    result = await run(runner, "python", code)
    assert result.stdout == "spawned\n"
    assert find_processes(mark) == []


async def test_sync_run_returns_promptly_when_an_escaped_orphan_holds_the_pipes(
    runner: CodeRunner, find_processes: FindProcesses
) -> None:
    mark = marker()
    started = time.monotonic()
    try:
        result = await run(runner, "bash", f"setsid sleep {mark} &\necho started", timeoutMs=30_000)
        assert time.monotonic() - started < 3
        assert result.stdout == "started\n"
    finally:
        kill_all(find_processes(mark))  # escaped its session: only a cgroup could have caught it


# ---------------------------------------------------------------- background


def bg(code: str, language: str = "bash", **kw: Any) -> CodeRunParams:
    return CodeRunParams(language=language, code=code, background=True, **kw)


async def test_background_incremental_output_wait_and_kill(manager: ProcessManager) -> None:
    started = time.monotonic()
    result = await manager.start(bg("echo one; echo two >&2; sleep 0.3; echo three; sleep 100"))
    assert time.monotonic() - started < 2
    pid = result.processId
    assert pid and pid.startswith("proc_") and result.exitCode is None

    first = await manager.output(ProcessOutputParams(processId=pid, waitMs=3000), Deadline.after(10))
    assert first.running and first.offset == 0 and first.output.startswith("one\n")
    seen = first.output
    offset = first.nextOffset
    while "three" not in seen:
        part = await manager.output(ProcessOutputParams(processId=pid, offset=offset, waitMs=3000), Deadline.after(10))
        assert part.offset == offset
        seen += part.output
        offset = part.nextOffset
    assert seen == "one\ntwo\nthree\n"  # stdout and stderr merged in order

    waited = time.monotonic()
    idle = await manager.output(ProcessOutputParams(processId=pid, offset=offset, waitMs=300), Deadline.after(10))
    assert idle.output == "" and idle.running and time.monotonic() - waited >= 0.25

    listed = manager.list_processes().processes
    assert [p.processId for p in listed] == [pid] and listed[0].running and listed[0].outputBytes == offset
    assert listed[0].command.startswith("echo one")

    killed = await manager.kill(ProcessKillParams(processId=pid), Deadline.after(10))
    assert not killed.running and killed.exitCode == 128 + signal.SIGTERM
    after = await manager.output(ProcessOutputParams(processId=pid), Deadline.after(10))
    assert not after.running and after.exitCode == killed.exitCode and after.output == seen


async def test_background_exit_is_reported_and_long_poll_wakes_on_exit(manager: ProcessManager) -> None:
    result = await manager.start(bg("import time\ntime.sleep(0.3)\nraise SystemExit(5)", "python"))
    started = time.monotonic()
    out = await manager.output(ProcessOutputParams(processId=result.processId, waitMs=10_000), Deadline.after(20))
    assert time.monotonic() - started < 5
    assert not out.running and out.exitCode == 5 and out.output == ""


async def test_background_dropped_bytes(manager: ProcessManager) -> None:
    result = await manager.start(bg("print('x' * 10_000)", "python"))
    out = await manager.output(ProcessOutputParams(processId=result.processId, waitMs=5000), Deadline.after(10))
    for _ in range(50):
        if not out.running:
            break
        params = ProcessOutputParams(processId=result.processId, offset=out.nextOffset, waitMs=500)
        out = await manager.output(params, Deadline.after(10))
    final = await manager.output(ProcessOutputParams(processId=result.processId), Deadline.after(10))
    assert final.droppedBytes == 10_001 - 4096 and final.offset == 10_001 - 4096
    assert final.nextOffset == 10_001 and len(final.output) == 4096


async def test_process_limit_and_forgetting_finished(manager: ProcessManager) -> None:
    ids = [(await manager.start(bg("sleep 100"))).processId for _ in range(3)]
    with pytest.raises(BoxwrightError) as info:
        await manager.start(bg("sleep 100"))
    assert info.value.code == ErrorCode.PROCESS_LIMIT_REACHED
    for pid in ids:
        assert not (await manager.kill(ProcessKillParams(processId=pid, signal="KILL"), Deadline.after(5))).running
    assert len(manager.list_processes().processes) == 2  # max_finished=2: the oldest finished one is forgotten
    assert (await manager.start(bg("true"))).processId


async def test_unknown_process_id(manager: ProcessManager) -> None:
    for call in (
        manager.output(ProcessOutputParams(processId="proc_nope"), Deadline.after(5)),
        manager.kill(ProcessKillParams(processId="proc_nope"), Deadline.after(5)),
    ):
        with pytest.raises(BoxwrightError) as info:
            await call
        assert info.value.code == ErrorCode.PROCESS_NOT_FOUND


async def test_shutdown_kills_background_processes(runner: CodeRunner, find_processes: FindProcesses) -> None:
    mark = marker()
    mgr = ProcessManager(runner)
    await mgr.start(bg(f"sleep {mark}"))
    await asyncio.sleep(0.2)
    assert find_processes(mark)
    await mgr.shutdown()
    assert find_processes(mark) == []


def test_oom_kill_count_is_read_from_cgroup_v2_then_v1(tmp_path: Path) -> None:
    v2, v1, missing = tmp_path / "memory.events", tmp_path / "memory.oom_control", tmp_path / "none"
    v2.write_text("low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n")
    v1.write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 7\n")
    assert procs.oom_kills((str(v2), str(v1))) == 2
    assert procs.oom_kills((str(missing), str(v1))) == 7
    assert procs.oom_kills((str(missing),)) is None  # kernels before 4.13 do not count: never a guess


def test_out_of_memory_needs_a_sigkill_while_the_count_rose(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procs, "oom_kills", lambda: 5)
    assert procs.out_of_memory(-signal.SIGKILL, 4) is True
    assert procs.out_of_memory(-signal.SIGKILL, 5) is False  # killed by someone else
    assert procs.out_of_memory(-signal.SIGTERM, 4) is False
    assert procs.out_of_memory(1, 4) is False
    assert procs.out_of_memory(-signal.SIGKILL, None) is False  # no counter when it started


async def test_a_run_that_killed_itself_is_not_out_of_memory(runner: CodeRunner) -> None:
    r = await run(runner, "bash", "kill -9 $$")
    assert r.exitCode == 137 and r.outOfMemory is False
