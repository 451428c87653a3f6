"""The channel between the agent and its code runner daemon, and why it cannot be hijacked.

The agent listens on a Unix socket in a directory only it may write (`/run/boxwright`, owner agent,
mode 0750, group sandbox), so runner code can neither remove the socket nor put its own in its
place. The daemon connects to it and proves who it is before the agent sends it anything:

- SO_PEERCRED: the connecting process runs as the runner user (the agent's own uid is refused too);
- a secret: the host derives it per sandbox and hands it to the daemon on the stdin of the
  `docker exec` that starts it — never in an environment, argument or file — only after the daemon
  made itself non-dumpable (same-uid code can then neither ptrace it nor open its /proc files and
  fds), checked that nothing traces it, and killed every other process of its user (so nothing could
  have opened its stdin before). The agent holds only the secret's SHA-256.

Runner code runs as the same user as the daemon and may kill it; it can never become it. The agent
then has no runner (`codeRunnerReady: false`) and the host starts a new daemon on the next call.

On the wire: one JSON object per line. The daemon's first line is `{"hello": HELLO, "secret": …}`;
then the agent sends JSON-RPC requests (rpc.envelope) and the daemon answers each, in any order,
matched by id — or, if it cannot serve at all, says `{"fatal": …}` once and hangs up. A request the
agent's caller gave up on (the host's call was cancelled, or its connection went) is followed by
`{"cancel": id}`: the daemon stops handling it (a code run's processes are killed) and sends no answer.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import time
from collections.abc import Callable
from typing import Any

HELLO = "boxwright-runner/1"
# The defaults of SandboxSettings.runner_socket / runner_user, here because the daemon's handshake reads
# them before it loads the settings library (sandbox_image.code.daemon).
RUNNER_SOCKET = "/run/boxwright/runner.sock"
RUNNER_USER = "runner"
# A daemon that cannot load what serves code.run after its hello says why in one line, `{FATAL: "…"}`, and
# hangs up: the agent logs it (its log reaches the host's diagnostics; the daemon's stderr does not).
FATAL = "fatal"
CANCEL = "cancel"
HELLO_TIMEOUT_S = 5.0
CONNECT_TIMEOUT_S = 60.0  # how long the daemon waits for the agent's socket: the agent may still be starting
CONNECT_RETRY_S = 0.02
# A line holds one request or answer: code, outputs and files are capped well below this (rpc.models).
MAX_LINE_BYTES = 80 * 1024 * 1024
_UCRED = struct.Struct("3i")


class NoAgent(Exception):
    """Nothing listens on the agent's runner socket (within the time given)."""


def handshake(
    secret: str, path: str, *, confirm: Callable[[], None] | None = None, within_s: float = CONNECT_TIMEOUT_S
) -> socket.socket:
    """The daemon's side: connect to the agent's runner socket (it appears once the agent listens), say
    hello, then `confirm` — the host's handshake ends only once the daemon has reached the agent. Blocking,
    on the standard library alone (sandbox_image.code.daemon says why)."""
    deadline = time.monotonic() + within_s
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            break
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            if time.monotonic() > deadline:
                raise NoAgent(f"no agent listens on {path}") from None
            time.sleep(CONNECT_RETRY_S)
    try:
        sock.sendall(hello(secret))
    except OSError:
        sock.close()
        raise
    if confirm is not None:
        confirm()
    return sock


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a connected Unix socket (SO_PEERCRED)."""
    return _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))


def line(obj: dict[str, Any]) -> bytes:
    """One compact JSON line (JSON strings escape newlines, so a line is one message)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n"


def hello(secret: str) -> bytes:
    return line({"hello": HELLO, "secret": secret})


def read_hello(raw: bytes) -> str | None:
    """The secret of a well-formed hello line, else None."""
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("hello") != HELLO or not isinstance(data.get("secret"), str):
        return None
    return str(data["secret"])


# How rpc.envelope.encode_request begins a request (json.dumps with its default separators): its id, read
# without parsing the whole line (a code run's line may be megabytes).
_REQUEST_ID = re.compile(rb'^\{"jsonrpc": "2\.0", "id": (\d{1,18}),')


def request_id_of(raw: bytes) -> int | None:
    match = _REQUEST_ID.match(raw)
    return int(match.group(1)) if match else None


def cancel_line(request_id: int) -> bytes:
    return json.dumps({CANCEL: request_id}).encode() + b"\n"


def cancelled_id(raw: bytes) -> int | None:
    """The request a `{"cancel": id}` line names (None for any other line: no JSON is parsed for those)."""
    if not raw.startswith(b'{"cancel":'):
        return None
    try:
        request_id = json.loads(raw)[CANCEL]
    except (ValueError, KeyError, TypeError):
        return None
    return request_id if isinstance(request_id, int) else None
