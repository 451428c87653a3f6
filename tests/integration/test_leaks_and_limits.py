"""What one sandbox's code can learn or leave behind: neighbours' sandbox ids do not show through the
engine's DNS, processes that escape their run's session do not outlive it, and running out of
processes is a resource error with a hint — not "a bug in Boxwright"."""

from __future__ import annotations

import json
from pathlib import Path

import docker
import pytest

from host import labels
from tests.integration.conftest import HttpServer, own_env, remove_namespace
from tests.integration.mcp_helpers import http_session

PTR = """
import socket, sys
try:
    print('name', socket.gethostbyaddr(sys.argv[1])[0])
except OSError as e:
    print('none', type(e).__name__)
"""


def address_of(docker_client: docker.DockerClient, sandbox_id: str) -> str:
    [c] = docker_client.containers.list(filters={"label": f"{labels.SANDBOX}={sandbox_id}"})
    return next(iter(c.attrs["NetworkSettings"]["Networks"].values()))["IPAddress"]


async def test_a_neighbours_address_does_not_name_its_sandbox(
    http_server: HttpServer, tokens: dict, docker_client: docker.DockerClient
) -> None:
    async with (
        http_session(http_server.url, tokens["alice"]) as alice,
        http_session(http_server.url, tokens["bob"]) as bob,
    ):
        mine = (await alice.ok("sandbox_create"))["sandboxId"]
        theirs = (await bob.ok("sandbox_create"))["sandboxId"]
        try:
            await alice.ok("file_write", {"path": "ptr.py", "content": PTR})
            ip = address_of(docker_client, theirs)
            out = (await alice.ok("code_run", {"language": "bash", "code": f"python3 ptr.py {ip}"}))["stdout"]
            assert out.startswith("name "), out  # the engine's DNS does answer: the probe can see a leak
            assert theirs not in out and theirs.removeprefix("sbx_") not in out, out
        finally:
            await alice.ok("sandbox_destroy", {"sandboxId": mine})
            await bob.ok("sandbox_destroy", {"sandboxId": theirs})


COUNT = "pgrep -c -f 'sleep 30[0-9]' || true"


async def test_processes_that_escape_their_session_end_with_the_run(http_server: HttpServer, tokens: dict) -> None:
    async with http_session(http_server.url, tokens["alice"]) as s:
        sid = (await s.ok("sandbox_create"))["sandboxId"]
        try:
            swarm = "for i in $(seq 400); do setsid sleep 300 & done; echo started"
            assert (await s.ok("code_run", {"language": "bash", "code": swarm}))["stdout"] == "started\n"
            assert (await s.ok("code_run", {"language": "bash", "code": COUNT}))["stdout"].strip() == "0"
            # A background run may leave a daemon behind (its main process exits at once): it lives on
            # while the process is known, across sync runs, and goes with process_kill.
            started = await s.ok(
                "code_run", {"language": "bash", "code": "setsid sleep 301 & echo forked", "background": True}
            )
            await s.ok("process_output", {"processId": started["processId"], "waitMs": 2000})
            assert (await s.ok("code_run", {"language": "bash", "code": COUNT}))["stdout"].strip() == "1"
            await s.ok("process_kill", {"processId": started["processId"], "signal": "KILL"})
            assert (await s.ok("code_run", {"language": "bash", "code": COUNT}))["stdout"].strip() == "0"
        finally:
            await s.ok("sandbox_destroy", {"sandboxId": sid})


@pytest.fixture
def small_server(server_env: dict, tmp_path: Path, docker_client: docker.DockerClient):
    env = own_env(server_env, "pids", tmp_path / "state", BOXWRIGHT_PIDS_LIMIT="120")
    server = HttpServer(env, tmp_path / "server.log")
    yield server
    server.stop()
    remove_namespace(docker_client, env["BOXWRIGHT_NAMESPACE"])


async def test_running_out_of_processes_is_a_resource_error(small_server: HttpServer) -> None:
    async with http_session(small_server.url) as s:
        sid = (await s.ok("sandbox_create"))["sandboxId"]
        try:
            fill = "for i in $(seq 300); do sleep 310 & done 2>/dev/null; echo filled; wait"
            hog = await s.ok("code_run", {"language": "bash", "code": fill, "background": True})
            await s.ok("process_output", {"processId": hog["processId"], "waitMs": 5000, "offset": 0})
            err = await s.error("code_run", {"language": "bash", "code": "echo hi"})
            assert err.code == "PROCESS_LIMIT_REACHED", err.text
            assert "process_kill" in err.data["recoverHint"]
            await s.ok("process_kill", {"processId": hog["processId"], "signal": "KILL"})
            assert (await s.ok("code_run", {"language": "bash", "code": "echo hi"}))["stdout"] == "hi\n"
        finally:
            await s.ok("sandbox_destroy", {"sandboxId": sid})


FILL_TMPFS = """
for d in /tmp /home/runner /dev/shm; do
  dd if=/dev/zero of=$d/pinned bs=1M count=100000 2>/dev/null
  echo "$d $(du -sm $d/pinned | cut -f1)"
done
"""
ALLOCATE = """
for i in $(seq 40); do
  python3 -c 'import time; b = bytearray(30 << 20); time.sleep(20)' &
done
wait
echo allocated
"""


@pytest.fixture
def one_gig_server(server_env: dict, tmp_path: Path, docker_client: docker.DockerClient):
    env = own_env(server_env, "oom", tmp_path / "state", BOXWRIGHT_MEM_LIMIT="1g")
    server = HttpServer(env, tmp_path / "server.log")
    yield server
    server.stop()
    remove_namespace(docker_client, env["BOXWRIGHT_NAMESPACE"])


async def test_code_pinning_memory_in_tmpfs_cannot_kill_the_agent(
    one_gig_server: HttpServer, docker_client: docker.DockerClient
) -> None:
    """Fill every tmpfs the runner can write, then allocate past the memory limit: the kernel kills code
    processes (the OOM killer's first choice), never the agent or the browser, and the sandbox goes on."""
    async with http_session(one_gig_server.url) as s:
        sid = (await s.ok("sandbox_create"))["sandboxId"]
        try:
            await s.ok("browser_goto", {"url": "data:text/html,<h1>still here</h1>"})
            before = (await s.ok("sandbox_list"))["sandboxes"][0]
            [c] = docker_client.containers.list(filters={"label": f"{labels.SANDBOX}={sid}"})
            agent_pid = c.attrs["State"]["Pid"]
            filled = await s.call("code_run", {"language": "bash", "code": FILL_TMPFS, "timeoutMs": 60_000})
            pinned = sum(int(line.split()[1]) for line in filled.data.get("stdout", "").splitlines())
            assert not filled.is_error and pinned >= 3 * 100, filled.text  # a third of the memory is pinned
            await s.call("code_run", {"language": "bash", "code": ALLOCATE, "timeoutMs": 60_000})

            c.reload()
            assert c.status == "running" and c.attrs["State"]["Pid"] == agent_pid  # same init, same agent
            snapshot = await s.ok("browser_snapshot")  # the browser survived too
            assert "still here" in json.dumps(snapshot)
            after = await s.ok("code_run", {"language": "bash", "code": "cat /proc/self/oom_score_adj"})
            assert after["stdout"].strip() == "1000"  # code goes first
            assert (await s.ok("sandbox_list"))["sandboxes"][0]["createdAt"] == before["createdAt"]

            # The one killed says why (exit 137 alone reads like any SIGKILL); one that killed itself does not.
            hog = {"language": "python", "code": "b = b'x' * (4 << 30)", "timeoutMs": 60_000}
            killed = await s.ok("code_run", hog)
            assert killed["exitCode"] == 137 and killed["outOfMemory"] is True, killed
            own = await s.ok("code_run", {"language": "bash", "code": "kill -9 $$"})
            assert own["exitCode"] == 137 and own["outOfMemory"] is False, own
            pid = (await s.ok("code_run", {**hog, "background": True}))["processId"]
            out = await s.ok("process_output", {"processId": pid, "waitMs": 30_000})
            assert out["running"] is False and out["outOfMemory"] is True, out
        finally:
            await s.call("sandbox_destroy", {"sandboxId": sid})
