"""code_run timeouts kill everything and never wait for an outer backstop; a frozen agent ends in a
clear RPC timeout while other sandboxes keep being served; background processes work end to end."""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio
import docker

from host import labels
from rpc.deadline import LADDER
from tests.integration.conftest import HttpServer
from tests.integration.mcp_helpers import http_session


def container_of(client: docker.DockerClient, sid: str):
    [c] = client.containers.list(all=True, filters={"label": f"{labels.SANDBOX}={sid}"})
    return c


def processes(container) -> str:
    return container.exec_run(["ps", "-eo", "user,pid,pgid,args"], user="agent").output.decode()


async def within(seconds: float, check: Callable[[], bool]) -> bool:
    """Whether `check` comes true within `seconds` (asked every 0.2 s)."""
    for _ in range(int(seconds / 0.2)):
        if check():
            return True
        await anyio.sleep(0.2)
    return check()


async def test_timeout_kills_the_process_group_promptly(
    http_server: HttpServer, tokens: dict, docker_client: docker.DockerClient
) -> None:
    async with http_session(http_server.url, tokens["alice"]) as s:
        sid = (await s.ok("sandbox_create"))["sandboxId"]
        try:
            started = time.monotonic()
            r = await s.ok(
                "code_run",
                {"language": "bash", "code": "sleep 100 & sleep 100; echo never", "timeoutMs": 1000},
            )
            elapsed = time.monotonic() - started
            assert r["timedOut"] is True and r["exitCode"] == 137
            assert "never" not in r["stdout"]
            # The innermost layer fired: before the first outer one (the agent handler's deadline) could.
            assert elapsed < 1 + LADDER.agent_slack_s - LADDER.handler_s, elapsed
            assert "sleep 100" not in processes(container_of(docker_client, sid))
        finally:
            await s.ok("sandbox_destroy", {"sandboxId": sid})


async def test_a_cancelled_call_stops_its_code_in_the_sandbox(
    http_server: HttpServer, tokens: dict, docker_client: docker.DockerClient
) -> None:
    """A client that cancels a code_run (the SDK cancels the call) got its answer, but the code ran on to the
    end: the host's call to the agent went, and the agent and its code runner never heard of it."""
    async with http_session(http_server.url, tokens["alice"]) as s:
        sid = (await s.ok("sandbox_create"))["sandboxId"]
        container = container_of(docker_client, sid)
        try:
            async with anyio.create_task_group() as calls:
                calls.start_soon(s.call, "code_run", {"language": "bash", "code": "sleep 47; echo done"})
                assert await within(30, lambda: "sleep 47" in processes(container))
                calls.cancel_scope.cancel()
            assert await within(10, lambda: "sleep 47" not in processes(container)), processes(container)
            again = await s.ok("code_run", {"language": "bash", "code": "echo still here"})
            assert again["stdout"] == "still here\n"
        finally:
            await s.ok("sandbox_destroy", {"sandboxId": sid})


async def test_frozen_agent_times_out_at_rpc_layer_and_others_keep_working(
    http_server: HttpServer, tokens: dict, docker_client: docker.DockerClient
) -> None:
    async with http_session(http_server.url, tokens["alice"]) as s:
        frozen = (await s.ok("sandbox_create", {"name": "frozen"}))["sandboxId"]
        healthy = (await s.ok("sandbox_create", {"name": "healthy"}))["sandboxId"]
        container = container_of(docker_client, frozen)
        container.pause()
        try:
            results: dict[str, tuple[float, object]] = {}
            started = time.monotonic()

            async def call_frozen() -> None:
                a = await s.call(
                    "code_run", {"sandboxId": frozen, "language": "bash", "code": "true", "timeoutMs": 1000}
                )
                results["frozen"] = (time.monotonic() - started, a)

            async def call_healthy() -> None:
                await anyio.sleep(0.3)
                a = await s.call("code_run", {"sandboxId": healthy, "language": "bash", "code": "echo fine"})
                results["healthy"] = (time.monotonic() - started, a)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call_frozen)
                tg.start_soon(call_healthy)
            frozen_at, frozen_answer = results["frozen"]
            healthy_at, healthy_answer = results["healthy"]
            assert frozen_answer.is_error and frozen_answer.code == "RPC_TIMEOUT", frozen_answer.text
            assert frozen_answer.data["details"]["containerStatus"] == "paused"
            assert frozen_at < 10
            assert not healthy_answer.is_error and healthy_answer.data["stdout"] == "fine\n"
            assert healthy_at < frozen_at  # served while the frozen call was still pending
        finally:
            container.unpause()
        again = await s.ok("code_run", {"sandboxId": frozen, "language": "bash", "code": "echo back"})
        assert again["stdout"] == "back\n"
        for sid in (frozen, healthy):
            await s.ok("sandbox_destroy", {"sandboxId": sid})


async def test_background_process_output_and_kill(
    http_server: HttpServer, tokens: dict, docker_client: docker.DockerClient
) -> None:
    async with http_session(http_server.url, tokens["alice"]) as s:
        sid = (await s.ok("sandbox_create"))["sandboxId"]
        try:
            code = (
                "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(0.2)\ntime.sleep(60)"
            )
            started = await s.ok("code_run", {"language": "python", "code": code, "background": True})
            pid = started["processId"]
            assert pid and started["exitCode"] is None
            out = await s.ok("process_output", {"processId": pid, "waitMs": 3000})
            got, offset = out["output"], out["nextOffset"]
            for _ in range(15):  # unbuffered: print() may arrive in pieces ("tick", " 2", "\n")
                if "tick 2\n" in got:
                    break
                more = await s.ok("process_output", {"processId": pid, "offset": offset, "waitMs": 2000})
                got, offset = got + more["output"], more["nextOffset"]
            assert "tick 0" in got and "tick 2" in got and out["running"] is True
            listed = await s.ok("process_list")
            assert [p["processId"] for p in listed["processes"]] == [pid]
            killed = await s.ok("process_kill", {"processId": pid})
            assert killed["processId"] == pid
            final = await s.ok("process_output", {"processId": pid, "offset": offset, "waitMs": 3000})
            assert final["running"] is False and final["exitCode"] == 143
            missing = await s.error("process_kill", {"processId": "proc_nope"})
            assert missing.code == "PROCESS_NOT_FOUND"
            # INT ends the shell, not its child that ignores INT: the kill does not leave that one running.
            code = "bash -c 'trap \"\" INT; echo ready; sleep 307' & sleep 306"
            deaf = (await s.ok("code_run", {"language": "bash", "code": code, "background": True}))["processId"]
            assert "ready" in (await s.ok("process_output", {"processId": deaf, "waitMs": 3000}))["output"]
            interrupted = await s.ok("process_kill", {"processId": deaf, "signal": "INT"})
            assert interrupted["running"] is False and interrupted["exitCode"] == 130
            assert "sleep 307" not in processes(container_of(docker_client, sid))
        finally:
            await s.ok("sandbox_destroy", {"sandboxId": sid})
