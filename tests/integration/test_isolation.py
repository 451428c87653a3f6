"""Inside a sandbox: non-root, read-only root, no capabilities, and user code cannot reach what the
agent and the browser hold (token, agent's home); the container is hardened as configured."""

from __future__ import annotations

import docker

from host import labels
from tests.integration.conftest import HttpServer
from tests.integration.mcp_helpers import http_session

PROBE = r"""
import os
status = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines() if ':' in l)
print('uid', os.getuid(), os.geteuid())
for k in ('CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb', 'NoNewPrivs'):
    print(k, status[k].strip())
for path in ('/probe', '/etc/probe', '/opt/boxwright/app/probe', '/usr/probe'):
    try:
        open(path, 'w')
        print('WRITABLE', path)
    except OSError as e:
        print('readonly', path, e.errno)
for path in ('/proc/1/environ', '/home/agent'):
    try:
        (os.listdir if os.path.isdir(path) else lambda p: open(p, 'rb').read())(path)
        print('READABLE', path)
    except OSError as e:
        print('denied', path, e.errno)
print('env has token hash:', any(k.startswith('BOXWRIGHT') for k in os.environ))
print('docker socket:', os.path.exists('/var/run/docker.sock'))
open('/workspace/ok', 'w').write('x'); print('workspace writable')
open('/tmp/ok', 'w').write('x'); print('tmp writable')
"""


async def test_code_runs_unprivileged_in_a_locked_down_container(
    http_server: HttpServer, tokens: dict, docker_client: docker.DockerClient
) -> None:
    async with http_session(http_server.url, tokens["alice"]) as s:
        sid = (await s.ok("sandbox_create"))["sandboxId"]
        try:
            out = (await s.ok("code_run", {"language": "python", "code": PROBE}))["stdout"]
            lines = dict(line.split(" ", 1) for line in out.splitlines())
            assert lines["uid"] == "1001 1001"  # the runner user, not root and not the agent (1000)
            for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
                assert int(lines[cap], 16) == 0, (cap, lines[cap])
            assert lines["NoNewPrivs"] == "1"
            assert "WRITABLE" not in out
            assert "READABLE" not in out, out
            assert "env has token hash: False" in out  # user code gets a clean environment
            assert "docker socket: False" in out
            assert "workspace writable" in out and "tmp writable" in out

            [c] = docker_client.containers.list(filters={"label": f"{labels.SANDBOX}={sid}"})
            host_cfg = c.attrs["HostConfig"]
            assert c.attrs["Config"]["User"] == "agent"
            assert host_cfg["ReadonlyRootfs"] is True
            assert host_cfg["CapDrop"] == ["ALL"] and not host_cfg.get("CapAdd")
            assert "no-new-privileges:true" in host_cfg["SecurityOpt"]
            assert host_cfg["Privileged"] is False
            assert host_cfg["PidsLimit"] and host_cfg["Memory"] and host_cfg["NanoCpus"]
            assert all(b["HostIp"] == "127.0.0.1" for b in c.ports["8080/tcp"])
            assert not any("docker.sock" in (m.get("Source") or "") for m in c.attrs["Mounts"])
            agent = c.exec_run(["sh", "-c", "id -u; ps -o user= -p 1"], user="agent").output.decode().split()
            assert agent[0] == "1000" and agent[1] == "agent"
        finally:
            await s.ok("sandbox_destroy", {"sandboxId": sid})


CONNECT = """
import socket, sys
s = socket.socket(); s.settimeout(2)
try:
    s.connect((sys.argv[1], 8080)); print('reached')
except OSError as e:
    print('blocked', type(e).__name__)
"""


async def test_sandboxes_cannot_reach_each_other(http_server: HttpServer, tokens: dict) -> None:
    """Inter-container traffic is off on the sandbox network: one sandbox cannot reach another's agent
    port even when its own network policy allows that address — so only the bridge's ICC setting can
    be what stops it (the decoy is our own second sandbox)."""
    async with http_session(http_server.url, tokens["alice"]) as s:
        b = (await s.ok("sandbox_create"))["sandboxId"]
        a = None
        try:
            ip = (await s.ok("code_run", {"sandboxId": b, "language": "bash", "code": "hostname -i"}))[
                "stdout"
            ].split()[0]
            a = (await s.ok("sandbox_create", {"network": "allowlist", "allowHosts": [ip]}))["sandboxId"]
            await s.ok("file_write", {"sandboxId": a, "path": "connect.py", "content": CONNECT})

            async def connect(target: str) -> str:
                run = await s.ok(
                    "code_run", {"sandboxId": a, "language": "bash", "code": f"python3 connect.py {target}"}
                )
                return run["stdout"]

            assert (await connect("127.0.0.1")).startswith("reached")  # the probe can tell: its own agent answers
            out = await connect(ip)
            assert out.startswith("blocked"), out
        finally:
            for sid in (a, b):
                if sid:
                    await s.ok("sandbox_destroy", {"sandboxId": sid})


async def test_clients_of_one_owner_never_share_a_default_sandbox(http_server: HttpServer, tokens: dict) -> None:
    # MCP 2026-07-28 over HTTP has no session: two clients of one user look alike to the server. A call
    # without sandboxId must never land in the sandbox the other client made: with one sandbox it is
    # that one; with two the call is refused and names them.
    async with http_session(http_server.url, tokens["alice"]) as a, http_session(http_server.url, tokens["alice"]) as b:
        sa = (await a.ok("sandbox_create"))["sandboxId"]
        sb = None
        try:
            await a.ok("file_write", {"path": "who.txt", "content": "a"})  # alice's only sandbox
            sb = (await b.ok("sandbox_create"))["sandboxId"]
            for client in (a, b):
                err = await client.error("file_write", {"path": "who.txt", "content": "?"})
                assert err.data["errorCode"] == "AMBIGUOUS_SANDBOX"
                assert set(err.data["details"]["sandboxIds"]) == {sa, sb}
                assert "sandboxId" in err.data["recoverHint"]
            await b.ok("file_write", {"path": "who.txt", "content": "b", "sandboxId": sb})
            assert (await a.ok("file_read", {"path": "who.txt", "sandboxId": sa}))["content"] == "a"
            assert (await b.ok("file_read", {"path": "who.txt", "sandboxId": sb}))["content"] == "b"
        finally:
            await a.ok("sandbox_destroy", {"sandboxId": sa})
            if sb:
                await b.ok("sandbox_destroy", {"sandboxId": sb})
