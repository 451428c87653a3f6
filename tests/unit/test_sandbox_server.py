"""The agent over HTTP (aiohttp test client): auth, protocol errors, limits, deadlines, forwarding to the runner."""

from __future__ import annotations

import asyncio
import base64
import grp
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from asyncio.subprocess import PIPE
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from rpc.deadline import Deadline
from rpc.errors import ErrorCode
from rpc.methods import FILE_READ, SANDBOX_INFO
from rpc.models.files import FileReadParams, FileReadResult
from rpc.models.sandbox import Health, SandboxInfoParams, SandboxInfoResult
from rpc.settings import SettingsError
from sandbox_image.code import channel, daemon
from sandbox_image.code import client as code_client
from sandbox_image.code.channel import hello
from sandbox_image.code.client import share_socket
from sandbox_image.code.serving import RunnerDaemon
from sandbox_image.config import SandboxSettings, load_or_exit, with_secrets_file
from sandbox_image.dispatcher import Dispatcher
from sandbox_image.server import build_app
from tests.unit.conftest import RUNNER_SECRET, connect_runner, stop_runner

Client = TestClient[web.Request, web.Application]
ROOT = Path(__file__).resolve().parents[2]


def request(method: str, params: dict[str, Any] | None = None, rid: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}


async def call(client: Client, headers: dict[str, str], method: str, **params: Any) -> dict[str, Any]:
    response = await client.post("/rpc", json=request(method, params), headers=headers)
    assert response.status == 200
    return await response.json()


def error_of(body: dict[str, Any]) -> tuple[int, str]:
    error = body["error"]
    assert error["data"]["recoverHint"], "every error carries a recovery hint"
    return error["code"], error["data"]["errorCode"]


# ---------------------------------------------------------------- health and auth


async def test_healthz_needs_no_auth_and_probes_the_runner(agent: Client) -> None:
    response = await agent.get("/healthz")
    assert response.status == 200
    health = Health.model_validate(await response.json())
    assert health.status == "ok" and not health.codeRunnerReady


async def test_healthz_reports_a_running_runner(agent_with_runner: Client) -> None:
    health = Health.model_validate(await (await agent_with_runner.get("/healthz")).json())
    assert health.codeRunnerReady


async def test_runner_confirms_to_the_host_only_once_connected(
    agent: Client, auth_headers: dict[str, str], agent_config: SandboxSettings
) -> None:
    # The host's handshake ends at the daemon's `ok`: it must come after the hello, so a daemon that dies
    # before reaching the agent fails the start at once (host.backends.runner) instead of timing out. The
    # daemon serves on the connection its handshake opened (sandbox_image.code.daemon).
    confirmed = threading.Event()
    sock = await asyncio.to_thread(
        channel.handshake, RUNNER_SECRET, agent_config.runner_socket, confirm=confirmed.set, within_s=10
    )
    assert confirmed.is_set()
    serving = asyncio.create_task(RunnerDaemon(agent_config).serve_admitted(sock))
    try:
        for _ in range(500):
            if Health.model_validate(await (await agent.get("/healthz")).json()).codeRunnerReady:
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the runner confirmed but the agent never saw it")
        body = await call(agent, auth_headers, "code.run", language="bash", code="echo admitted")
        assert body["result"]["stdout"] == "admitted\n"
    finally:
        await stop_runner(serving)


async def test_a_runner_that_cannot_load_after_its_hello_says_why_in_the_agents_log(
    agent: Client, agent_config: SandboxSettings, caplog: pytest.LogCaptureFixture
) -> None:
    # Its stderr ended with the host's handshake: the agent's log (which the host's diagnostics read) says why.
    sock = await asyncio.to_thread(channel.handshake, RUNNER_SECRET, agent_config.runner_socket, within_s=10)
    elsewhere = ("nobody", "/nowhere/runner.sock")  # what this process's settings are not: refused at the load
    assert await asyncio.to_thread(daemon.serve, sock, elsewhere, None, subreaper=False) == 2
    for _ in range(500):
        if "cannot serve: StartRefused: the settings disagree" in caplog.text:
            break
        await asyncio.sleep(0.01)
    else:
        raise AssertionError(caplog.text)
    assert not Health.model_validate(await (await agent.get("/healthz")).json()).codeRunnerReady


def test_runner_that_cannot_reach_the_agent_never_confirms(runner_config: SandboxSettings) -> None:
    # nobody listens on its socket
    with pytest.raises(channel.NoAgent, match="no agent listens"):
        channel.handshake(
            RUNNER_SECRET,
            runner_config.runner_socket,
            confirm=lambda: pytest.fail("confirmed without an agent"),
            within_s=0.2,
        )


async def test_runner_without_its_agent_in_process_never_serves(runner_config: SandboxSettings) -> None:
    with pytest.raises(channel.NoAgent, match="no agent listens"):
        await RunnerDaemon(runner_config).serve(RUNNER_SECRET, connect_within_s=0.2)


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic dXNlcjpwYXNz"}, {"Authorization": "Bearer"}],
)
async def test_rpc_requires_the_bearer_token(agent: Client, headers: dict[str, str]) -> None:
    response = await agent.post("/rpc", json=request("sandbox.info"), headers=headers)
    assert response.status == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert error_of(await response.json())[1] == ErrorCode.UNAUTHORIZED


async def test_wrong_http_method_is_405_with_a_json_rpc_body(agent: Client, auth_headers: dict[str, str]) -> None:
    response = await agent.get("/rpc", headers=auth_headers)
    assert response.status == 405 and response.headers["Allow"] == "POST"
    assert error_of(await response.json())[1] == ErrorCode.INVALID_REQUEST


# ---------------------------------------------------------------- protocol errors


@pytest.mark.parametrize(
    "body", [b"{not json", b"", b"\xff\xfe", b"[" * 20_000 + b"]" * 20_000, b'{"id": 1' + b"9" * 5000 + b"}"]
)
async def test_garbage_is_a_parse_error(agent: Client, auth_headers: dict[str, str], body: bytes) -> None:
    response = await agent.post("/rpc", data=body, headers=auth_headers)
    assert response.status == 200
    assert error_of(await response.json()) == (-32700, ErrorCode.PARSE_ERROR)


@pytest.mark.parametrize(
    "payload",
    [
        3,
        "x",
        None,
        {"id": 1, "method": "sandbox.info"},
        {"jsonrpc": "1.0", "id": 1, "method": "sandbox.info"},
        {"jsonrpc": "2.0", "id": 1, "method": "sandbox.info", "params": [1]},
    ],
)
async def test_non_object_or_bad_envelope_is_invalid_request(
    agent: Client, auth_headers: dict[str, str], payload: Any
) -> None:
    body = await (await agent.post("/rpc", data=json.dumps(payload), headers=auth_headers)).json()
    assert error_of(body) == (-32600, ErrorCode.INVALID_REQUEST)


async def test_batches_are_refused_explicitly(agent: Client, auth_headers: dict[str, str]) -> None:
    payload = [request("sandbox.info", rid=1), request("sandbox.info", rid=2)]
    body = await (await agent.post("/rpc", json=payload, headers=auth_headers)).json()
    assert error_of(body) == (-32600, ErrorCode.INVALID_REQUEST)
    assert "batch" in body["error"]["message"]


async def test_unknown_method_lists_known_ones(agent: Client, auth_headers: dict[str, str]) -> None:
    body = await call(agent, auth_headers, "browser.fly")
    assert error_of(body) == (-32601, ErrorCode.METHOD_NOT_FOUND)
    known = body["error"]["data"]["details"]["knownMethods"]
    assert {"sandbox.info", "file.read", "code.run", "process.kill"} <= set(known)
    assert body["id"] == 1
    # A contract method without a handler (e.g. the runner daemon's dispatcher has no browser).
    unserved = await Dispatcher("runner").dispatch(request("browser.goto", {"url": "https://example.com"}))
    assert error_of(unserved)[1] == ErrorCode.METHOD_NOT_FOUND
    assert "not served" in unserved["error"]["message"]


async def test_bad_params_name_fields_but_never_echo_values(agent: Client, auth_headers: dict[str, str]) -> None:
    secret = "sk-very-secret-value-123"
    body = await call(
        agent, auth_headers, "code.run", language=secret, code="print(1)", env={"K": 5}, timeoutMs=secret, bogus=secret
    )
    assert error_of(body) == (-32602, ErrorCode.INVALID_PARAMETER)
    fields = {e["field"] for e in body["error"]["data"]["details"]["errors"]}
    assert fields == {"language", "env.K", "timeoutMs", "bogus"}
    assert secret not in json.dumps(body)


async def test_invalid_deadline_is_an_invalid_parameter(agent: Client, auth_headers: dict[str, str]) -> None:
    for bad in ("soon", -1, True):
        body = await call(agent, auth_headers, "sandbox.info", deadlineMs=bad)
        assert error_of(body) == (-32602, ErrorCode.INVALID_PARAMETER)
        assert body["error"]["data"]["details"]["errors"][0]["field"] == "deadlineMs"


async def test_oversized_body_is_413(
    agent: Client, auth_headers: dict[str, str], agent_config: SandboxSettings
) -> None:
    big = request("file.write", {"path": "x.txt", "content": "x" * (agent_config.max_body_bytes + 1)})
    response = await agent.post("/rpc", json=big, headers=auth_headers)
    assert response.status == 413
    assert error_of(await response.json())[1] == ErrorCode.PAYLOAD_TOO_LARGE

    async def chunks() -> Any:  # no Content-Length: the limit applies while reading
        for _ in range(agent_config.max_body_bytes // 1024 + 2):
            yield b"x" * 1024

    response = await agent.post("/rpc", data=chunks(), headers=auth_headers)
    assert response.status == 413


# ---------------------------------------------------------------- deadlines and crashes


@pytest.fixture
async def slow_app(make_client: Any) -> Client:
    """A dispatcher whose handlers misbehave: one never finishes, one crashes."""
    dispatcher = Dispatcher("test")

    async def hang(_params: SandboxInfoParams, _deadline: Deadline) -> SandboxInfoResult:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async def crash(_params: FileReadParams, _deadline: Deadline) -> FileReadResult:
        raise RuntimeError("/secret/path exploded")

    dispatcher.register(SANDBOX_INFO, hang)
    dispatcher.register(FILE_READ, crash)

    async def health() -> Health:
        return Health(status="ok", agentVersion="t", codeRunnerReady=False)

    return await make_client(build_app(dispatcher, health=health, auth=None, max_body_bytes=1024))


async def test_deadline_overrun_is_a_structured_timeout(slow_app: Client) -> None:
    started = time.monotonic()
    body = await call(slow_app, {}, "sandbox.info", deadlineMs=400)
    elapsed = time.monotonic() - started
    assert error_of(body)[1] == ErrorCode.OPERATION_TIMEOUT
    assert elapsed < 0.4 + 0.5  # fires before the caller's own deadline (plus scheduling slack)
    assert body["error"]["data"]["details"]["deadlineMs"] == 400


async def test_handler_crash_is_a_generic_internal_error(slow_app: Client) -> None:
    body = await call(slow_app, {}, "file.read", path="x")
    assert error_of(body) == (-32603, ErrorCode.INTERNAL_ERROR)
    assert "secret" not in json.dumps(body) and "Traceback" not in json.dumps(body)


# ---------------------------------------------------------------- the agent's methods


async def test_sandbox_info(agent_with_runner: Client, auth_headers: dict[str, str], workspace: Path) -> None:
    info = SandboxInfoResult.model_validate((await call(agent_with_runner, auth_headers, "sandbox.info"))["result"])
    assert info.codeRunnerReady and info.workspace == str(workspace) and info.user and info.uptimeMs >= 0


async def test_files_over_rpc(agent: Client, auth_headers: dict[str, str]) -> None:
    blob = bytes(range(256))
    written = await call(
        agent, auth_headers, "file.write", path="d/b.bin", content=base64.b64encode(blob).decode(), encoding="base64"
    )
    assert written["result"] == {"path": "d/b.bin", "size": 256, "created": True}
    read = await call(agent, auth_headers, "file.read", path="d/b.bin", encoding="base64")
    assert base64.b64decode(read["result"]["content"]) == blob
    listed = await call(agent, auth_headers, "file.list", path="d")
    assert [e["path"] for e in listed["result"]["entries"]] == ["d/b.bin"]
    escaped = await call(agent, auth_headers, "file.read", path="../../etc/passwd")
    assert error_of(escaped)[1] == ErrorCode.PATH_OUTSIDE_WORKSPACE


async def test_code_run_without_runner_is_unavailable(agent: Client, auth_headers: dict[str, str]) -> None:
    body = await call(agent, auth_headers, "code.run", language="bash", code="echo hi")
    assert error_of(body)[1] == ErrorCode.CODE_RUNNER_UNAVAILABLE


async def test_code_run_is_forwarded_to_the_runner(agent_with_runner: Client, auth_headers: dict[str, str]) -> None:
    body = await call(agent_with_runner, auth_headers, "code.run", language="python", code="print(6 * 7)")
    assert body["result"]["stdout"] == "42\n" and body["result"]["exitCode"] == 0


async def test_code_run_timeout_is_bounded_by_the_deadline(
    agent_with_runner: Client, auth_headers: dict[str, str]
) -> None:
    started = time.monotonic()
    body = await call(
        agent_with_runner, auth_headers, "code.run", language="bash", code="sleep 30", timeoutMs=30_000, deadlineMs=1500
    )
    # The run's own timeout fired inside the 1.5 s deadline (measured by the runner, so CPU load on a
    # shared machine cannot blur it); the wall-clock bound is only a backstop against the 30 s sleep.
    assert body["result"]["timedOut"] is True
    assert body["result"]["durationMs"] < 1500
    assert time.monotonic() - started < 10


async def test_a_timed_out_run_answers_in_time_even_when_what_it_left_holds_its_output_open(
    agent_with_runner: Client, auth_headers: dict[str, str]
) -> None:
    """A process that left the run's session (setsid) keeps the pipes open: the drain after the timeout must
    not run past the deadline (it waited its full 0.5 s and the answer came as OPERATION_TIMEOUT)."""
    body = await call(
        agent_with_runner,
        auth_headers,
        "code.run",
        language="bash",
        code="echo before; setsid sleep 30 & sleep 30",
        timeoutMs=30_000,
        deadlineMs=1500,
    )
    assert body["result"]["timedOut"] is True and body["result"]["stdout"] == "before\n", body


async def test_background_processes_through_the_agent(agent_with_runner: Client, auth_headers: dict[str, str]) -> None:
    started = await call(
        agent_with_runner, auth_headers, "code.run", language="bash", code="echo up; sleep 100", background=True
    )
    pid = started["result"]["processId"]
    out = await call(agent_with_runner, auth_headers, "process.output", processId=pid, waitMs=3000)
    assert out["result"]["output"] == "up\n" and out["result"]["running"]
    listed = await call(agent_with_runner, auth_headers, "process.list")
    assert [p["processId"] for p in listed["result"]["processes"]] == [pid]
    killed = await call(agent_with_runner, auth_headers, "process.kill", processId=pid, signal="KILL")
    assert killed["result"]["running"] is False and killed["result"]["exitCode"] == 137
    missing = await call(agent_with_runner, auth_headers, "process.output", processId="proc_missing")
    assert error_of(missing)[1] == ErrorCode.PROCESS_NOT_FOUND


async def test_runner_validation_errors_come_back_intact(
    agent_with_runner: Client, auth_headers: dict[str, str]
) -> None:
    body = await call(agent_with_runner, auth_headers, "code.run", language="bash", code="pwd", cwd="../..")
    assert error_of(body)[1] == ErrorCode.PATH_OUTSIDE_WORKSPACE


async def test_runner_socket_is_the_agents_and_group_accessible(agent: Client, agent_config: Any) -> None:
    assert os.stat(agent_config.runner_socket).st_mode & 0o777 == 0o660


async def test_runner_socket_appears_only_once_the_runner_may_open_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon may be connecting while the agent starts: the socket's name must not exist before its mode
    and group are set (a connect refused with EACCES ends the daemon, and the sandbox never gets a runner)."""
    path = str(tmp_path / "runner.sock")
    seen: list[tuple[bool, int]] = []

    def share(staged: str, group: str | None) -> None:
        seen.append((os.path.exists(path), os.stat(staged).st_mode & 0o777))

    monkeypatch.setattr(code_client, "share_socket", share)
    link = code_client.RunnerLink(path, runner_uid=os.getuid() + 1, secret_sha256="0" * 64, group="sandbox")
    await link.start()
    try:
        assert seen == [(False, 0o660)]
        assert stat.S_ISSOCK(os.stat(path).st_mode) and os.stat(path).st_mode & 0o777 == 0o660
        assert os.listdir(tmp_path) == ["runner.sock"]
    finally:
        await link.close()


async def test_only_the_genuine_runner_is_admitted(
    agent: Client, agent_config: SandboxSettings, auth_headers: dict[str, str], socket_dir: Path
) -> None:
    """A process without the secret (or of another user) is refused and learns nothing; the genuine daemon
    is admitted; a newer genuine daemon replaces the older one."""
    path = agent_config.runner_socket
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(hello("not-the-secret"))
    await writer.drain()
    assert await reader.read() == b""  # hung up on, nothing sent
    writer.close()
    reader, writer = await asyncio.open_unix_connection(path)  # a silent one times out as well
    writer.write(b'{"hello": "boxwright-runner/1"}\n')
    await writer.drain()
    assert await reader.read() == b""
    writer.close()
    assert not (await (await agent.get("/healthz")).json())["codeRunnerReady"]
    body = await call(agent, auth_headers, "code.run", language="bash", code="echo hi")
    assert error_of(body)[1] == ErrorCode.CODE_RUNNER_UNAVAILABLE and body["error"]["data"]["details"]["sent"] is False

    first = await connect_runner(agent_config)
    second = None
    try:
        await wait_ready(agent)
        out = await call(agent, auth_headers, "code.run", language="bash", code="echo $$")
        assert out["result"]["exitCode"] == 0
        second = await connect_runner(agent_config)
        await asyncio.wait_for(asyncio.shield(first), 5)  # the agent hung up on the older daemon
        await wait_ready(agent)
        again = await call(agent, auth_headers, "code.run", language="python", code="print(6 * 7)")
        assert again["result"]["stdout"] == "42\n"
    finally:
        await stop_runner(first)
        if second is not None:
            await stop_runner(second)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to connect as another user")
async def test_a_process_of_another_user_is_refused(agent: Client, agent_config: SandboxSettings) -> None:
    """SO_PEERCRED: even with the right secret, a process of another uid is not the runner."""
    code = (
        "import os, socket, sys; os.setgid(65534); os.setuid(65534); s = socket.socket(socket.AF_UNIX); "
        "s.connect(sys.argv[1])\n"
        "try:\n    s.sendall(sys.argv[2].encode()); print('got', repr(s.recv(100)))\n"
        "except OSError as e:\n    print('got', type(e).__name__)"
    )
    os.chmod(Path(agent_config.runner_socket).parent, 0o755)
    os.chmod(agent_config.runner_socket, 0o666)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, agent_config.runner_socket, hello(RUNNER_SECRET).decode(), stdout=PIPE
    )
    out, _ = await proc.communicate()
    assert out.strip() in (b"got b''", b"got ConnectionResetError", b"got BrokenPipeError"), out  # hung up on
    assert not (await (await agent.get("/healthz")).json())["codeRunnerReady"]


async def test_a_runner_lost_mid_call_is_outcome_unknown_not_unavailable(
    agent: Client, agent_config: SandboxSettings, auth_headers: dict[str, str]
) -> None:
    """Once a call was handed over, losing the daemon means it may have run: RUN_OUTCOME_UNKNOWN (which the
    host never retries), unlike CODE_RUNNER_UNAVAILABLE (no daemon: the call reached nobody)."""
    serving = await connect_runner(agent_config)
    try:
        await wait_ready(agent)
        pending = asyncio.create_task(
            call(agent, auth_headers, "code.run", language="bash", code="sleep 5", timeoutMs=10_000)
        )
        await asyncio.sleep(0.5)
        await stop_runner(serving)
        body = await pending
        assert error_of(body)[1] == ErrorCode.RUN_OUTCOME_UNKNOWN, body
        assert body["error"]["data"]["details"]["method"] == "code.run"
    finally:
        await stop_runner(serving)


async def wait_ready(agent: Client) -> None:
    for _ in range(500):
        if (await (await agent.get("/healthz")).json())["codeRunnerReady"]:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the runner was not admitted")


def test_runner_socket_is_handed_to_the_shared_group(tmp_path: Path) -> None:
    path = tmp_path / "f.sock"
    path.touch()
    group = grp.getgrgid(os.getgid()).gr_name
    share_socket(str(path), group)
    assert path.stat().st_gid == os.getgid()
    share_socket(str(path), "no-such-group-boxwright")  # logged, not fatal
    share_socket(str(path), None)


# ---------------------------------------------------------------- configuration


def test_agent_refuses_to_start_without_the_token_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith("BOXWRIGHT_")]:
        monkeypatch.delenv(name)
    with pytest.raises(SettingsError, match="BOXWRIGHT_TOKEN_SHA256"):
        SandboxSettings.load().agent_token_sha256()
    monkeypatch.setenv("BOXWRIGHT_TOKEN_SHA256", "abc")
    with pytest.raises(SettingsError, match="BOXWRIGHT_TOKEN_SHA256"):
        SandboxSettings.load()
    monkeypatch.setenv("BOXWRIGHT_TOKEN_SHA256", "A" * 64)
    monkeypatch.setenv("BOXWRIGHT_PORT", "9000")
    config = SandboxSettings.load()
    assert config.agent_token_sha256() == "a" * 64 and config.port == 9000 and config.workspace == "/workspace"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOXWRIGHT_")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-m", "sandbox_image"], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    assert proc.returncode == 2 and "BOXWRIGHT_TOKEN_SHA256" in proc.stderr


def test_the_agent_takes_its_hashes_from_a_secrets_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The swarm backend's way: the hashes in a file the agent alone reads, none in the environment."""
    for name in [k for k in os.environ if k.startswith("BOXWRIGHT_")]:
        monkeypatch.delenv(name)
    secrets_file = tmp_path / "agent.env"
    secrets_file.write_text(f"BOXWRIGHT_TOKEN_SHA256={'b' * 64}\nBOXWRIGHT_RUNNER_SECRET_SHA256={'c' * 64}\n")
    monkeypatch.setenv("BOXWRIGHT_SECRETS_FILE", str(secrets_file))
    monkeypatch.setenv("BOXWRIGHT_PORT", "9001")
    config = load_or_exit("agent", agent=True)
    assert config.agent_token_sha256() == "b" * 64 and config.runner_secret_sha256 == "c" * 64 and config.port == 9001
    # Only the agent reads it: the code runner (same environment) does not, and needs no hashes.
    assert SandboxSettings.load().token_sha256 is None
    secrets_file.write_text("BOXWRIGHT_TOKEN_SHA256=short\n")
    with pytest.raises(SystemExit):
        load_or_exit("agent", agent=True)
    # A file that cannot be read is an error naming the variable, not a silent start without a token.
    monkeypatch.setenv("BOXWRIGHT_SECRETS_FILE", str(tmp_path / "missing.env"))
    with pytest.raises(SettingsError, match="BOXWRIGHT_SECRETS_FILE: cannot read"):
        with_secrets_file(str(tmp_path / "missing.env"))
    with pytest.raises(SystemExit):
        load_or_exit("agent", agent=True)


def test_a_stopped_process_is_told_apart() -> None:
    """What the agent reads of its runner before each call: stopped (kill -STOP) or not."""
    proc = subprocess.Popen(["sleep", "30"])
    try:
        assert not code_client._stopped(proc.pid)
        os.kill(proc.pid, signal.SIGSTOP)
        for _ in range(100):
            if code_client._stopped(proc.pid):
                break
            time.sleep(0.01)
        assert code_client._stopped(proc.pid)
        os.kill(proc.pid, signal.SIGCONT)
        time.sleep(0.05)
        assert not code_client._stopped(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert not code_client._stopped(proc.pid)  # gone: not stopped
