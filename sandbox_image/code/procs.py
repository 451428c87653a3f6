"""Finding and killing everything a run started.

Each run gets its own session (start_new_session), so its session id is the main process's pid.
Killing the process group catches the usual children; scanning /proc for the session catches
those that moved to another group (bash job control, `setpgid`). A process that calls setsid()
itself escapes both — only a cgroup could catch it.
"""

from __future__ import annotations

import asyncio
import os
import signal
from contextlib import suppress

_GONE = (b"Z", b"X")  # zombies and dead tasks no longer run; their parent (or init) reaps them


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


def exit_code(returncode: int) -> int:
    """Shell convention: 128+N for a process killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode
