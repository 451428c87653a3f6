"""Finding and killing everything a run started.

Each run gets its own session (start_new_session), so its session id is the main process's pid.
Killing the process group catches the usual children; scanning /proc for the session catches
those that moved to another group (bash job control, `setpgid`). A process that calls setsid()
itself escapes both; once its parent is gone it is reparented to the daemon (a child subreaper),
which ends such orphans when a sync run ends (`end_orphans`), telling runs apart by the run id
each process inherits in its environment.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

_GONE = (b"Z", b"X")  # zombies and dead tasks no longer run; their parent (or init) reaps them
# When the sandbox runs out of memory the kernel kills code first (1000, the most it takes), then the
# daemon (900), never the agent or the browser first (0). Raising one's own score needs no privilege.
CODE_OOM_SCORE_ADJ = 1000
DAEMON_OOM_SCORE_ADJ = 900
# Where the kernel counts the OOM kills in this sandbox's memory cgroup (cgroup v2, then v1): "oom_kill N".
OOM_COUNTERS = ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control")
# Every process of a run inherits its run id here (read back from /proc/<pid>/environ), so a process that
# left its run's process tree can still be told apart.
RUN_ID_VAR = "SANDBOX_RUN_ID"


def session_members(sid: int) -> list[int]:
    """Pids of live processes whose session id is `sid`."""
    members: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return members
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read()
        except OSError:  # exited meanwhile
            continue
        # "pid (comm) state ppid pgrp session ..."; comm may contain spaces and parentheses.
        fields = raw[raw.rfind(b")") + 2 :].split()
        if len(fields) > 3 and fields[0] not in _GONE and int(fields[3]) == sid:
            members.append(int(name))
    return members


def signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to a process group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    return True


def kill_session_now(sid: int) -> list[int]:
    """SIGKILL the group `sid` and every live member of session `sid`; returns the members found."""
    if sid <= 1 or sid == os.getsid(0):  # never our own session
        return []
    signal_group(sid, signal.SIGKILL)
    members = session_members(sid)
    for pid in members:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return members


async def kill_session(sid: int, *, passes: int = 20, pause: float = 0.01) -> None:
    """Kill the session until no live member is left (bounded: a fork bomb cannot keep us here)."""
    for _ in range(passes):
        if not kill_session_now(sid):
            return
        await asyncio.sleep(pause)


def oom_kills(paths: tuple[str, ...] = OOM_COUNTERS) -> int | None:
    """How many processes the OOM killer has killed in this sandbox; None where the kernel does not say."""
    for path in paths:
        try:
            with open(path, "rb") as f:
                for line in f:
                    key, _, value = line.partition(b" ")
                    if key == b"oom_kill":
                        return int(value)
        except (OSError, ValueError):
            continue
    return None


def out_of_memory(returncode: int, kills_before: int | None) -> bool:
    """A SIGKILL while the sandbox's OOM kill count rose: the kernel, not the code, ended it (the count is
    the sandbox's, so another process killed at the same time can make this a guess; never a certainty)."""
    if returncode != -signal.SIGKILL or kills_before is None:
        return False
    now = oom_kills()
    return now is not None and now > kills_before


def exit_code(returncode: int) -> int:
    """Shell convention: 128+N for a process killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


# -- orphans: what left its run's process tree -------------------------------------------------
def _stat(pid: int) -> tuple[bytes, int] | None:
    """(state, ppid) of a process, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    return (fields[0], int(fields[1])) if len(fields) > 1 else None


def run_of(pid: int, variable: str) -> str | None:
    """The run id a process started with (its environment's `variable`), None when unknown."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
    except OSError:
        return None
    prefix = variable.encode() + b"="
    for entry in env.split(b"\0"):
        if entry.startswith(prefix):
            return entry[len(prefix) :].decode("utf-8", "replace")
    return None


def orphans(started: set[int]) -> list[tuple[int, bool]]:
    """Children of this process it did not start itself, as (pid, is_zombie): reparented to it."""
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in started:
            stat = _stat(int(name))
            if stat is not None and stat[1] == me:
                found.append((int(name), stat[0] in _GONE))
    return found


def reap(pid: int) -> None:
    with suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


@dataclass
class Children:
    """The daemon's children. `started`: the runs' main processes it started itself (until waited for);
    any other child was reparented to it — the daemon is a child subreaper (`subreaper`) — and is an
    orphan of some run. `live_runs`: the runs whose orphans are left alone (sync runs in progress,
    background runs not killed); every other orphan is killed when a sync run ends."""

    started: set[int] = field(default_factory=set)
    live_runs: set[str] = field(default_factory=set)
    subreaper: bool = False
    spawning: int = 0
    # This process's own /proc/self/oom_score_adj, opened before it became non-dumpable (after that the
    # file is root's): a child inherits the score at fork, so the daemon raises its own for each spawn.
    oom_score_fd: int | None = None

    def keep_oom_score(self, fd: int | None) -> None:
        """Take the daemon's /proc/self/oom_score_adj, opened while it still could (the take-over), and set
        the daemon's own score there."""
        self.oom_score_fd = fd
        self._oom_score(DAEMON_OOM_SCORE_ADJ)

    @contextmanager
    def spawn(self) -> Iterator[None]:
        """Around a spawn: until its pid is in `started`, no orphan may be judged (it could be that one);
        the child is born the OOM killer's first choice."""
        self.spawning += 1
        self._oom_score(CODE_OOM_SCORE_ADJ)
        try:
            yield
        finally:
            self.spawning -= 1
            if not self.spawning:
                self._oom_score(DAEMON_OOM_SCORE_ADJ)

    def _oom_score(self, value: int) -> None:
        if self.oom_score_fd is not None:
            with suppress(OSError):
                os.lseek(self.oom_score_fd, 0, os.SEEK_SET)
                os.write(self.oom_score_fd, str(value).encode())

    async def end_orphans(self, *, passes: int = 50) -> int:
        """Kill the orphans of runs that are over (and, as they are reparented here in turn, their
        descendants), reap the dead ones; returns how many were killed. Stops early while a spawn is in
        progress (the next sync run's end sweeps again)."""
        killed = 0
        for _ in range(passes if self.subreaper else 0):
            if self.spawning:
                break
            doomed = []
            for pid, zombie in orphans(self.started):
                if zombie:
                    reap(pid)
                elif run_of(pid, RUN_ID_VAR) not in self.live_runs:
                    doomed.append(pid)
            if not doomed:
                break
            for pid in doomed:
                with suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
            await asyncio.sleep(0.01)
        return killed

    def reap_zombies(self) -> None:
        """Collect orphans that exited on their own (their zombies would count against the pids limit)."""
        if self.subreaper and not self.spawning:
            for pid, zombie in orphans(self.started):
                if zombie:
                    reap(pid)
