"""Issue 13's acceptance on the two-node swarm, end to end: `boxwright serve --backend swarm` over HTTP,
driven by the real MCP SDK client, sandboxes spread over both nodes, each running code, writing and
reading files and browsing a page it serves (one also scraping it); a `public` one blocked from a decoy
on the other node; a paused one and the rest of a SIGKILLed server's sandboxes adopted by the next (the
paused one still paused, resumed by its next call); nothing left on any node afterwards.
"""

from __future__ import annotations

import signal
import socket
import time
from collections import Counter
from pathlib import Path

import anyio

from host import labels
from host.backends.swarm_backend import SECRETS_PATH
from tests.integration.conftest import HttpServer
from tests.integration.mcp_helpers import Session, http_session
from tests.swarm.cluster import SwarmCluster
from tests.swarm.conftest import leftovers, node_of, swarm_env

# The issue asks for 10, all created at once. Under a load average near 20 (other work on the same two
# cores) ten starts at once once pushed a code runner's handshake past the one engine's fixed 30 s: on
# swarm the handshake now has the whole start-up time (SwarmBackend.start_code_runner), set generously here.
SANDBOXES = 10
BROWSERS_AT_ONCE = 3  # a Chromium start is CPU-bound: more at once only queue on two cores

HARDENING = (
    "import os\n"
    "print([l.split()[1] for l in open('/proc/self/status') if l.startswith(('NoNewPrivs', 'CapEff'))])\n"
    "try:\n"
    f"    open({SECRETS_PATH!r}).read(); print('secret readable')\n"
    "except PermissionError:\n"
    "    print('secret denied')\n"
    "print(sorted(k for k in os.environ if 'SHA256' in k))\n"
    "open('/tmp/x.sh', 'w').write('#!/bin/sh\\necho exec-ok\\n'); os.chmod('/tmp/x.sh', 0o755)\n"
    "print(os.popen('/tmp/x.sh').read().strip())\n"
)

WAIT_LISTENING = (
    "import socket, time\n"
    "for _ in range(400):\n"
    "    try:\n        socket.create_connection(('127.0.0.1', 8000), 0.2).close(); print('listening'); break\n"
    "    except OSError:\n        time.sleep(0.05)\n"
)

DECOY = (
    "import socket\n"
    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('0.0.0.0', 9000)); s.listen()\n"
    "while True:\n    c, _ = s.accept(); c.sendall(b'decoy'); c.close()\n"
)


def probe(address: str, port: int) -> str:
    return (
        "import socket\n"
        "try:\n"
        f"    s = socket.create_connection(({address!r}, {port}), timeout=3); print('reached', s.recv(9))\n"
        "except OSError as e:\n    print('blocked', type(e).__name__)\n"
    )


def wait_listening(host: str, port: int) -> None:
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


async def exercise(s: Session, sid: str, browsers: anyio.CapacityLimiter) -> None:
    """Code, files and a browser in one sandbox: a page it writes, serves and loads."""
    page = f"<!doctype html><html><head><title>{sid}</title></head><body><p>served by {sid}</p></body></html>"
    await s.ok("file_write", {"sandboxId": sid, "path": "site/index.html", "content": page})
    read = await s.ok("file_read", {"sandboxId": sid, "path": "site/index.html"})
    assert read["content"] == page
    ran = await s.ok(
        "code_run", {"sandboxId": sid, "language": "python", "code": "print(open('site/index.html').read())"}
    )
    assert ran["exitCode"] == 0 and ran["stdout"] == page + "\n"
    await s.ok(
        "code_run",
        {
            "sandboxId": sid,
            "language": "bash",
            "code": "python3 -m http.server 8000 --bind 127.0.0.1 --directory site",
            "background": True,
        },
    )
    listening = await s.ok("code_run", {"sandboxId": sid, "language": "python", "code": WAIT_LISTENING})
    assert listening["stdout"] == "listening\n", listening
    async with browsers:
        answer = await s.call("browser_goto", {"sandboxId": sid, "url": "http://127.0.0.1:8000/"})
        assert not answer.is_error, answer.text
        # The page's text as the browser rendered it (goto's title is read with a 1 s cap, and is empty
        # when the machine is this loaded: sandbox_image.browser.tab.TITLE_TIMEOUT_S).
        content = await s.ok("browser_page_content", {"sandboxId": sid})
    assert answer.data["status"] == 200 and answer.data["url"] == "http://127.0.0.1:8000/"
    assert any(f"served by {sid}" in section["text"] for section in content["sections"]), content


async def test_a_fleet_through_mcp_spread_isolated_adopted_and_clean(
    swarm_cluster: SwarmCluster, swarm_namespace: str, tmp_path: Path
) -> None:
    ns = f"{swarm_namespace}-mcp"
    env = swarm_env(
        swarm_cluster,
        ns,
        tmp_path / "state",
        BOXWRIGHT_MAX_SANDBOXES=str(SANDBOXES),
        BOXWRIGHT_MAX_SANDBOXES_PER_OWNER=str(SANDBOXES),
        BOXWRIGHT_MEM_LIMIT="1g",
        BOXWRIGHT_STARTUP_TIMEOUT="120",
    )
    first = HttpServer(env, tmp_path / "first.log", ["--backend", "swarm"])
    second: HttpServer | None = None
    decoy = control = None
    try:
        async with http_session(first.url) as s:
            # A workspace size cannot be enforced on swarm: refused before anything starts, not echoed.
            refused = await s.error("sandbox_create", {"workspaceMb": 64})
            assert refused.data["errorCode"] == "INVALID_PARAMETER" and "workspaceMb" in refused.data["recoverHint"]

            ids: list[str] = []

            async def create() -> None:
                made = await s.ok("sandbox_create", {})
                assert made["workspaceMb"] is None, made
                ids.append(made["sandboxId"])

            async with anyio.create_task_group() as tg:
                for _ in range(SANDBOXES):
                    tg.start_soon(create)
            # One-replica services are spread over the labelled nodes.
            per_node = Counter(node_of(swarm_cluster, sid).name for sid in ids)
            assert set(per_node) == {n.name for n in swarm_cluster.nodes} and min(per_node.values()) >= 3, per_node

            hardening = await s.ok("code_run", {"sandboxId": ids[0], "language": "python", "code": HARDENING})
            # no-new-privileges from the node's daemon, no capabilities, the hashes only in the agent's
            # secret file (not in the environment the runner inherits), exec allowed on /tmp.
            assert hardening["stdout"].splitlines() == [
                "['0000000000000000', '1']",
                "secret denied",
                "[]",
                "exec-ok",
            ], hardening

            browsers = anyio.CapacityLimiter(BROWSERS_AT_ONCE)
            async with anyio.create_task_group() as tg:
                for sid in ids:
                    tg.start_soon(exercise, s, sid, browsers)
            # scrape, in a given sandbox, of the page that sandbox serves.
            scraped = await s.ok("scrape", {"url": "http://127.0.0.1:8000/", "sandboxId": ids[1]})
            assert scraped["status"] == 200 and f"served by {ids[1]}" in scraped["markdown"], scraped

        # A `public` sandbox (the default) cannot reach a decoy on the other node, which an unguarded
        # container next to it does reach.
        target = ids[0]
        here = node_of(swarm_cluster, target)
        there = next(n for n in swarm_cluster.nodes if n is not here)
        decoy = there.docker.containers.run(
            swarm_cluster.image,
            ["python3", "-c", DECOY],
            detach=True,
            user="agent",
            labels={"io.boxwright.namespace": ns},
            ports={"9000/tcp": (there.address, None)},
        )
        decoy.reload()
        port = int(decoy.ports["9000/tcp"][0]["HostPort"])
        wait_listening(there.address, port)
        control = here.docker.containers.run(
            swarm_cluster.image,
            ["python3", "-c", probe(there.address, port)],
            detach=True,
            labels={"io.boxwright.namespace": ns},
        )
        control.wait(timeout=30)
        assert "reached b'decoy'" in control.logs().decode()

        # A paused sandbox: frozen on its node's engine, which is where the next server reads the pause.
        paused = ids[2]
        async with http_session(first.url) as s:
            await s.ok("sandbox_pause", {"sandboxId": paused})
        (frozen,) = node_of(swarm_cluster, paused).docker.containers.list(
            filters={"label": f"{labels.SANDBOX}={paused}"}
        )
        assert frozen.status == "paused"

        # SIGKILL: nothing is removed, and the next server adopts every sandbox from its labels.
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(10)
        first.stop()
        second = HttpServer(env, tmp_path / "second.log", ["--backend", "swarm"])
        async with http_session(second.url) as s:
            listed = await s.ok("sandbox_list")
            assert sorted(x["sandboxId"] for x in listed["sandboxes"]) == sorted(ids), second.log()
            status = {x["sandboxId"]: x["status"] for x in listed["sandboxes"]}
            assert status[paused] == "paused" and Counter(status.values())["running"] == SANDBOXES - 1, status
            frozen.reload()
            assert frozen.status == "paused"
            # Its next call resumes it (the same container: nothing was restarted) and is answered.
            resumed = await s.ok("code_run", {"sandboxId": paused, "language": "bash", "code": "cat site/index.html"})
            assert paused in resumed["stdout"]
            frozen.reload()
            assert frozen.status == "running"
            blocked = await s.ok(
                "code_run", {"sandboxId": target, "language": "python", "code": probe(there.address, port)}
            )
            assert blocked["stdout"].startswith("blocked"), blocked

            async def still_there(sid: str) -> None:
                read = await s.ok("code_run", {"sandboxId": sid, "language": "bash", "code": "cat site/index.html"})
                assert sid in read["stdout"]

            async with anyio.create_task_group() as tg:
                for sid in ids:
                    tg.start_soon(still_there, sid)
            for sid in ids[: SANDBOXES // 2]:  # the rest goes with the server's graceful stop
                assert (await s.ok("sandbox_destroy", {"sandboxId": sid}))["destroyed"] is True
        second.stop()
        assert "adopted sandbox" in second.log() and f"adopted paused sandbox {paused}" in second.log()
        for c in (decoy, control):
            c.remove(force=True)
        decoy = control = None
        assert leftovers(swarm_cluster, ns) == []
    finally:
        for c in (decoy, control):
            if c is not None:
                c.remove(force=True)
        for server in (first, second):
            if server is not None:
                server.stop()
