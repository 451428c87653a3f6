"""Fleet lifecycle against the real engine and the real MCP client: the warm pool (distinct pooled
sandboxes with their own token and workspace, refilled, a dead one replaced and never handed out,
scrape served from it), pause and resume across a SIGKILL, idle that spares real work, quotas."""

from __future__ import annotations

import contextlib
import io
import json
import secrets
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import docker
import httpx

from host import identity, labels
from host.backends.docker_backend import DockerBackend
from host.config import Settings
from tests.integration import test_lifecycle
from tests.integration.conftest import HttpServer, own_env, remove_namespace
from tests.integration.mcp_helpers import http_session
from tests.integration.test_lifecycle import containers

cleanup_namespace = test_lifecycle.cleanup_namespace  # the fixture: namespaces removed after the test

INFO = {"jsonrpc": "2.0", "id": 1, "method": "sandbox.info", "params": {}}


def pooled(client: docker.DockerClient, namespace: str) -> dict[str, object]:
    """Running pooled containers of the namespace (claimed or not)."""
    return {sid: c for sid, c in containers(client, namespace).items() if c.labels.get(labels.POOL) == "1"}


def agent_url(container: object) -> str:
    container.reload()  # type: ignore[attr-defined]
    [binding] = container.ports["8080/tcp"]  # type: ignore[attr-defined]
    return f"http://127.0.0.1:{binding['HostPort']}/rpc"


def agent_answers(container: object, token: str) -> int:
    return httpx.post(agent_url(container), json=INFO, headers={"Authorization": f"Bearer {token}"}).status_code


async def wait_for_pool(server: HttpServer, count: int, timeout_s: float = 120) -> None:
    """Until the server's log says the pool holds `count` ready sandboxes (after the last claim)."""
    for _ in range(int(timeout_s / 0.2)):
        log = server.log()
        tail = log[log.rfind("sandbox created") :] if "sandbox created" in log else log
        if f"ready ({count} of {count})" in tail:
            return
        await anyio.sleep(0.2)
    raise AssertionError(f"the pool did not reach {count} ready sandboxes:\n{server.log()[-3000:]}")


async def test_warm_pool_hands_out_distinct_fresh_sandboxes_and_replaces_a_dead_one(
    server_env: dict, tmp_path: Path, docker_client: docker.DockerClient, cleanup_namespace: list
) -> None:
    env = own_env(server_env, "pool", tmp_path, BOXWRIGHT_POOL_SIZE="2", BOXWRIGHT_REAP_INTERVAL="2")
    ns = env["BOXWRIGHT_NAMESPACE"]
    cleanup_namespace.append(ns)
    server = HttpServer(env, tmp_path / "pool.log")
    try:
        await wait_for_pool(server, 2)
        pool = pooled(docker_client, ns)
        assert len(pool) == 2
        server_identity = identity.find(tmp_path)  # the pool's tokens derive from the server's secret
        assert server_identity is not None
        pool_tokens = {sid: server_identity.sandbox_token(ns, sid) for sid in pool}
        # One pooled sandbox's agent dies (as a crash would): it must never be handed out.
        dead = sorted(pool)[0]
        killed = pool[dead].exec_run(["pkill", "-KILL", "-f", "-x", ".*python -m sandbox_image"], user="agent")  # type: ignore[attr-defined]
        assert killed.exit_code == 0, killed.output
        async with http_session(server.url) as s:
            a = await s.ok("sandbox_create", {"name": "a"})
            b = await s.ok("sandbox_create", {"name": "b"})
            assert a["sandboxId"] != b["sandboxId"] and dead not in (a["sandboxId"], b["sandboxId"])
            assert a["fromPool"], a
            await s.ok("file_write", {"sandboxId": a["sandboxId"], "path": "mine.txt", "content": "a's"})
            listing = await s.ok("file_list", {"sandboxId": b["sandboxId"], "path": "."})
            assert listing["entries"] == []  # b's workspace is its own and fresh
            run = await s.ok("code_run", {"sandboxId": b["sandboxId"], "language": "python", "code": "print(6*7)"})
            assert run["stdout"] == "42\n"
            # Each claimed sandbox has a fresh token of its own (in the state dir); the pool's is refused.
            claimed_tokens = {}
            for sid in (a["sandboxId"], b["sandboxId"]):
                if sid not in pool_tokens:
                    continue  # a cold one (the pool had only one live sandbox left)
                overlay = json.loads((tmp_path / "overlays" / ns / f"{sid}.json").read_text())
                claimed_tokens[sid] = overlay["token"]
                container = containers(docker_client, ns)[sid]
                assert agent_answers(container, pool_tokens[sid]) == 401
                assert agent_answers(container, overlay["token"]) == 200
            assert claimed_tokens and len(set(claimed_tokens.values()) | set(pool_tokens.values())) == len(
                claimed_tokens
            ) + len(pool_tokens)
            # The dead one was removed, and the pool refills to two never-used sandboxes.
            await wait_for_pool(server, 2)
            ready = set(pooled(docker_client, ns)) - {a["sandboxId"], b["sandboxId"]}
            assert len(ready) == 2 and dead not in ready and dead not in containers(docker_client, ns)
            c = await s.ok("sandbox_create", {"name": "c"})
            assert c["fromPool"] and c["sandboxId"] in ready
            # A scrape without sandboxId gets its throw-away sandbox from the pool too (JobSandboxes).
            await s.ok("scrape", {"url": "http://127.0.0.1:8080/healthz"})
            assert "from the pool for job scrape_" in server.log()
    finally:
        server.stop()  # graceful: drains the pool
    assert containers(docker_client, ns) == {}


async def test_pause_resume_and_a_sigkilled_server_adopts_the_paused_sandbox(
    server_env: dict, tmp_path: Path, docker_client: docker.DockerClient, cleanup_namespace: list
) -> None:
    env = own_env(server_env, "pause", tmp_path)
    ns = env["BOXWRIGHT_NAMESPACE"]
    cleanup_namespace.append(ns)
    first = HttpServer(env, tmp_path / "first.log")
    async with http_session(first.url) as s:
        sid = (await s.ok("sandbox_create"))["sandboxId"]
        await s.ok("file_write", {"path": "state.txt", "content": "kept"})
        assert (await s.ok("sandbox_pause"))["status"] == "paused"
        assert containers(docker_client, ns)[sid].status == "paused"  # type: ignore[attr-defined]
        run = await s.call("code_run", {"language": "bash", "code": "cat state.txt"})
        assert not run.is_error and run.data["stdout"] == "kept", run.text
        assert "(sandbox resumed from pause)" in run.summary
        assert containers(docker_client, ns)[sid].status == "running"  # type: ignore[attr-defined]
        await s.ok("sandbox_pause")
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(10)
    first.stop()
    assert containers(docker_client, ns)[sid].status == "paused"  # type: ignore[attr-defined]
    second = HttpServer(env, tmp_path / "second.log")
    try:
        async with http_session(second.url) as s:
            [listed] = (await s.ok("sandbox_list"))["sandboxes"]
            assert (listed["sandboxId"], listed["status"]) == (sid, "paused"), second.log()
            read = await s.call("file_read", {"path": "state.txt"})
            assert not read.is_error and read.data["content"] == "kept" and "resumed from pause" in read.summary
            await s.ok("sandbox_pause")
    finally:
        second.stop()  # graceful: removes it, paused or not
    assert containers(docker_client, ns) == {}


async def test_idle_spares_a_sandbox_with_a_background_process_and_the_ttl_removes_both(
    server_env: dict, tmp_path: Path, docker_client: docker.DockerClient, cleanup_namespace: list
) -> None:
    env = own_env(server_env, "idle", tmp_path, BOXWRIGHT_IDLE_TIMEOUT="3", BOXWRIGHT_REAP_INTERVAL="1")
    ns = env["BOXWRIGHT_NAMESPACE"]
    cleanup_namespace.append(ns)
    server = HttpServer(env, tmp_path / "idle.log")
    try:
        async with http_session(server.url) as s:
            busy = (await s.ok("sandbox_create", {"ttlSeconds": 25}))["sandboxId"]
            await s.ok("code_run", {"language": "bash", "code": "sleep 600", "background": True})
            quiet = (await s.ok("sandbox_create", {"ttlSeconds": 25}))["sandboxId"]
            for _ in range(60):  # idle timeout 3 s, reaper every second
                if quiet not in containers(docker_client, ns):
                    break
                await anyio.sleep(0.5)
            assert quiet not in containers(docker_client, ns), "the idle sandbox was not removed"
            await anyio.sleep(4)  # well past the idle timeout: the busy one stays
            assert busy in containers(docker_client, ns), server.log()
            assert "idle but busy (1 background process(es) running)" in server.log()
            for _ in range(80):  # its TTL (25 s) is the hard limit
                if busy not in containers(docker_client, ns):
                    break
                await anyio.sleep(0.5)
            assert busy not in containers(docker_client, ns), "the TTL did not remove the busy sandbox"
    finally:
        server.stop()
    assert containers(docker_client, ns) == {}


async def test_an_owner_over_the_memory_total_gets_a_quota_error_and_nothing_half_created(
    server_env: dict, tmp_path: Path, docker_client: docker.DockerClient, cleanup_namespace: list
) -> None:
    env = own_env(server_env, "quota", tmp_path, BOXWRIGHT_MEM_LIMIT="512m", BOXWRIGHT_MAX_MEMORY_PER_OWNER="1g")
    ns = env["BOXWRIGHT_NAMESPACE"]
    cleanup_namespace.append(ns)
    server = HttpServer(env, tmp_path / "quota.log")
    try:
        async with http_session(server.url) as s:
            made = {(await s.ok("sandbox_create"))["sandboxId"] for _ in range(2)}
            over = await s.error("sandbox_create", {"name": "third"})
            assert over.code == "QUOTA_EXCEEDED", over.text
            assert over.data["details"] == {
                "resource": "memory",
                "limitBytes": 1024**3,
                "usedBytes": 1024**3,
                "requestedBytes": 512 * 1024**2,
            }
            assert set(containers(docker_client, ns)) == made
            volumes = docker_client.volumes.list(filters={"label": f"{labels.NAMESPACE}={ns}"})
            assert {v.attrs["Labels"][labels.SANDBOX] for v in volumes} == made
            assert {x["sandboxId"] for x in (await s.ok("sandbox_list"))["sandboxes"]} == made
    finally:
        server.stop()
    assert containers(docker_client, ns) == {}


def test_concurrent_starts_make_one_namespace_network_and_a_longer_name_is_not_it(
    namespace: str, docker_client: docker.DockerClient, tmp_path: Path
) -> None:
    """A create while the pool refills ensures the network twice at once: one network must come of it
    (two of one name make every later start fail), and namespace `x`'s is not namespace `x-b`'s."""
    ns = f"{namespace}-net"
    docker_client.networks.create(f"boxwright-{ns}-b", labels={labels.NAMESPACE: f"{ns}-b"})
    try:
        backend = DockerBackend(Settings(namespace=ns, state_dir=tmp_path / "state"), docker_client)
        with ThreadPoolExecutor(4) as pool:
            names = set(pool.map(lambda _: backend._ensure_network(), range(4)))
        assert names == {f"boxwright-{ns}"}
        found = [n.name for n in docker_client.networks.list(names=[f"boxwright-{ns}"])]
        assert sorted(found) == sorted([f"boxwright-{ns}", f"boxwright-{ns}-b"])
        backend.remove_network_if_unused()  # ours goes; the other namespace's stays
        assert [n.name for n in docker_client.networks.list(names=[f"boxwright-{ns}"])] == [f"boxwright-{ns}-b"]
    finally:
        for net in docker_client.networks.list(names=[f"boxwright-{ns}"]):
            net.remove()


async def test_a_prewarmed_pooled_sandbox_opens_its_first_tab_ahead_and_shows_it_like_a_cold_one(
    server_env: dict, tmp_path: Path, docker_client: docker.DockerClient, cleanup_namespace: list
) -> None:
    """BOXWRIGHT_POOL_BROWSER: the pooled sandbox's agent launched Chromium and opened the default session's
    context and tab before the claim (issue 12: the first browser call only navigates); the claimant sees
    what a cold sandbox shows — no session, no tab, nothing open — and its first browser_goto works."""
    env = own_env(
        server_env,
        "poolbrowser",
        tmp_path,
        BOXWRIGHT_POOL_SIZE="1",
        BOXWRIGHT_POOL_BROWSER="true",
        BOXWRIGHT_NETWORK="public",
    )
    ns = env["BOXWRIGHT_NAMESPACE"]
    cleanup_namespace.append(ns)
    server = HttpServer(env, tmp_path / "poolbrowser.log")
    url = "http://127.0.0.1:8080/healthz"  # the sandbox's own agent, seen from its browser
    try:
        await wait_for_pool(server, 1)
        [(pool_sid, container)] = pooled(docker_client, ns).items()
        for _ in range(600):  # Chromium's launch and the spare run in the background after the agent is up
            if b"spare browser context and tab open" in container.logs():  # type: ignore[attr-defined]
                break
            await anyio.sleep(0.2)
        else:
            raise AssertionError(container.logs()[-3000:])  # type: ignore[attr-defined]
        async with http_session(server.url) as s:
            warm = await s.ok("sandbox_create", {"name": "warm"})
            assert warm["fromPool"] and warm["sandboxId"] == pool_sid
            cold = await s.ok("sandbox_create", {"name": "cold", "network": "none"})  # not the pool's mode: cold
            assert not cold["fromPool"]
            seen: dict[str, list[dict]] = {}
            for sid in (warm["sandboxId"], cold["sandboxId"]):
                before = [
                    await s.ok("browser_sessions", {"sandboxId": sid, "action": "list"}),
                    await s.ok("browser_tabs", {"sandboxId": sid}),
                ]
                goto = await s.ok("browser_goto", {"sandboxId": sid, "url": url})
                assert goto["tabId"] == "tab_1" and goto["status"] == 200, goto
                back = await s.ok("browser_back", {"sandboxId": sid})
                after = [
                    await s.ok("browser_sessions", {"sandboxId": sid, "action": "list"}),
                    await s.ok("browser_tabs", {"sandboxId": sid}),
                ]
                seen[sid] = [*before, back, *after]
            assert seen[warm["sandboxId"]] == seen[cold["sandboxId"]]  # the prewarmed one looks cold
            before_sessions, before_tabs, back, after_sessions, after_tabs = seen[warm["sandboxId"]]
            assert before_sessions["sessions"] == [] and before_sessions["browserContexts"] == 0
            assert before_sessions["browserPages"] == 0 and before_tabs["tabs"] == []
            assert after_sessions["browserContexts"] == 1 and after_sessions["browserPages"] == 1
            assert [t["tabId"] for t in after_tabs["tabs"]] == ["tab_1"]
            [session] = after_sessions["sessions"]
            assert (session["sessionId"], session["tabCount"], session["isDefault"]) == ("default", 1, True)
    finally:
        server.stop()
    assert containers(docker_client, ns) == {}


def cpu_shares(container: object) -> int:
    container.reload()  # type: ignore[attr-defined]
    return int(container.attrs["HostConfig"]["CpuShares"])  # type: ignore[attr-defined]


async def test_a_refill_yields_to_the_claimant_low_cpu_weight_until_claimed_and_a_delay_after_it(
    server_env: dict, tmp_path: Path, docker_client: docker.DockerClient, cleanup_namespace: list
) -> None:
    """Issue 12: refills never starve live work. The refill starts only pool_refill_delay after the claim;
    with BOXWRIGHT_POOL_CPU_SHARES a pooled sandbox waits at a low CPU weight (the engine's cpu_shares),
    its claim gives it the normal one back, and cold sandboxes have the normal weight."""
    delay = 6.0
    env = own_env(
        server_env,
        "poolweight",
        tmp_path,
        BOXWRIGHT_POOL_SIZE="1",
        BOXWRIGHT_POOL_REFILL_DELAY=str(delay),
        BOXWRIGHT_POOL_CPU_SHARES="128",
    )
    ns = env["BOXWRIGHT_NAMESPACE"]
    cleanup_namespace.append(ns)
    server = HttpServer(env, tmp_path / "poolweight.log")
    try:
        await wait_for_pool(server, 1)
        [(pool_sid, container)] = pooled(docker_client, ns).items()
        assert cpu_shares(container) == 128
        async with http_session(server.url) as s:
            claimed = await s.ok("sandbox_create", {"name": "claimed"})
            claimed_at = time.monotonic()
            assert claimed["fromPool"] and claimed["sandboxId"] == pool_sid
            for _ in range(100):  # raised in the background, right after the claim
                if cpu_shares(container) == 1024:
                    break
                await anyio.sleep(0.05)
            assert cpu_shares(container) == 1024
            run = await s.ok("code_run", {"sandboxId": pool_sid, "language": "python", "code": "print(6*7)"})
            assert run["stdout"] == "42\n"
            await anyio.sleep(1.0)
            assert time.monotonic() - claimed_at < delay - 1  # else this check would say nothing
            assert set(pooled(docker_client, ns)) == {pool_sid}  # no refill started within the delay
            await wait_for_pool(server, 1)
            assert time.monotonic() - claimed_at >= delay - 0.5
            [refilled] = set(pooled(docker_client, ns)) - {pool_sid}
            assert cpu_shares(containers(docker_client, ns)[refilled]) == 128
            cold = await s.ok("sandbox_create", {"name": "cold", "network": "none"})
            assert not cold["fromPool"] and cpu_shares(containers(docker_client, ns)[cold["sandboxId"]]) == 1024
    finally:
        server.stop()
    assert containers(docker_client, ns) == {}


async def test_the_pool_counts_against_max_sandboxes(
    server_env: dict, tmp_path: Path, docker_client: docker.DockerClient, cleanup_namespace: list
) -> None:
    """BOXWRIGHT_MAX_SANDBOXES is the most sandboxes a server runs, its warm pool's included: the pool
    refills only while there is room, and a create past the maximum is refused."""
    env = own_env(
        server_env,
        "poolmax",
        tmp_path,
        BOXWRIGHT_POOL_SIZE="2",
        BOXWRIGHT_MAX_SANDBOXES="2",
        BOXWRIGHT_POOL_REFILL_DELAY="0",
    )
    ns = env["BOXWRIGHT_NAMESPACE"]
    cleanup_namespace.append(ns)
    server = HttpServer(env, tmp_path / "poolmax.log")
    try:
        await wait_for_pool(server, 2)
        async with http_session(server.url) as s:
            first = await s.ok("sandbox_create", {"name": "first"})
            assert first["fromPool"]
            for _ in range(100):  # the refill would start at once (no delay): give it time to be wrong
                await anyio.sleep(0.05)
            assert len(containers(docker_client, ns)) == 2  # live 1 + pooled 1: no refill past the maximum
            second = await s.ok("sandbox_create", {"name": "second"})
            assert second["fromPool"]
            refused = await s.error("sandbox_create", {"name": "third"})
            assert refused.code == "SANDBOX_LIMIT_REACHED" and refused.data["details"]["scope"] == "server", refused
            assert len(containers(docker_client, ns)) == 2
    finally:
        server.stop()
    assert containers(docker_client, ns) == {}


async def test_a_restarted_server_drains_pooled_sandboxes_of_an_old_image_and_keeps_claimed_ones(
    server_env: dict, image: str, tmp_path: Path, docker_client: docker.DockerClient, cleanup_namespace: list
) -> None:
    """Issue 12: a pooled sandbox is never handed out from a stale image. The server's image tag points at
    an older image id (a tiny derived image: same content and source hash, another id) for the first
    server; the second starts after the tag moved to the test image: it adopts no pooled sandbox of the
    old id (they are removed and replaced) and hands out only new ones, while the sandbox a user claimed
    from the old image stays theirs and keeps working."""
    current = docker_client.images.get(image)
    repo, tag = "boxwright-test-stale", secrets.token_hex(4)
    old, _ = docker_client.images.build(
        fileobj=io.BytesIO(f"FROM {image}\nLABEL io.boxwright.test-stale={tag}\n".encode()),
        tag=f"{repo}:{tag}",
        rm=True,
    )
    assert old.id != current.id
    env = own_env(server_env, "stale", tmp_path, BOXWRIGHT_POOL_SIZE="2", BOXWRIGHT_IMAGE=f"{repo}:{tag}")
    ns = env["BOXWRIGHT_NAMESPACE"]
    cleanup_namespace.append(ns)
    try:
        first = HttpServer(env, tmp_path / "first.log", ["--keep-sandboxes"])
        try:
            await wait_for_pool(first, 2)
            async with http_session(first.url) as s:
                users = await s.ok("sandbox_create", {"name": "users"})
                await s.ok("file_write", {"sandboxId": users["sandboxId"], "path": "kept.txt", "content": "mine"})
            await wait_for_pool(first, 2)
        finally:
            first.stop()  # graceful, keeping its sandboxes: the pool is handed over
        before = {sid: c.attrs["Image"] for sid, c in pooled(docker_client, ns).items()}  # type: ignore[attr-defined]
        assert len(before) == 3 and set(before.values()) == {old.id}
        old_pool = set(before) - {users["sandboxId"]}

        assert current.tag(repo, tag)  # the tag moves to another image id, as a rebuild does
        second = HttpServer(env, tmp_path / "second.log")
        try:
            await wait_for_pool(second, 2)
            now = {sid: c.attrs["Image"] for sid, c in pooled(docker_client, ns).items()}  # type: ignore[attr-defined]
            assert not old_pool & set(now)  # the old pool was removed, not adopted
            assert now[users["sandboxId"]] == old.id  # the user's sandbox is left alone
            assert {i for sid, i in now.items() if sid != users["sandboxId"]} == {current.id}
            assert "an old image" in second.log()
            async with http_session(second.url) as s:
                fresh = await s.ok("sandbox_create", {"name": "fresh"})
                assert fresh["fromPool"] and fresh["sandboxId"] not in old_pool
                assert containers(docker_client, ns)[fresh["sandboxId"]].attrs["Image"] == current.id  # type: ignore[attr-defined]
                kept = await s.ok("file_read", {"sandboxId": users["sandboxId"], "path": "kept.txt"})
                assert kept["content"] == "mine"
        finally:
            second.stop()
        assert containers(docker_client, ns) == {}
    finally:
        remove_namespace(docker_client, ns)
        docker_client.images.remove(f"{repo}:{tag}")
        with contextlib.suppress(docker.errors.ImageNotFound):
            docker_client.images.remove(old.id)
