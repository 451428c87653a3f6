"""Hostile code against its own code runner: it cannot take the runner's place (and so never sees a later
run's code or environment), and a run is never executed twice because the runner died under it."""

from __future__ import annotations

import base64
import secrets

import anyio

from tests.integration.conftest import HttpServer
from tests.integration.mcp_helpers import http_session

HIJACK = r"""
import glob, json, os, signal, socket, threading, time
LOG = "/workspace/hijack.log"
STOLEN = "/workspace/stolen.bin"
SOCK = "/run/boxwright/runner.sock"

def note(*what):
    with open(LOG, "a") as f:
        f.write(" ".join(map(str, what)) + "\n")

def record(data):
    with open(STOLEN, "ab") as f:
        f.write(data)

def serve(server):  # whatever connects to our socket: keep every byte it sends
    while True:
        conn, _ = server.accept()
        def pump(c=conn):
            c.settimeout(20)
            try:
                while data := c.recv(65536):
                    record(data)
            except OSError:
                pass
        threading.Thread(target=pump, daemon=True).start()

# Strike only once the runner has answered the start of this background run (the test writes "go"):
# otherwise, on a loaded machine, the runner could die before confirming the start, and the start
# itself would rightly answer RUN_OUTCOME_UNKNOWN.
for _ in range(300):
    if os.path.exists("/workspace/go"):
        break
    time.sleep(0.1)

daemons = []
for d in glob.glob("/proc/[0-9]*"):
    try:
        if b"sandbox_image.code.daemon" in open(d + "/cmdline", "rb").read():
            daemons.append(int(d[6:]))
    except OSError:
        pass
note("daemons", daemons)
for pid in daemons:  # what a same-uid process could read of the daemon
    for what in ("environ", "fd/0", "mem"):
        try:
            open(f"/proc/{pid}/{what}", "rb").read(64)
            note("READ", what)
        except OSError as e:
            note("denied", what, e.errno)
try:
    os.unlink(SOCK)
    note("UNLINKED")
except OSError as e:
    note("unlink denied", e.errno)
try:
    server = socket.socket(socket.AF_UNIX)
    server.bind(SOCK)
    os.chmod(SOCK, 0o777)
    server.listen(16)
    note("BOUND")
    threading.Thread(target=serve, args=(server,), daemon=True).start()
except OSError as e:
    note("bind denied", e.errno)
for pid in daemons:  # take its place: kill it, then connect as if we were it
    try:
        os.kill(pid, signal.SIGKILL)
        note("killed", pid)
    except OSError as e:
        note("kill denied", e.errno)
for guess in ("", "runner", "x" * 43):
    try:
        c = socket.socket(socket.AF_UNIX)
        c.connect(SOCK)
        c.sendall(json.dumps({"hello": "boxwright-runner/1", "secret": guess}).encode() + b"\n")
        c.settimeout(3)
        got = c.recv(65536)
        record(got)
        note("impostor got", len(got))
    except OSError as e:
        note("impostor refused", type(e).__name__)
note("ready")
time.sleep(60)
"""


async def test_runner_code_cannot_take_the_runners_place(http_server: HttpServer, tokens: dict) -> None:
    marker = "sekrit-" + secrets.token_hex(8)
    async with http_session(http_server.url, tokens["alice"]) as s:
        sid = (await s.ok("sandbox_create"))["sandboxId"]
        try:
            await s.ok("file_write", {"path": "hijack.py", "content": HIJACK})
            started = await s.ok("code_run", {"language": "bash", "code": "exec python3 hijack.py", "background": True})
            assert started["processId"]
            await s.ok("file_write", {"path": "go", "content": ""})
            for _ in range(100):
                log = await s.call("file_read", {"path": "hijack.log"})
                if not log.is_error and "ready" in log.data["content"]:
                    break
                await anyio.sleep(0.1)
            log_text = log.data["content"]
            assert "daemons [" in log_text and "daemons []" not in log_text, log_text  # it found its runner

            # The hijacker killed the runner; the next run gets a fresh one (which ends the hijacker) and
            # its code and environment reach only that one.
            code = f"import os\nprint(os.environ['SECRET_FOR_TEST'], {marker!r})"
            run = await s.call("code_run", {"language": "python", "code": code, "env": {"SECRET_FOR_TEST": marker}})
            stolen = await s.call("file_read", {"path": "stolen.bin", "encoding": "base64"})
            if not stolen.is_error:  # what reached the hijacker's sockets: never the run's code or environment
                assert marker.encode() not in base64.b64decode(stolen.data["content"])
            assert not run.is_error, run.text
            assert run.data["stdout"].split() == [marker, marker]
            again = await s.ok("code_run", {"language": "bash", "code": "echo still fine"})
            assert again["stdout"] == "still fine\n"

            log_text = (await s.ok("file_read", {"path": "hijack.log"}))["content"]
            assert "UNLINKED" not in log_text and "BOUND" not in log_text and "READ" not in log_text, log_text
            assert "unlink denied 13" in log_text  # EACCES: the socket's directory is not the runner's
            assert "impostor got" not in log_text or "impostor got 0" in log_text, log_text
            # The take-over of the new runner ended every process of the hijacker.
            procs = await s.ok("code_run", {"language": "bash", "code": "pgrep -f hijack.py || echo none"})
            assert procs["stdout"].strip() == "none", procs
        finally:
            await s.ok("sandbox_destroy", {"sandboxId": sid})


async def test_a_run_whose_runner_dies_is_not_run_again(http_server: HttpServer, tokens: dict) -> None:
    """The code kills its own runner mid-run: the call fails with RUN_OUTCOME_UNKNOWN (it did run, once),
    and the next call gets a fresh runner."""
    async with http_session(http_server.url, tokens["alice"]) as s:
        sid = (await s.ok("sandbox_create"))["sandboxId"]
        try:
            code = "echo ran >> /workspace/runs.txt; kill -9 $PPID; sleep 5"
            err = await s.error("code_run", {"language": "bash", "code": code, "timeoutMs": 20_000})
            assert (await s.ok("file_read", {"path": "runs.txt"}))["content"] == "ran\n"  # once, not twice
            assert err.code == "RUN_OUTCOME_UNKNOWN", err.text
            assert "check what it did" in err.data["recoverHint"]
            assert (await s.ok("code_run", {"language": "bash", "code": "echo fresh"}))["stdout"] == "fresh\n"
            assert (await s.ok("file_read", {"path": "runs.txt"}))["content"] == "ran\n"
        finally:
            await s.ok("sandbox_destroy", {"sandboxId": sid})


async def test_a_runner_stopped_by_its_code_is_replaced(http_server: HttpServer, tokens: dict) -> None:
    """The code stops its own runner (kill -STOP: same user): that call ends at its deadline, and the next
    one gets a fresh runner instead of every call timing out for good."""
    async with http_session(http_server.url, tokens["alice"]) as s:
        sid = (await s.ok("sandbox_create"))["sandboxId"]
        try:
            code = "echo stopping >> /workspace/runs.txt; kill -STOP $PPID; sleep 5"
            stuck = await s.error("code_run", {"language": "bash", "code": code, "timeoutMs": 1500})
            assert stuck.code in ("RPC_TIMEOUT", "OPERATION_TIMEOUT"), stuck.text
            fresh = await s.ok("code_run", {"language": "bash", "code": "echo fresh"})
            assert fresh["stdout"] == "fresh\n"
            assert (await s.ok("process_list"))["processes"] == []
            assert (await s.ok("file_read", {"path": "runs.txt"}))["content"] == "stopping\n"  # never run twice
        finally:
            await s.ok("sandbox_destroy", {"sandboxId": sid})
