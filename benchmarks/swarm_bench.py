#!/usr/bin/env python3
"""Swarm backend vs Docker backend on the same machine, side by side (issue 13's facts).

Run by hand, as root, from the repository root (not part of the test suite):

    python benchmarks/swarm_bench.py [-n 5] [--spread 10]

Makes the two-node swarm fixture of tests/swarm/cluster.py (the local engine is only read), then,
interleaved per iteration so drift hits both alike:
- backend start → agent /healthz 200 (the bare path: service/container created, polled at 5 ms);
- SandboxManager.create → ready (+ code runner exec and netguard, what sandbox_create waits for);
- destroy.
The Docker backend runs on the local engine (its sandboxes are published on 127.0.0.1); the swarm
backend on the fixture's nodes (reached at node address : host-mode port). Then `--spread`
sandboxes are created at once through the swarm backend and their nodes counted. Everything runs
in its own namespace and is removed at the end, also after a failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from host.backends.base import SandboxBackend, StartSpec
from host.backends.docker_backend import DockerBackend, docker_client
from host.backends.swarm_backend import SwarmBackend
from host.config import Settings
from host.sandboxes.manager import SandboxManager
from host.sandboxes.models import Caller
from rpc.agent import agent_env
from tests.swarm.cluster import SwarmCluster

CALLER = Caller(owner="bench")


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def bare_start(backend: SandboxBackend, image: str, namespace: str) -> tuple[float, float, str, str | None]:
    """(ms to backend.start returned, ms to /healthz 200, sandbox id, container id)."""
    sid = "sbx_" + secrets.token_hex(6)
    spec = StartSpec(
        sid,
        image,
        {"io.boxwright.sandbox": sid, "io.boxwright.namespace": namespace},
        agent_env(secrets.token_urlsafe(16), secrets.token_urlsafe(16)),
    )
    t0 = time.monotonic()
    info = backend.start(spec)
    started = time.monotonic()
    url = info.agent_url
    while url is None:  # DockerBackend may return before the port is published
        time.sleep(0.005)
        url = (backend.inspect(info.container_id) or info).agent_url
    with httpx.Client(trust_env=False) as http:
        while not _answers(http, f"{url}/healthz"):
            time.sleep(0.005)
    return (started - t0) * 1000, (time.monotonic() - t0) * 1000, sid, info.container_id


def _answers(http: httpx.Client, url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return http.get(url, timeout=1).status_code == 200
    return False


def summary(name: str, samples: list[float]) -> str:
    if not samples:
        return f"{name}: no samples"
    return (
        f"{name:<46} median {statistics.median(samples):7.0f} ms   min {min(samples):7.0f}   "
        f"max {max(samples):7.0f}   (n={len(samples)})"
    )


async def run(n: int, spread: int) -> None:
    image = os.environ.get("BOXWRIGHT_IMAGE", "boxwright-sandbox:latest")
    ns = f"bench-swarm-{secrets.token_hex(3)}"
    state = Path(tempfile.mkdtemp(prefix="bw-swarm-bench-"))
    # No workspace size limit on either side: swarm has none (docs/fleet.md), so like is compared with like.
    settings = Settings(
        namespace=ns,
        image=image,
        state_dir=state,
        max_sandboxes=max(20, spread),
        max_sandboxes_per_owner=max(5, spread),
        workspace_quota="off",
    )
    with SwarmCluster(image, progress=say) as cluster:
        say(f"fixture: {cluster.timings}")
        swarm = SwarmBackend(
            settings.replace(backend="swarm"), manager=cluster.manager.docker, engines=[x.docker for x in cluster.nodes]
        )
        docker_be = DockerBackend(settings, client=docker_client())
        backends: dict[str, SandboxBackend] = {"docker": docker_be, "swarm": swarm}
        managers = {
            k: SandboxManager(settings.model_copy(update={"state_dir": state / k}), b) for k, b in backends.items()
        }
        results: dict[str, list[float]] = {}
        try:
            for m in managers.values():
                await m.start()
            for b in backends.values():  # warm-up, not counted (first network creation etc.)
                _, _, sid, cid = await asyncio.to_thread(bare_start, b, image, ns)
                await asyncio.to_thread(b.remove, sid, cid)
            for i in range(n):
                line = []
                for k, b in backends.items():
                    s_ms, h_ms, sid, cid = await asyncio.to_thread(bare_start, b, image, ns)
                    t = time.monotonic()
                    await asyncio.to_thread(b.remove, sid, cid)
                    r_ms = (time.monotonic() - t) * 1000
                    t = time.monotonic()
                    rec = await managers[k].create(CALLER)
                    c_ms = (time.monotonic() - t) * 1000
                    t = time.monotonic()
                    await managers[k].destroy(CALLER, rec.id)
                    d_ms = (time.monotonic() - t) * 1000
                    for key, v in (
                        ("start returned", s_ms),
                        ("start → /healthz 200", h_ms),
                        ("remove (bare)", r_ms),
                        ("manager create → ready (runner + netguard)", c_ms),
                        ("manager destroy", d_ms),
                    ):
                        results.setdefault(f"{k}: {key}", []).append(v)
                    line.append(f"{k} healthz {h_ms:.0f} ms, create {c_ms:.0f} ms")
                say(f"{i + 1}/{n}: " + " | ".join(line))
            if spread:
                t = time.monotonic()
                recs = await asyncio.gather(*(managers["swarm"].create(CALLER) for _ in range(spread)))
                wall = (time.monotonic() - t) * 1000
                nodes = Counter(cluster.node_by_id(swarm.task(r.container_id or "").node_id).name for r in recs)  # type: ignore[union-attr]
                say(f"spread: {spread} concurrent creates in {wall:.0f} ms, per node {dict(sorted(nodes.items()))}")
                t = time.monotonic()
                await asyncio.gather(*(managers["swarm"].destroy(CALLER, r.id) for r in recs))
                say(f"spread: {spread} concurrent destroys in {(time.monotonic() - t) * 1000:.0f} ms")
        finally:
            for m in managers.values():
                await m.close()
        print()
        for key in sorted(results, key=lambda k: (k.split(": ", 1)[1], k)):
            print(summary(key, results[key]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=5, help="iterations per backend (interleaved)")
    parser.add_argument("--spread", type=int, default=10, help="sandboxes created at once on the swarm (0: skip)")
    args = parser.parse_args()

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)
    asyncio.run(run(args.n, args.spread))
    return 0


if __name__ == "__main__":
    sys.exit(main())
