"""Network modes, enforced outside the sandbox's reach.

The forbidden target is a decoy of our own: a TCP server this test runs on the host, bound to the
sandbox network's gateway address — i.e. "a service on the Docker host", which `public` mode must
keep out of reach. An allowlist naming that address is the positive control: the same probe from
a sandbox that is allowed to go there gets through, so the blocked answers are the policy's doing.
No test traffic goes anywhere else.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading

import docker
import pytest

from host import labels, netinfo
from tests.integration.conftest import INTERNAL_ALLOWED, HttpServer
from tests.integration.mcp_helpers import Session, http_session

PROBE = """
import socket
s = socket.socket(); s.settimeout(3)
try:
    s.connect(({host!r}, {port})); print('reached', s.recv(16).decode())
except OSError as e:
    print('blocked', type(e).__name__, e.errno)
"""
# The embedded DNS answers a container's own name itself (nothing is forwarded upstream).
RESOLVE_SELF = """
import socket
try:
    print('resolved', socket.gethostbyname({name!r}))
except OSError as e:
    print('no-dns', type(e).__name__)
"""


class Decoy:
    """A one-line TCP service on a host address; counts the connections it accepted."""

    def __init__(self, host: str) -> None:
        self.sock = socket.create_server((host, 0))
        self.host, self.port = host, self.sock.getsockname()[1]
        self.accepted = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.sock.accept()
                self.accepted += 1
                with conn:
                    conn.sendall(b"decoy")

    def close(self) -> None:
        self.sock.close()


def gateway_of(docker_client: docker.DockerClient, namespace: str) -> str:
    """The sandbox network's gateway: an address of the Docker host (the network exists while a sandbox does)."""
    [net] = docker_client.networks.list(names=[f"boxwright-{namespace}"])
    net.reload()
    return net.attrs["IPAM"]["Config"][0]["Gateway"]


async def create(s: Session, **args: object) -> str:
    data = await s.ok("sandbox_create", dict(args))
    assert data["network"] == args.get("network", "public"), data
    return data["sandboxId"]


async def probe(s: Session, sid: str, host: str, port: int) -> str:
    code = PROBE.format(host=host, port=port)
    return (await s.ok("code_run", {"sandboxId": sid, "language": "python", "code": code}))["stdout"].strip()


def guard_rules(docker_client: docker.DockerClient, image: str, sid: str) -> str:
    """The filter rules in the sandbox's namespace, read from outside (root + NET_ADMIN)."""
    [c] = docker_client.containers.list(filters={"label": f"{labels.SANDBOX}={sid}"})
    out = docker_client.containers.run(
        image,
        ["iptables", "-S", "OUTPUT"],
        user="root",
        network_mode=f"container:{c.id}",
        cap_drop=["ALL"],
        cap_add=["NET_ADMIN"],
        remove=True,
        labels={labels.NAMESPACE: c.labels[labels.NAMESPACE]},
    )
    return out.decode()


async def test_public_mode_blocks_the_host_and_private_ranges(
    http_server: HttpServer, tokens: dict, docker_client: docker.DockerClient, image: str, namespace: str
) -> None:
    async with http_session(http_server.url, tokens["alice"]) as s:
        public = await create(s)
        allowed = None
        decoy = None
        try:
            gw = gateway_of(docker_client, namespace)
            decoy = Decoy(gw)
            allowed = await create(s, network="allowlist", allowHosts=[gw])

            # Positive control: allowed to go there, it gets there.
            assert (await probe(s, allowed, gw, decoy.port)) == "reached decoy"
            assert decoy.accepted == 1
            # Public mode: the host's address is refused at once, nothing arrives.
            out = await probe(s, public, gw, decoy.port)
            assert out.startswith("blocked"), out
            assert decoy.accepted == 1

            # The browser shares the namespace: same answer, as a clear navigation error.
            err = await s.error("browser_goto", {"sandboxId": public, "url": f"http://{gw}:{decoy.port}/"})
            assert err.code == "NAVIGATION_FAILED", err.data
            assert decoy.accepted == 1
            # Loopback stays open: a server inside the sandbox is reachable from its own browser and code.
            await s.ok(
                "code_run",
                {"sandboxId": public, "language": "bash", "code": "python3 -m http.server 8000", "background": True},
            )
            page = await s.ok("code_run", {"sandboxId": public, "language": "python", "code": WAIT_LOCAL})
            assert page["stdout"].strip() == "local ok", page

            # Cloud metadata, private ranges and the host's addresses are in the rules (read from
            # outside: no test traffic goes to them). The sandbox cannot change them.
            tried = await s.ok("code_run", {"sandboxId": public, "language": "bash", "code": "iptables -F 2>&1; true"})
            assert tried["exitCode"] == 0
            rules = guard_rules(docker_client, image, public)
            for net_ in ("169.254.0.0/16", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", f"{gw}/32"):
                assert f"-d {net_} -j REJECT" in rules, (net_, rules)
            # ...and so are the host's LAN neighbours: every subnet attached to its interfaces.
            attached = [n for n in netinfo.attached_networks() if ":" not in n]
            assert attached
            for net_ in attached:
                assert f"-d {net_} -j REJECT" in rules, (net_, rules)
        finally:
            if decoy:
                decoy.close()
            for sid in (public, allowed):
                if sid:
                    await s.ok("sandbox_destroy", {"sandboxId": sid})


WAIT_LOCAL = """
import time, urllib.request
for _ in range(100):
    try:
        urllib.request.urlopen('http://127.0.0.1:8000/', timeout=1).read(); print('local ok'); break
    except OSError:
        time.sleep(0.05)
"""


async def test_none_mode_has_no_network_not_even_dns(
    http_server: HttpServer, tokens: dict, docker_client: docker.DockerClient, namespace: str
) -> None:
    async with http_session(http_server.url, tokens["alice"]) as s:
        offline = await create(s, network="none")
        public = await create(s)
        decoy = None
        try:
            decoy = Decoy(gateway_of(docker_client, namespace))
            [container] = docker_client.containers.list(filters={"label": f"{labels.SANDBOX}={offline}"})
            own_name = container.name
            resolve = {"language": "python", "code": RESOLVE_SELF.format(name=own_name)}
            # Positive control: with network, the embedded DNS answers the container's name.
            assert (await s.ok("code_run", {"sandboxId": public, **resolve}))["stdout"].startswith("resolved")
            assert (await s.ok("code_run", {"sandboxId": offline, **resolve}))["stdout"].startswith("no-dns")
            out = await probe(s, offline, decoy.host, decoy.port)
            assert out.startswith("blocked") and decoy.accepted == 0, out
            # The sandbox itself still works: the host talks to its agent, code and files run.
            await s.ok("file_write", {"sandboxId": offline, "path": "a.txt", "content": "x"})
            assert (await s.ok("file_read", {"sandboxId": offline, "path": "a.txt"}))["content"] == "x"
            listed = {b["sandboxId"]: b for b in (await s.ok("sandbox_list"))["sandboxes"]}
            assert listed[offline]["network"] == "none" and listed[public]["network"] == "public"
        finally:
            if decoy:
                decoy.close()
            for sid in (offline, public):
                await s.ok("sandbox_destroy", {"sandboxId": sid})


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"network": "allowlist"}, "(arguments)"),
        ({"network": "public", "allowHosts": ["example.org"]}, "(arguments)"),
        ({"network": "allowlist", "allowHosts": ["https://example.org/"]}, "allowHosts"),
        ({"network": "everything"}, "network"),
        ({"allowHosts": "example.org"}, "allowHosts"),
    ],
)
async def test_bad_network_arguments(http_server: HttpServer, tokens: dict, args: dict, field: str) -> None:
    async with http_session(http_server.url, tokens["alice"]) as s:
        before = len((await s.ok("sandbox_list"))["sandboxes"])
        err = await s.error("sandbox_create", args)
        assert err.code == "INVALID_PARAMETER", err.data
        fields = [e.get("field", "") for e in err.data["details"]["errors"]]
        assert any(f.startswith(field) for f in fields), err.data
        assert len((await s.ok("sandbox_list"))["sandboxes"]) == before  # nothing was started


def _host_entries() -> list[str]:
    """This host's own addresses and LAN subnets that the test server's permit does not cover."""
    permits = [ipaddress.ip_network(p) for p in INTERNAL_ALLOWED.split(",")]
    found = []
    for entry in [*netinfo.local_addresses(), *netinfo.attached_networks()]:
        net = ipaddress.ip_network(entry, strict=False)
        if ":" not in entry and not any(net.version == p.version and net.subnet_of(p) for p in permits):
            found.append(entry)
    return found[:2]


@pytest.mark.parametrize(
    "entry",
    ["169.254.169.254", "0.0.0.0/0", "::/0", "10.0.0.0/8", "100.64.0.1", "127.0.0.1", "fd00::1", "localhost",
     *_host_entries()],
)  # fmt: skip
async def test_an_allowlist_cannot_reach_internal_addresses_without_the_operator(
    http_server: HttpServer, tokens: dict, docker_client: docker.DockerClient, namespace: str, entry: str
) -> None:
    """Cloud metadata, private and CGNAT ranges, loopback, the host's own addresses and LAN, and anything
    covering them (0.0.0.0/0): refused for a caller unless the operator permits them — `localhost` too,
    once netguard resolved it. Nothing is left running."""
    async with http_session(http_server.url, tokens["bob"]) as s:
        before = len((await s.ok("sandbox_list"))["sandboxes"])
        # A public entry beside it does not help (a documentation address: nothing is sent to it, nothing resolved).
        err = await s.error("sandbox_create", {"network": "allowlist", "allowHosts": ["203.0.113.7", entry]})
        assert err.code == "INVALID_PARAMETER", err.text
        assert "BOXWRIGHT_INTERNAL_ALLOW_HOSTS" in err.data["recoverHint"]
        assert len((await s.ok("sandbox_list"))["sandboxes"]) == before
    owners = [c.labels.get(labels.OWNER) for c in docker_client.containers.list(
        all=True, filters={"label": f"{labels.NAMESPACE}={namespace}"})]  # fmt: skip
    assert "bob" not in owners
