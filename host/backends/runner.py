"""Starting a sandbox's code runner daemon through `docker exec`, with its secret on stdin.

The engine starts the daemon as user runner (a capability-less agent cannot switch uid itself). The
secret that lets the daemon in at the agent (sandbox_image.code.channel) travels only over the exec's
stdin, and only after the daemon said `ready` — i.e. once it is non-dumpable and the only process of
its user — so no runner code can read it from an environment, a command line, a file or the pipe.
The daemon says `ok` once it has connected to the agent and said hello, so a daemon that dies before
that fails the start at once with its own last words (stderr), not as a start-up timeout.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from typing import Any

import docker

from host.backends.hardening import CODE_RUNNER_CMD
from rpc.errors import BoxwrightError, ErrorCode

# The daemon says `ok` once it has reached the agent, which may still be booting: a sandbox start's budget.
HANDSHAKE_TIMEOUT_S = 60.0
READY, ACCEPTED = b"ready\n", b"ok\n"  # sandbox_image.code.daemon's lines
_FRAME = struct.Struct(">BxxxL")  # the engine's stream header: stream (1 stdout, 2 stderr), size


def start_code_runner(api: docker.APIClient, container_id: str, secret: str) -> None:
    """Start the daemon in `container_id` and hand it `secret`; SANDBOX_START_FAILED if it does not take it."""
    exec_id = api.exec_create(container_id, CODE_RUNNER_CMD, stdin=True, user="runner", workdir="/workspace")["Id"]
    stream: Any = api.exec_start(exec_id, socket=True)
    sock: socket.socket = getattr(stream, "_sock", stream)
    out, err = bytearray(), bytearray()
    try:
        deadline = time.monotonic() + HANDSHAKE_TIMEOUT_S
        _read_until(sock, READY, out, err, deadline)
        sock.sendall(secret.encode("ascii") + b"\n")
        _read_until(sock, ACCEPTED, out, err, deadline)
    except (OSError, EOFError) as exc:
        said = err.decode("utf-8", "replace").strip()[-500:] or out.decode("utf-8", "replace").strip()[-200:]
        raise BoxwrightError(
            ErrorCode.SANDBOX_START_FAILED,
            f"the code runner did not start: {said or type(exc).__name__}",
            details={"containerId": container_id[:12]},
        ) from None
    finally:
        with contextlib.suppress(OSError):
            stream.close()


def _read_until(sock: socket.socket, wanted: bytes, out: bytearray, err: bytearray, deadline: float) -> None:
    """Read the exec's multiplexed output until stdout holds `wanted`; EOFError if it ends first."""
    while wanted not in out:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        kind, size = _FRAME.unpack(_exactly(sock, _FRAME.size))
        (out if kind == 1 else err).extend(_exactly(sock, size))


def _exactly(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError("the code runner's output ended")
        data.extend(chunk)
    return bytes(data)
