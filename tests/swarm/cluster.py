"""A throw-away two-node Docker Swarm on one machine, for the swarm backend's tests.

Design (docs/fleet-notes.md has the reasoning and the numbers): the machine's own Docker engine is
only *read* (`docker save` of the sandbox image) and never enters swarm mode. Both swarm nodes are
extra `dockerd` processes, each in a network namespace of its own, plugged into a private bridge
that lives in a third namespace ("lan"); the host reaches the lan through one veth pair:

    host netns: <hostveth> 198.18.X.1/24 ──┐
    lan  netns: bridge  ─────────────────────┼── veth ── node netns n1: eth0 198.18.X.11 (manager)
                                             └── veth ── node netns n2: eth0 198.18.X.12 (worker)

198.18.0.0/15 is the benchmarking range (RFC 2544): never routed on the internet, and blocked by
the sandboxes' `public` network mode like any private range. Each dockerd gets its own data-root,
exec-root, pidfile, socket and cgroup parent under one temp dir, `--no-new-privileges` (swarm
cannot set it per service) and a private mount namespace with a fresh /sys (the netns's own view)
and the host's cgroup tree bound back in. Nothing changes in the host's netns except the one veth
end, and iptables rules exist only inside the nodes' namespaces.

Teardown is idempotent and runs from a record written before anything is made (owner.json), so a
run killed half-way is swept by the next one (`sweep_stale`) or by hand:
`python -m tests.swarm.cluster --sweep`.

Needs root, iproute2 (`ip netns`), util-linux (`nsenter`, `unshare`) and the `dockerd` binary.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import itertools
import json
import logging
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import docker
import docker.errors

from host.backends.swarm_images import push_image

log = logging.getLogger(__name__)

PREFIX = "bwsw"  # every name this module makes starts with it (netns, links, cgroups, dirs)
BASE_DIR = Path(os.environ.get("BOXWRIGHT_SWARM_FIXTURE_DIR", "/tmp"))
SANDBOX_NODE_LABEL = "boxwright.sandboxes"
DOCKERD_START_TIMEOUT_S = 30
DATA_TMPFS_SIZE = os.environ.get("BOXWRIGHT_SWARM_NODE_TMPFS", "6g")  # an upper bound, not reserved

UNSHARE = ("unshare", "--mount", "--propagation", "slave", "--uts")

Progress = Callable[[str], None]


class ClusterUnavailable(RuntimeError):
    """This machine cannot host the fixture (not root, no `ip netns`, no dockerd, …)."""


@dataclass
class Node:
    name: str  # n1, n2
    cluster_id: str
    address: str
    root: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    client: docker.DockerClient | None = field(default=None, repr=False)
    node_id: str = ""

    @property
    def netns(self) -> str:
        return f"{PREFIX}-{self.cluster_id}-{self.name}"

    @property
    def hostname(self) -> str:
        return self.netns

    @property
    def cgroup_parent(self) -> str:
        return f"/{self.netns}"

    @property
    def socket(self) -> Path:
        return self.root / "docker.sock"

    @property
    def docker_url(self) -> str:
        return f"unix://{self.socket}"

    @property
    def docker(self) -> docker.DockerClient:
        assert self.client is not None, "node not started"
        return self.client


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(args), capture_output=True, text=True, check=False, timeout=60)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.strip()[:400]}")
    return done


def prerequisites() -> str | None:
    """Why the fixture cannot be made here, or None when it can."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, a second dockerd)"
    for tool in ("ip", "nsenter", "unshare", "dockerd", "mount"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed"
    try:
        docker.from_env(timeout=10).ping()
    except docker.errors.DockerException as exc:
        return f"the local Docker engine (the image's source) does not answer: {exc}"
    probe = f"{PREFIX}-probe-{secrets.token_hex(3)}"
    done = _run("ip", "netns", "add", probe, check=False)
    if done.returncode != 0:
        return f"`ip netns add` fails here: {done.stderr.strip()[:200]}"
    _run("ip", "netns", "del", probe, check=False)
    return None


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 of 198.18.0.0/15 that no address or route of this machine overlaps."""
    used: list[ipaddress.IPv4Network] = []
    out = _run("ip", "-4", "-o", "route", "show", "table", "all").stdout + _run("ip", "-4", "-o", "addr").stdout
    for word in out.split():
        with contextlib.suppress(ValueError):
            net = ipaddress.ip_network(word, strict=False)
            if isinstance(net, ipaddress.IPv4Network) and net.prefixlen > 0:
                used.append(net)
    candidates = list(ipaddress.ip_network("198.18.0.0/15").subnets(new_prefix=24))
    random.shuffle(candidates)
    for net in candidates:
        if not any(net.overlaps(u) for u in used):
            return net
    raise ClusterUnavailable("no free /24 in 198.18.0.0/15")


class SwarmCluster:
    """`with SwarmCluster(image) as cluster:` — two nodes, both labelled for sandboxes, image loaded."""

    def __init__(self, image: str, *, nodes: int = 2, progress: Progress | None = None) -> None:
        self.image = image
        self.id = secrets.token_hex(2)
        self.root = BASE_DIR / f"{PREFIX}-{self.id}"
        self.progress: Progress = progress or (lambda msg: log.info("%s", msg))
        self.subnet: ipaddress.IPv4Network | None = None
        self.nodes: list[Node] = []
        self._node_count = nodes
        self.timings: dict[str, float] = {}

    # -- names -------------------------------------------------------------------------------
    @property
    def lan_netns(self) -> str:
        return f"{PREFIX}-{self.id}-lan"

    @property
    def host_link(self) -> str:
        return f"{PREFIX}{self.id}h"  # ≤ 15 characters (IFNAMSIZ)

    @property
    def host_address(self) -> str:
        assert self.subnet is not None
        return str(self.subnet.network_address + 1)

    @property
    def manager(self) -> Node:
        return self.nodes[0]

    def node_by_id(self, node_id: str) -> Node:
        return next(n for n in self.nodes if n.node_id == node_id)

    # -- life cycle --------------------------------------------------------------------------
    def __enter__(self) -> SwarmCluster:
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.down()

    def up(self) -> None:
        problem = prerequisites()
        if problem:
            raise ClusterUnavailable(problem)
        main = docker.from_env(timeout=120)
        try:
            main.images.get(self.image)
        except docker.errors.ImageNotFound as exc:
            raise ClusterUnavailable(f"image {self.image} is not on the local engine") from exc
        started = time.monotonic()
        self.subnet = _free_subnet()
        self.root.mkdir(mode=0o700)
        self.nodes = [
            Node(f"n{i + 1}", self.id, str(self.subnet.network_address + 11 + i), self.root / f"n{i + 1}")
            for i in range(self._node_count)
        ]
        self._write_record()
        self.progress(f"swarm fixture {self.id}: network {self.subnet} (lan netns {self.lan_netns})")
        self._make_lan()
        for node in self.nodes:
            self._make_node_netns(node)
            self._start_dockerd(node)
        for node in self.nodes:
            self._wait_dockerd(node)
        self.timings["engines_s"] = time.monotonic() - started
        t = time.monotonic()
        self._make_swarm()
        self.timings["swarm_s"] = time.monotonic() - t
        t = time.monotonic()
        self._load_image(main)
        self.timings["image_s"] = time.monotonic() - t
        self.timings["up_s"] = time.monotonic() - started
        self.progress(
            "swarm fixture ready in {up_s:.1f}s (engines {engines_s:.1f}s, swarm {swarm_s:.1f}s, "
            "image {image_s:.1f}s)".format(**self.timings)
        )

    def down(self) -> None:
        """Stop both engines and remove every trace; safe to call more than once, or after a partial up."""
        t = time.monotonic()
        try:
            teardown(self.root, self.id, [n.name for n in self.nodes] or _node_names(self.root), self.host_link)
        finally:
            for node in self.nodes:
                if node.client is not None:
                    node.client.close()
                if node.proc is not None:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        node.proc.wait(timeout=5)  # reap
        self.timings["down_s"] = time.monotonic() - t
        self.progress(f"swarm fixture {self.id} removed in {self.timings['down_s']:.1f}s")

    # -- steps -------------------------------------------------------------------------------
    def _write_record(self) -> None:
        record = {"pid": os.getpid(), "id": self.id, "nodes": [n.name for n in self.nodes], "link": self.host_link}
        (self.root / "owner.json").write_text(json.dumps(record))

    def _make_lan(self) -> None:
        ns = self.lan_netns
        _run("ip", "netns", "add", ns)
        _run("ip", "-n", ns, "link", "set", "lo", "up")
        _run("ip", "-n", ns, "link", "add", "br0", "type", "bridge")
        _run("ip", "-n", ns, "link", "set", "br0", "up")
        _run("ip", "link", "add", self.host_link, "type", "veth", "peer", "name", "uplink", "netns", ns)
        _run("ip", "-n", ns, "link", "set", "uplink", "master", "br0", "up")
        _run("ip", "addr", "add", f"{self.host_address}/24", "dev", self.host_link)
        _run("ip", "link", "set", self.host_link, "up")

    def _make_node_netns(self, node: Node) -> None:
        ns = node.netns
        _run("ip", "netns", "add", ns)
        _run("ip", "-n", ns, "link", "set", "lo", "up")
        _run("ip", "-n", self.lan_netns, "link", "add", node.name, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _run("ip", "-n", self.lan_netns, "link", "set", node.name, "master", "br0", "up")
        _run("ip", "-n", ns, "addr", "add", f"{node.address}/24", "dev", "eth0")
        _run("ip", "-n", ns, "link", "set", "eth0", "up")  # no default route: the lan is all a node reaches

    def _start_dockerd(self, node: Node) -> None:
        for sub in ("data", "exec", "cgroup"):
            (node.root / sub).mkdir(parents=True)
        # A fresh sysfs shows the netns's own interfaces (dockerd reads /sys/class/net); it hides the
        # cgroup mounts, so the host's cgroup tree is bound aside first and moved back on top.
        script = "\n".join(
            [
                "set -e",
                f"mount --rbind /sys/fs/cgroup {node.root}/cgroup",
                "mount -t sysfs sysfs /sys",
                f"mount --move {node.root}/cgroup /sys/fs/cgroup",
                # Engine state in memory, in this mount namespace only: it vanishes with the engine's
                # last process (deleting 1 GB of layers from a disk mounted with `discard` takes ~20 s).
                f"mount -t tmpfs -o size={DATA_TMPFS_SIZE},mode=0700 tmpfs {node.root}/data",
                f"hostname {node.hostname}",
                f"exec dockerd --data-root {node.root}/data --exec-root {node.root}/exec"
                f" --pidfile {node.root}/docker.pid -H {node.docker_url} --cgroup-parent {node.cgroup_parent}"
                " --no-new-privileges --log-level warn",
            ]
        )
        (node.root / "launch.sh").write_text(script + "\n")
        with (node.root / "dockerd.log").open("wb") as logf:
            node.proc = subprocess.Popen(
                ["nsenter", f"--net=/run/netns/{node.netns}", *UNSHARE, "sh", str(node.root / "launch.sh")],
                stdout=logf,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C reaches pytest, which tears down in order
            )

    def _wait_dockerd(self, node: Node) -> None:
        deadline = time.monotonic() + DOCKERD_START_TIMEOUT_S
        assert node.proc is not None
        while time.monotonic() < deadline:
            if node.proc.poll() is not None:
                break
            if node.socket.exists():
                with contextlib.suppress(docker.errors.DockerException):
                    client = docker.DockerClient(base_url=node.docker_url, timeout=120)
                    client.ping()
                    node.client = client
                    return
            time.sleep(0.1)
        tail = (node.root / "dockerd.log").read_text(errors="replace")[-1500:]
        raise RuntimeError(f"dockerd of node {node.name} did not start:\n{tail}")

    def _make_swarm(self) -> None:
        mgr = self.manager
        mgr.docker.swarm.init(advertise_addr=mgr.address, listen_addr=f"{mgr.address}:2377")
        token = mgr.docker.swarm.attrs["JoinTokens"]["Worker"]
        for node in self.nodes[1:]:
            node.docker.swarm.join(
                remote_addrs=[f"{mgr.address}:2377"],
                join_token=token,
                listen_addr=f"{node.address}:2377",
                advertise_addr=node.address,
            )
        for node in self.nodes:
            node.node_id = node.docker.info()["Swarm"]["NodeID"]
        for node in self.nodes:
            swarm_node = mgr.docker.nodes.get(node.node_id)
            spec = swarm_node.attrs["Spec"]
            spec.setdefault("Labels", {})[SANDBOX_NODE_LABEL] = "true"
            swarm_node.update(spec)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            states = [n.attrs["Status"]["State"] for n in mgr.docker.nodes.list()]
            if len(states) == len(self.nodes) and all(s == "ready" for s in states):
                return
            time.sleep(0.1)
        raise RuntimeError(f"swarm nodes not ready: {states}")

    def _load_image(self, main: docker.DockerClient) -> None:
        push_image(main, {n.name: n.docker for n in self.nodes}, self.image, self.progress)


# -- teardown (module level: also used by the sweep of earlier runs) --------------------------
def _node_names(root: Path) -> list[str]:
    with contextlib.suppress(OSError, ValueError):
        return list(json.loads((root / "owner.json").read_text())["nodes"])
    return sorted(p.name for p in root.glob("n[0-9]*")) if root.exists() else []


def _alive(pid: int) -> bool:
    """Running (a zombie counts as gone: its parent may be this process, which reaps it later)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _netns_pids(netns: str) -> list[int]:
    done = _run("ip", "netns", "pids", netns, check=False)
    return [int(p) for p in done.stdout.split() if p.isdigit()]


def _shim_sockets(pids: list[int]) -> list[Path]:
    """The sockets of the containerd shims among `pids`; a killed shim leaves its socket behind in the
    host's /run/containerd/s, at sha256(<containerd address>/<namespace>/<container id>) (containerd's
    runtime/v2/shim SocketAddress), all three on the shim's command line."""
    found = []
    for pid in pids:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if not argv or not argv[0].endswith(("containerd-shim-runc-v2", "containerd-shim")):
            continue
        opts = dict(itertools.pairwise(argv))
        if {"-namespace", "-id", "-address"} <= opts.keys():
            key = f"{opts['-address']}/{opts['-namespace']}/{opts['-id']}"
            found.append(Path("/run/containerd/s") / hashlib.sha256(key.encode()).hexdigest())
    return found


def _cgroup_dirs(name: str) -> list[Path]:
    """This node's cgroup parent in every mounted hierarchy (v1 controllers or the v2 tree)."""
    base = Path("/sys/fs/cgroup")
    found = [base / name] if (base / name).is_dir() else []
    found += [p for p in base.glob(f"*/{name}") if p.is_dir()]
    return found


def _kill_cgroup(name: str) -> None:
    for top in _cgroup_dirs(name):
        for procs in top.rglob("cgroup.procs"):
            with contextlib.suppress(OSError):
                for pid in procs.read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)


def _remove_cgroup(name: str) -> None:
    for _ in range(50):
        dirs = _cgroup_dirs(name)
        if not dirs:
            return
        for top in dirs:
            for d in [*sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)), top]:
                with contextlib.suppress(OSError):
                    d.rmdir()
        time.sleep(0.1)
    log.warning("cgroup %s could not be removed", name)


def teardown(root: Path, cluster_id: str, node_names: list[str], host_link: str) -> None:
    """Kill the nodes' engines and everything they started, then delete namespaces, links, cgroups
    and files. Every step tolerates what is already gone.

    SIGKILL, not a graceful stop: all state is thrown away, the engines' mounts live in their own
    mount namespaces (gone with their last process) and their iptables rules in their own network
    namespaces; a graceful stop of a swarm node costs ~8 s for nothing.
    """
    t0 = time.monotonic()
    shims = [sock for name in node_names for sock in _shim_sockets(_netns_pids(f"{PREFIX}-{cluster_id}-{name}"))]
    for name in node_names:
        netns = f"{PREFIX}-{cluster_id}-{name}"
        for _ in range(50):
            pids = _netns_pids(netns)  # dockerd, containerd, shims (containers have their own netns)
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            _kill_cgroup(netns)  # the containers' processes
            if not pids:
                break
            time.sleep(0.05)
    t1 = time.monotonic()
    for shim in shims:  # a killed shim leaves its socket in the host's /run/containerd/s
        with contextlib.suppress(FileNotFoundError):
            shim.unlink()
    for name in node_names:
        netns = f"{PREFIX}-{cluster_id}-{name}"
        _remove_cgroup(netns)
        _run("ip", "netns", "del", netns, check=False)
    t2 = time.monotonic()
    _run("ip", "link", "del", host_link, check=False)  # its peer and the bridge go with the lan netns
    _run("ip", "netns", "del", f"{PREFIX}-{cluster_id}-lan", check=False)
    if root.exists():
        shutil.rmtree(root, ignore_errors=True)
        if root.exists():
            log.warning("could not remove %s entirely (mounts left?)", root)
    log.debug("teardown: kill %.1fs, cgroups+netns %.1fs, files %.1fs", t1 - t0, t2 - t1, time.monotonic() - t2)


def sweep_stale(progress: Progress | None = None) -> int:
    """Tear down fixtures whose owning process is gone (a run killed before its teardown)."""
    swept = 0
    for root in BASE_DIR.glob(f"{PREFIX}-*"):
        try:
            record = json.loads((root / "owner.json").read_text())
        except (OSError, ValueError):
            continue
        if _alive(int(record["pid"])):
            continue
        if progress:
            progress(f"sweeping swarm fixture {record['id']} left by dead pid {record['pid']}")
        teardown(root, record["id"], list(record["nodes"]), record["link"])
        swept += 1
    return swept


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if argv == ["--sweep"]:
        print(f"swept {sweep_stale(print)} fixture(s)")
        return 0
    if len(argv) == 2 and argv[0] == "--up":  # for trying things by hand; Ctrl-C or SIGTERM tears down
        for sig in (signal.SIGINT, signal.SIGTERM):  # also when started in the background (SIGINT ignored)
            signal.signal(sig, _interrupt)
        with SwarmCluster(argv[1], progress=print) as cluster:
            for n in cluster.nodes:
                print(f"{n.name}: DOCKER_HOST={n.docker_url} address={n.address} node={n.node_id}")
            with contextlib.suppress(KeyboardInterrupt):
                signal.pause()
        return 0
    print("usage: python -m tests.swarm.cluster --sweep | --up IMAGE", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
