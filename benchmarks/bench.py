#!/usr/bin/env python3
"""Boxwright benchmarks: every Boxwright figure next to a bare-Docker baseline, in one run.

Run by hand (not part of the test suite), against the local Docker engine and the built image:

    python benchmarks/bench.py [--iterations N] [--only NAME[,NAME…]] [--json out.json] [--list]
    python benchmarks/bench.py -n sandbox_start=30 -n memory=5      # per-benchmark iterations

Why side by side: an absolute "sandbox_create takes 1.7 s" says little; "a bare `docker run` of
the same image with the same hardening flags answers /healthz after 0.9 s" says where the rest
goes. Each benchmark therefore times the product path (the real MCP SDK client talking to
`boxwright serve` over stdio) and the thinnest Docker path that achieves the same thing.

Everything runs in a dedicated namespace (`bench-<random>`) with its own state dir, so other
sandboxes on the engine are never touched; every container, volume and network labelled with that
namespace is removed at the end, also after a failure or Ctrl-C.

Adding a benchmark: write `async def bench_x(h: Harness, n: int) -> list[Series]`, decorate it
with `@benchmark("name", "title", default_n=…)`; raise `Skipped("why")` when it cannot run here.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import docker
import docker.errors
import httpx
from docker.models.containers import Container
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from host import labels
from host.agent_client import AgentClient, AgentEndpoint
from host.backends.base import StartSpec
from host.backends.docker_backend import DockerBackend, volume_name
from host.backends.hardening import AGENT_PORT_SPEC
from host.config import Settings
from host.image.builder import ensure_image
from host.mcp.results import error_body
from rpc import methods
from rpc.agent import AGENT_PORT, agent_env
from rpc.deadline import Deadline
from rpc.models.code import CodeRunParams
from rpc.models.files import FileReadParams, FileWriteParams

PASS_THROUGH_ENV = frozenset(
    {"BOXWRIGHT_IMAGE", "BOXWRIGHT_MEM_LIMIT", "BOXWRIGHT_CPUS", "BOXWRIGHT_PIDS_LIMIT", "BOXWRIGHT_STARTUP_TIMEOUT"}
)
BENCH_LABEL = labels.PREFIX + "bench"  # run id, on everything the baselines create
CALL_TIMEOUT_S = 180.0  # backstop for one MCP call; the server bounds its own work well below
READY_TIMEOUT_S = 60.0
FINE_POLL_S = 0.005  # the baselines' readiness polling: as tight as is reasonable
SETTLE_S = 3.0  # idle time before reading memory, so start-up transients are gone
MiB = 1024 * 1024
FILE_SIZES = {"1 KiB": 1024, "1 MiB": MiB}
DENSITY_K = 4  # sandboxes measured together by `density`
CODE = "print(1)"
SYSTEM_PYTHON = "/usr/bin/python3"  # what code_run uses (not the agent's venv python)
PAGE_PORT = 8000
SETTLE_S = 0.5  # pool_create: the pause before each timed start, for the background work of the last to end
PAGE_BLOCK = 10  # browser_page: rounds per block before switching between MCP and bare Playwright
PAGE_HTML = """<!doctype html>
<html><head><title>Boxwright bench page</title></head>
<body><header><nav><a href="/">Home</a> <a href="/about">About</a></nav></header>
<main><h1>Benchmark page</h1><p>A small local page served from inside the sandbox.</p>
<form><label>Query <input name="q"></label> <button type="submit">Search</button></form>
<ul><li>one</li><li>two</li><li>three</li></ul></main></body></html>
"""

AGENT_PYTHON = "/opt/boxwright/venv/bin/python"  # the agent's venv, where Playwright lives
# The baseline for the browser rows: Playwright driven directly inside a bare container of the same
# image, with the agent's launch arguments, no agent, no RPC, no MCP. Prints one JSON object.
BARE_PLAYWRIGHT = """
import asyncio, functools, http.server, json, os, sys, tempfile, threading, time
from playwright.async_api import async_playwright
from sandbox_image.browser.launch import LAUNCH_ARGS, VIEWPORT
import os
from sandbox_image.config import DEFAULT_CHROMIUM
CHROMIUM = os.environ.get("BOXWRIGHT_CHROMIUM", DEFAULT_CHROMIUM)  # the image's: the one the agent drives

mode, n, port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ms = lambda t: (time.perf_counter() - t) * 1000

async def cold(out):
    for _ in range(n):
        t = time.perf_counter()
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=list(LAUNCH_ARGS))
            page = await (await browser.new_context(viewport=VIEWPORT)).new_page()
            await page.goto("about:blank")
            out["first"].append(ms(t))
            t = time.perf_counter()
            await page.goto("about:blank")
            out["second"].append(ms(t))
            await browser.close()

async def page(out):
    root = tempfile.mkdtemp()
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write(os.environ["PAGE_HTML"])
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(Quiet, directory=root))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=list(LAUNCH_ARGS))
        tab = await (await browser.new_context(viewport=VIEWPORT)).new_page()
        for i in range(n + 1):
            t = time.perf_counter()
            await tab.goto(f"http://127.0.0.1:{port}/", wait_until="load")
            g = ms(t)
            t = time.perf_counter()
            tree = await tab.locator("body").aria_snapshot()
            text = await tab.inner_text("body")
            s = ms(t)
            assert "Benchmark page" in text and tree
            if i:
                out["goto"].append(g)
                out["snapshot"].append(s)
        await browser.close()

out = {"first": [], "second": [], "goto": [], "snapshot": []}
asyncio.run(cold(out) if mode == "cold" else page(out))
print(json.dumps(out))
"""


BATCH_PAGES = 50
BATCH_PORT = PAGE_PORT + 2
BATCH_CONCURRENCY = (1, 3, 5)
# The batch benchmark's pages: 50 small articles (headings, paragraphs, links, a form), made and served
# by the same code in the sandbox and in the bare container: a quiet ThreadingHTTPServer (no log line per
# request on either side), so the page server weighs the same on both rows.
MAKE_PAGES = """
import os
def make_pages(root, n):
    os.makedirs(root, exist_ok=True)
    for i in range(n):
        paras = "".join(
            f"<p>Paragraph {j} of article {i}: the quick brown fox jumps over the lazy dog, "
            f"item {i * 10 + j} costs ${i}.{j:02d} and ships in {j + 1} days.</p>" for j in range(12)
        )
        links = "".join(f'<li><a href="/page{(i + k) % n}.html">Related {k}</a></li>' for k in range(1, 9))
        html = (
            f"<!doctype html><html><head><title>Article {i}</title></head><body>"
            '<header><nav><a href="/">Home</a> <a href="/about">About</a></nav></header>'
            f"<main><h1>Article {i}</h1><h2>Summary</h2>{paras}<h2>Related</h2><ul>{links}</ul>"
            '<form><label>Email <input name="email"></label> <button type="submit">Subscribe</button></form>'
            "</main><footer>Footer</footer></body></html>"
        )
        with open(os.path.join(root, f"page{i}.html"), "w") as f:
            f.write(html)

def serve_pages(root, port):
    import functools, http.server
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass
    handler = functools.partial(Quiet, directory=root)
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
"""
# The baseline of the batch rows: the plain sequential loop a person would write with Playwright,
# in a bare container of the same image — per page: new tab, goto, title, accessibility snapshot and
# main text, close the tab. Prints the wall time of each pass over all the pages (ms).
BARE_BATCH = (
    MAKE_PAGES
    + """
import asyncio, json, sys, tempfile, threading, time
from playwright.async_api import async_playwright
from sandbox_image.browser.launch import LAUNCH_ARGS, VIEWPORT
import os
from sandbox_image.config import DEFAULT_CHROMIUM
CHROMIUM = os.environ.get("BOXWRIGHT_CHROMIUM", DEFAULT_CHROMIUM)  # the image's: the one the agent drives

passes, n, port = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
root = tempfile.mkdtemp()
make_pages(root, n)
server = serve_pages(root, port)
threading.Thread(target=server.serve_forever, daemon=True).start()

async def main():
    out = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=list(LAUNCH_ARGS))
        context = await browser.new_context(viewport=VIEWPORT)
        for p in range(passes + 1):
            t = time.perf_counter()
            for i in range(n):
                tab = await context.new_page()
                await tab.goto(f"http://127.0.0.1:{port}/page{i}.html", wait_until="load")
                title = await tab.title()
                tree = await tab.locator("body").aria_snapshot()
                text = await tab.inner_text("main")
                assert title == f"Article {i}" and tree and "Paragraph 11" in text
                await tab.close()
            if p:  # the first pass warms the browser up: not counted
                out.append((time.perf_counter() - t) * 1000)
        await browser.close()
    print(json.dumps(out))

asyncio.run(main())
"""
)


def progress(msg: str) -> None:
    """Progress goes to stderr so stdout stays the Markdown table (pipe-able)."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- results ---------------------------------------------------------------------------------
@dataclass
class Series:
    """The samples of one (benchmark, variant) row of the table."""

    benchmark: str
    variant: str
    unit: str  # "ms" or "MiB"
    samples: list[float] = field(default_factory=list)
    note: str = ""

    @classmethod
    def group(cls, benchmark: str, unit: str, *variants: str) -> list[Series]:
        """One series per variant, for the rows a benchmark measures side by side."""
        return [cls(benchmark, variant, unit) for variant in variants]

    def add(self, value: float) -> float:
        self.samples.append(value)
        return value

    def stats(self) -> dict[str, float]:
        s = sorted(self.samples)
        if not s:
            return {}
        return {"p50": percentile(s, 0.50), "p95": percentile(s, 0.95), "min": s[0], "max": s[-1]}


async def warm_up(sync: Callable[[], object], *calls: Callable[[], Awaitable[object]], rounds: int = 2) -> None:
    """Untimed rounds before measuring: connections, page cache, first-call imports."""
    for _ in range(rounds):
        sync()
        for call in calls:
            await call()


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), so small n stays honest."""
    k = (len(sorted_values) - 1) * q
    lo = math.floor(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


class Skipped(Exception):
    """The benchmark cannot run on this server or machine; the message says why."""


class BenchError(Exception):
    """A step of a benchmark failed (a tool answered isError, a container did not come up…)."""


class ToolCallError(BenchError):
    """A tool answered isError; `code` is its errorCode (e.g. METHOD_NOT_FOUND)."""

    def __init__(self, tool: str, code: str, message: str) -> None:
        super().__init__(f"{tool}: {code}: {message}")
        self.code = code


# -- registry --------------------------------------------------------------------------------
BenchFn = Callable[["Harness", int], Awaitable[list[Series]]]


@dataclass(frozen=True)
class BenchSpec:
    name: str
    title: str
    default_n: int
    fn: BenchFn


REGISTRY: dict[str, BenchSpec] = {}


def benchmark(name: str, title: str, *, default_n: int) -> Callable[[BenchFn], BenchFn]:
    """Register a benchmark; the table lists them in registration order."""

    def register(fn: BenchFn) -> BenchFn:
        REGISTRY[name] = BenchSpec(name, title, default_n, fn)
        return fn

    return register


# -- the harness: one MCP server, one docker client, shared fixtures -----------------------------
@dataclass
class BareSandbox:
    """A container started exactly as a sandbox is, but by us: we know its token."""

    sandbox_id: str
    container: Container
    url: str
    token: str
    marks: dict[str, float] = field(default_factory=dict)  # checkpoint -> ms since `docker run` began

    @property
    def endpoint(self) -> AgentEndpoint:
        return AgentEndpoint(self.url, self.token)


class Harness:
    """What benchmarks share: settings, the docker client, the MCP session, lazily made sandboxes."""

    def __init__(self, run_id: str, workdir: Path) -> None:
        self.run_id = run_id
        self.namespace = f"bench-{run_id}"
        self.workdir = workdir
        self.server_log = workdir / "server.log"
        # The same settings the server will read (image, limits) — only namespace and state differ.
        self.settings = Settings.load(namespace=self.namespace, state_dir=workdir / "state")
        self.docker = docker.from_env(timeout=120)
        self.backend = DockerBackend(self.settings, self.docker)
        self.agent = AgentClient()
        self.http = httpx.Client(trust_env=False, timeout=2.0)
        self.mcp: Client | None = None
        self.tools: set[str] = set()
        self.server_pid: int | None = None
        self.server_start_ms: float | None = None
        self._shared: tuple[str, Container] | None = None
        self._bare: BareSandbox | None = None
        self._serial = 0

    # -- MCP session ---------------------------------------------------------------------
    def server_command(self) -> list[str]:
        script = Path(sys.executable).with_name("boxwright")
        return [str(script), "serve"] if script.exists() else [sys.executable, "-m", "host.cli", "serve"]

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        """`boxwright serve` over stdio through the real SDK client; its stderr goes to server.log."""
        cmd = self.server_command()
        # Of the BOXWRIGHT_* knobs only those shaping the container pass (the baselines read the
        # same ones); toolsets, TTLs, idle timeouts or keep-on-exit from the caller's shell could
        # hide tools, reap the shared sandbox mid-run or leave sandboxes behind.
        env = {k: v for k, v in os.environ.items() if not k.startswith("BOXWRIGHT_") or k in PASS_THROUGH_ENV}
        env.update(
            BOXWRIGHT_NAMESPACE=self.namespace,
            BOXWRIGHT_STATE_DIR=str(self.settings.state_dir),
            BOXWRIGHT_IMAGE=self.settings.image,
        )
        params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=env)
        with self.server_log.open("w") as errlog:
            started = time.perf_counter()
            async with Client(stdio_client(params, errlog=errlog), cache=None) as client:
                self.server_start_ms = (time.perf_counter() - started) * 1000
                self.mcp = client
                self.server_pid = _find_child(cmd)
                self.tools = {t.name for t in (await client.list_tools()).tools}
                progress(
                    f"MCP server up in {self.server_start_ms:.0f} ms (pid {self.server_pid}); "
                    f"{len(self.tools)} tools; log {self.server_log}"
                )
                try:
                    yield
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._release_fixtures()
                        await self.agent.aclose()
                    self.mcp = None

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """One tools/call; an isError answer raises ToolCallError with the server's errorCode."""
        assert self.mcp is not None, "no MCP session"
        with anyio.fail_after(CALL_TIMEOUT_S):
            result = await self.mcp.call_tool(tool, args)
        if result.is_error:
            text = " ".join(getattr(c, "text", "") for c in result.content)
            try:
                body = error_body(result)  # errors are text only: the uniform body is its last line
            except (StopIteration, ValueError):
                body = {}
            raise ToolCallError(tool, str(body.get("errorCode", "?")), str(body.get("error") or text[:500]))
        return dict(result.structured_content or {})

    async def timed_call(self, tool: str, args: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        started = time.perf_counter()
        data = await self.call(tool, args)
        return (time.perf_counter() - started) * 1000, data

    def require_tools(self, *names: str) -> None:
        missing = [n for n in names if n not in self.tools]
        if missing:
            raise Skipped(
                f"the server has no {', '.join(missing)} tool (tools/list: {len(self.tools)} tools); "
                "this benchmark starts working once the browser lands"
            )

    def container_of(self, sandbox_id: str) -> Container:
        found = self.docker.containers.list(filters={"label": f"{labels.SANDBOX}={sandbox_id}"})
        if len(found) != 1:
            raise BenchError(f"expected one container for {sandbox_id}, found {len(found)}")
        return found[0]

    async def shared_sandbox(self) -> tuple[str, Container]:
        """One MCP sandbox reused by the warm benchmarks (file_read, code_run, browser pages)."""
        if self._shared is None:
            data = await self.call("sandbox_create", {"name": "bench-shared"})
            sid = data["sandboxId"]
            self._shared = (sid, self.container_of(sid))
            progress(f"shared sandbox {sid} ready")
        return self._shared

    async def bare_sandbox(self) -> BareSandbox:
        """One bare sandbox (agent + code runner, our token) for the direct-RPC variants."""
        if self._bare is None:
            self._bare = self.start_bare("direct", with_runner=True)
        return self._bare

    async def _release_fixtures(self) -> None:
        if self._shared is not None and self.mcp is not None:
            with contextlib.suppress(Exception):
                await self.call("sandbox_destroy", {"sandboxId": self._shared[0]})
        self._shared = None
        if self._bare is not None:
            self.remove_bare(self._bare)
            self._bare = None

    # -- bare containers ------------------------------------------------------------------
    def start_bare(
        self,
        tag: str,
        *,
        with_runner: bool,
        waits: Callable[[], Iterator[float]] | None = None,
        runner_at_once: bool = False,
    ) -> BareSandbox:
        """`docker run -d` with the backend's own run arguments, then poll /healthz.

        Marks (ms since start): `run` when docker returned the container, `agent` when /healthz
        answered, `runner` when the code runner (started like the manager does) was connected.
        `waits` yields the sleeps between probes (default: a tight FINE_POLL_S loop).
        `runner_at_once` execs the code runner right after `docker run` (both boot in parallel)
        instead of after the agent answered, as the manager does today.
        """
        self._serial += 1
        sid = f"{self.namespace}-{tag}{self._serial}"
        token, runner_secret = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        spec = StartSpec(
            sandbox_id=sid,
            image=self.settings.image,
            # No io.boxwright.sandbox label: the server under test must neither adopt nor reap these.
            labels={labels.NAMESPACE: self.namespace, BENCH_LABEL: self.run_id},
            env=agent_env(token, runner_secret),
        )
        vol = volume_name(sid)
        started = time.perf_counter()
        self.docker.volumes.create(name=vol, labels=spec.labels)
        container = self.docker.containers.run(spec.image, **self.backend.run_kwargs(spec, vol))
        container.reload()
        port = container.ports[AGENT_PORT_SPEC][0]["HostPort"]
        bare = BareSandbox(sid, container, f"http://127.0.0.1:{port}", token)
        bare.marks["run"] = (time.perf_counter() - started) * 1000
        try:
            if runner_at_once:
                self.backend.start_code_runner(container.id or "", runner_secret)
                self._poll_health(bare, need_runner=True, waits=waits)
                bare.marks["runner"] = (time.perf_counter() - started) * 1000
                return bare
            self._poll_health(bare, need_runner=False, waits=waits)
            bare.marks["agent"] = (time.perf_counter() - started) * 1000
            if with_runner:
                self.backend.start_code_runner(container.id or "", runner_secret)
                self._poll_health(bare, need_runner=True, waits=waits)
                bare.marks["runner"] = (time.perf_counter() - started) * 1000
        except BaseException:
            self.remove_bare(bare)
            raise
        return bare

    def _poll_health(
        self, bare: BareSandbox, *, need_runner: bool, waits: Callable[[], Iterator[float]] | None
    ) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        sleeps = waits() if waits else iter(lambda: FINE_POLL_S, None)
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError, ValueError):
                resp = self.http.get(f"{bare.url}/healthz")
                if resp.status_code == 200 and (not need_runner or resp.json().get("codeRunnerReady")):
                    return
            time.sleep(next(sleeps))
        raise BenchError(f"bare container {bare.sandbox_id} not ready in {READY_TIMEOUT_S:.0f}s")

    def remove_bare(self, bare: BareSandbox) -> float:
        started = time.perf_counter()
        with contextlib.suppress(docker.errors.NotFound):
            bare.container.remove(force=True, v=True)
        self.backend.remove_volume(volume_name(bare.sandbox_id))
        return (time.perf_counter() - started) * 1000

    def bare_playwright(self, bare: BareSandbox, mode: str, n: int) -> dict[str, list[float]]:
        """Run BARE_PLAYWRIGHT in a bare container as the agent's user; its per-iteration timings."""
        code, data = bare.container.exec_run(
            [AGENT_PYTHON, "-c", BARE_PLAYWRIGHT, mode, str(n), str(PAGE_PORT + 1)],
            user="agent",
            workdir="/tmp",
            environment={"PAGE_HTML": PAGE_HTML},
            demux=True,
        )
        stdout, stderr = data
        if code != 0:
            tail = (stderr or b"")[-500:].decode(errors="replace")
            raise BenchError(f"bare Playwright ({mode}): exit {code}: {tail}")
        return json.loads(stdout)

    # -- measurements of processes and containers --------------------------------------------
    def container_memory(self, container: Container) -> dict[str, float]:
        """`docker stats` figure (usage minus inactive file cache) and anonymous RSS, in MiB."""
        raw: Any = container.stats(stream=False, one_shot=True)
        mem = raw.get("memory_stats") or {}
        st = mem.get("stats") or {}
        usage = float(mem.get("usage", 0))
        inactive = float(st.get("total_inactive_file", st.get("inactive_file", 0)))
        rss = float(st.get("total_rss", st.get("anon", 0)))
        return {"usage": (usage - inactive) / MiB, "rss": rss / MiB}

    def server_rss(self) -> dict[str, float]:
        """VmRSS and VmHWM (peak) of the MCP server process, in MiB; empty if it is not found."""
        if self.server_pid is None:
            return {}
        try:
            status = Path(f"/proc/{self.server_pid}/status").read_text()
        except OSError:
            return {}
        out = {}
        for line in status.splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024
        return out

    # -- cleanup --------------------------------------------------------------------------
    def sweep(self) -> None:
        """Remove everything labelled with our namespace (sandboxes, baselines, volumes, network)."""
        self._stop_server()
        with contextlib.suppress(Exception):
            self.http.close()
        flt = {"label": f"{labels.NAMESPACE}={self.namespace}"}
        removed_c = removed_v = 0
        for c in self.docker.containers.list(all=True, filters=flt):
            with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                c.remove(force=True, v=True)
                removed_c += 1
        for v in self.docker.volumes.list(filters=flt):
            with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                v.remove(force=True)
                removed_v += 1
        networks = self.docker.networks.list(names=[f"boxwright-{self.namespace}"])
        for net in networks:
            for attempt in range(5):
                try:
                    net.remove()
                    break
                except docker.errors.NotFound:
                    break
                except docker.errors.APIError:
                    if attempt == 4:
                        progress(f"cleanup: could not remove network {net.name}")
                    time.sleep(0.5)
        progress(
            f"cleanup: namespace {self.namespace}: removed {removed_c} leftover containers, "
            f"{removed_v} volumes, {len(networks)} network"
        )

    def _stop_server(self) -> None:
        """The SDK client ends the server on exit; only if it is still alive (interrupted), end it."""
        pid = self.server_pid
        if pid is None or not _alive(pid):
            return
        progress(f"cleanup: MCP server pid {pid} still running; sending SIGTERM")
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        for _ in range(100):  # the server destroys its sandboxes on the way out
            if not _alive(pid):
                return
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _find_child(cmd: Sequence[str]) -> int | None:
    """The pid of the server the SDK spawned: our child whose command line is `cmd`."""
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == me and any(arg.decode(errors="replace").endswith(cmd[-1]) for arg in argv):
            return int(entry.name)
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by the SDK) counts as gone.
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return False


def manager_waits() -> Iterator[float]:
    """The SandboxManager's probe schedule (tenacity wait_exponential(multiplier=0.02, max=0.25))."""
    k = 0
    while True:
        yield min(0.02 * 2**k, 0.25)
        k += 1


# -- benchmarks ------------------------------------------------------------------------------
@benchmark("sandbox_start", "Sandbox start (create → ready, then remove)", default_n=5)
async def bench_sandbox_start(h: Harness, n: int) -> list[Series]:
    """Bare `docker run` (same hardening) polled tightly, the same with the manager's backoff,
    and sandbox_create through MCP — interleaved per iteration so drift hits all alike."""
    b = "sandbox_start"
    run = Series(b, "bare: docker run returned", "ms")
    agent = Series(b, "bare: docker run → agent /healthz (baseline)", "ms")
    runner = Series(b, "bare: … + code runner exec → ready", "ms")
    mgr = Series(b, "bare: same, manager's poll backoff", "ms", note="20 ms ×2 per probe, max 250 ms")
    par = Series(b, "bare: runner exec'd right after run (parallel boot)", "ms", note="what-if, 5 ms polling")
    create = Series(b, "sandbox_create (MCP stdio)", "ms")
    server = Series(b, "sandbox_create server-side (startupMs)", "ms")
    rm = Series(b, "bare: docker rm -f + volume rm", "ms")
    destroy = Series(b, "sandbox_destroy (MCP stdio)", "ms")

    async def mcp_once() -> tuple[float, float, float]:
        ms, data = await h.timed_call("sandbox_create", {})
        d_ms, _ = await h.timed_call("sandbox_destroy", {"sandboxId": data["sandboxId"]})
        return ms, float(data["startupMs"]), d_ms

    progress(f"{b}: warm-up (first create after server start is not counted)")
    h.remove_bare(h.start_bare("warm", with_runner=True))
    await mcp_once()
    for i in range(n):
        bare = h.start_bare("start", with_runner=True)
        run.add(bare.marks["run"])
        agent.add(bare.marks["agent"])
        runner.add(bare.marks["runner"])
        rm.add(h.remove_bare(bare))
        bare = h.start_bare("mgr", with_runner=True, waits=manager_waits)
        mgr.add(bare.marks["runner"])
        h.remove_bare(bare)
        bare = h.start_bare("par", with_runner=True, runner_at_once=True)
        par.add(bare.marks["runner"])
        h.remove_bare(bare)
        c_ms, s_ms, d_ms = await mcp_once()
        create.add(c_ms)
        server.add(s_ms)
        destroy.add(d_ms)
        progress(
            f"{b} {i + 1}/{n}: bare /healthz {agent.samples[-1]:.0f} ms, +runner {runner.samples[-1]:.0f} ms, "
            f"manager backoff {mgr.samples[-1]:.0f} ms, parallel {par.samples[-1]:.0f} ms | "
            f"sandbox_create {c_ms:.0f} ms (server {s_ms:.0f})"
        )
    return [run, agent, runner, mgr, par, create, server, rm, destroy]


@benchmark("memory", "Memory of an idle sandbox and of the MCP server", default_n=3)
async def bench_memory(h: Harness, n: int) -> list[Series]:
    """Idle container memory (`docker stats` usage and anonymous RSS) after SETTLE_S: bare agent
    only vs a sandbox from sandbox_create (agent + code runner); and the server's RSS."""
    b = "memory"
    bare_use, bare_rss, sbx_use, sbx_rss, srv0, srv1, peak = Series.group(
        b,
        "MiB",
        "bare container, agent only: docker stats (baseline)",
        "bare container, agent only: rss",
        "sandbox (agent + code runner): docker stats",
        "sandbox (agent + code runner): rss",
        "MCP server RSS, no sandbox",
        "MCP server RSS, 1 idle sandbox",
        "MCP server peak RSS (VmHWM) so far",
    )
    for i in range(n):
        bare = h.start_bare("mem", with_runner=False)
        await anyio.sleep(SETTLE_S)
        m = h.container_memory(bare.container)
        bare_use.add(m["usage"])
        bare_rss.add(m["rss"])
        h.remove_bare(bare)

        if rss := h.server_rss():
            srv0.add(rss["VmRSS"])
        data = await h.call("sandbox_create", {})
        sid = data["sandboxId"]
        try:
            await anyio.sleep(SETTLE_S)
            m = h.container_memory(h.container_of(sid))
            sbx_use.add(m["usage"])
            sbx_rss.add(m["rss"])
            if rss := h.server_rss():
                srv1.add(rss["VmRSS"])
                peak.add(rss["VmHWM"])
        finally:
            await h.call("sandbox_destroy", {"sandboxId": sid})
        progress(
            f"{b} {i + 1}/{n}: bare {bare_use.samples[-1]:.1f} MiB, sandbox {sbx_use.samples[-1]:.1f} MiB, "
            f"server {srv1.samples[-1] if srv1.samples else float('nan'):.1f} MiB"
        )
    return [s for s in (bare_use, bare_rss, sbx_use, sbx_rss, srv0, srv1, peak) if s.samples]


@benchmark("file_read", "File read round trip (warm)", default_n=30)
async def bench_file_read(h: Harness, n: int) -> list[Series]:
    """`docker exec cat` vs the agent's /rpc called directly vs file_read through MCP."""
    sid, container = await h.shared_sandbox()
    bare = await h.bare_sandbox()
    out: list[Series] = []
    for label, size in FILE_SIZES.items():
        out += await _file_read_one_size(h, n, sid, container, bare, label, size)
    return out


async def _file_read_one_size(
    h: Harness, n: int, sid: str, container: Container, bare: BareSandbox, label: str, size: int
) -> list[Series]:
    b = "file_read"
    path = f"bench/f_{size}.txt"
    content = ("0123456789abcdef" * (size // 16 + 1))[:size]
    await h.call("file_write", {"sandboxId": sid, "path": path, "content": content})
    await h.agent.call(
        bare.endpoint, methods.FILE_WRITE, FileWriteParams(path=path, content=content), Deadline.after(30)
    )
    exec_s = Series(b, f"{label}: docker exec cat (baseline)", "ms")
    rpc_s = Series(b, f"{label}: agent /rpc direct (no MCP)", "ms")
    mcp_s = Series(b, f"{label}: file_read (MCP stdio)", "ms")

    def via_exec() -> float:
        started = time.perf_counter()
        code, data = container.exec_run(["cat", f"/workspace/{path}"])
        ms = (time.perf_counter() - started) * 1000
        if code != 0 or len(data) != size:
            raise BenchError(f"docker exec cat: exit {code}, {len(data)} bytes")
        return ms

    async def via_rpc() -> float:
        started = time.perf_counter()
        r = await h.agent.call(bare.endpoint, methods.FILE_READ, FileReadParams(path=path), Deadline.after(30))
        ms = (time.perf_counter() - started) * 1000
        if r.size != size or not r.eof:
            raise BenchError(f"agent file.read: {r.size} bytes, eof {r.eof}")
        return ms

    async def via_mcp() -> float:
        ms, data = await h.timed_call("file_read", {"sandboxId": sid, "path": path})
        if len(data["content"]) != size:
            raise BenchError(f"file_read returned {len(data['content'])} chars")
        return ms

    await warm_up(via_exec, via_rpc, via_mcp)
    for i in range(n):
        exec_s.add(via_exec())
        rpc_s.add(await via_rpc())
        mcp_s.add(await via_mcp())
        if (i + 1) % 10 == 0 or i + 1 == n:
            progress(f"{b} {label} {i + 1}/{n}")
    return [exec_s, rpc_s, mcp_s]


@benchmark("code_run", f"Code run: python3 -c {CODE!r} (warm)", default_n=30)
async def bench_code_run(h: Harness, n: int) -> list[Series]:
    """`docker exec python3 -c` (as the runner user) vs agent /rpc code.run vs code_run via MCP."""
    b = "code_run"
    sid, container = await h.shared_sandbox()
    bare = await h.bare_sandbox()
    exec_s = Series(b, "docker exec python3 -c (baseline)", "ms", note="user runner, /usr/bin/python3")
    rpc_s = Series(b, "agent /rpc code.run direct (no MCP)", "ms")
    mcp_s = Series(b, "code_run (MCP stdio)", "ms")
    inner = Series(b, "code_run in-container durationMs", "ms")

    def via_exec() -> float:
        started = time.perf_counter()
        code, data = container.exec_run([SYSTEM_PYTHON, "-c", CODE], user="runner", workdir="/workspace")
        ms = (time.perf_counter() - started) * 1000
        if code != 0 or data.strip() != b"1":
            raise BenchError(f"docker exec python3: exit {code}, {data[:200]!r}")
        return ms

    async def via_rpc() -> float:
        started = time.perf_counter()
        r = await h.agent.call(
            bare.endpoint, methods.CODE_RUN, CodeRunParams(language="python", code=CODE), Deadline.after(60)
        )
        ms = (time.perf_counter() - started) * 1000
        if r.exitCode != 0 or r.stdout.strip() != "1":
            raise BenchError(f"agent code.run: exit {r.exitCode}, {r.stderr[:200]!r}")
        return ms

    async def via_mcp() -> tuple[float, float]:
        ms, data = await h.timed_call("code_run", {"sandboxId": sid, "language": "python", "code": CODE})
        if data.get("exitCode") != 0 or data.get("stdout", "").strip() != "1":
            raise BenchError(f"code_run: {data}")
        return ms, float(data["durationMs"])

    await warm_up(via_exec, via_rpc, via_mcp)
    for i in range(n):
        exec_s.add(via_exec())
        rpc_s.add(await via_rpc())
        ms, dur = await via_mcp()
        mcp_s.add(ms)
        inner.add(dur)
        if (i + 1) % 10 == 0 or i + 1 == n:
            progress(f"{b} {i + 1}/{n}")
    return [exec_s, rpc_s, mcp_s, inner]


@benchmark("browser_first_call", "First browser call after sandbox_create", default_n=3)
async def bench_browser_first_call(h: Harness, n: int) -> list[Series]:
    """A fresh sandbox's first browser_goto pays for launching Chromium; the second one does not."""
    h.require_tools("browser_goto")
    b = "browser_first_call"
    bare = h.bare_playwright(await h.bare_sandbox(), "cold", n)
    bare_first = Series(b, "bare Playwright: launch + goto about:blank (baseline)", "ms", bare["first"])
    bare_second = Series(b, "bare Playwright: second goto about:blank", "ms", bare["second"])
    first = Series(b, "browser_goto about:blank, first call (cold)", "ms")
    second = Series(b, "browser_goto about:blank, second call (warm)", "ms")
    for i in range(n):
        data = await h.call("sandbox_create", {})
        sid = data["sandboxId"]
        try:
            ms, _ = await h.timed_call("browser_goto", {"sandboxId": sid, "url": "about:blank"})
            first.add(ms)
            ms, _ = await h.timed_call("browser_goto", {"sandboxId": sid, "url": "about:blank"})
            second.add(ms)
        finally:
            await h.call("sandbox_destroy", {"sandboxId": sid})
        progress(f"{b} {i + 1}/{n}: first {first.samples[-1]:.0f} ms, second {second.samples[-1]:.0f} ms")
    return [bare_first, first, bare_second, second]


@contextlib.asynccontextmanager
async def extra_server(h: Harness, name: str, command: list[str], **env_extra: str) -> AsyncIterator[Client]:
    """A second stdio MCP server beside the harness's (same namespace and state dir, so the two leave
    each other's sandboxes alone and the cleanup covers both); its stderr goes to `<name>.log`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOXWRIGHT_") or k in PASS_THROUGH_ENV}
    env.update(
        BOXWRIGHT_NAMESPACE=h.namespace,
        BOXWRIGHT_STATE_DIR=str(h.settings.state_dir),
        BOXWRIGHT_IMAGE=h.settings.image,
        **env_extra,
    )
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    with (h.workdir / f"{name}.log").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), cache=None) as client:
            yield client


async def client_call(client: Client, tool: str, args: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    with anyio.fail_after(CALL_TIMEOUT_S):
        result = await client.call_tool(tool, args)
    ms = (time.perf_counter() - started) * 1000
    if result.is_error:
        raise ToolCallError(tool, "?", " ".join(getattr(c, "text", "") for c in result.content)[:500])
    return ms, dict(result.structured_content or {})


async def _until(check: Callable[[], bool], what: str, timeout_s: float = 120) -> None:
    for _ in range(int(timeout_s / 0.05)):
        if check():
            return
        await anyio.sleep(0.05)
    raise BenchError(f"timed out waiting for {what}")


@benchmark("pool_create", "sandbox_create from the warm pool vs cold vs bare docker run", default_n=10)
async def bench_pool_create(h: Harness, n: int) -> list[Series]:
    """The harness's server (no pool) creates cold; a second server with BOXWRIGHT_POOL_SIZE=1 hands
    out pooled sandboxes, each timed only once the pool has refilled (a refill is not a create), and
    the next round starts once it has refilled again.
    Interleaved with the bare `docker run` → /healthz baseline, the two taking turns going first."""
    b = "pool_create"
    agent, runner, cold, cold_srv, first_run, pool, pool_srv = Series.group(
        b,
        "ms",
        "bare: docker run → agent /healthz (baseline)",
        "bare: … + code runner ready",
        "sandbox_create cold (MCP stdio)",
        "sandbox_create cold, server-side (startupMs)",
        "code_run `true` right after the cold create (the runner loads its serving side after its hello)",
        "sandbox_create from the pool (MCP stdio)",
        "sandbox_create from the pool, server-side (startupMs)",
    )
    log = h.workdir / "pool-server.log"

    def refills() -> int:
        return log.read_text(errors="replace").count("ready (1 of 1)")

    async def cold_create() -> tuple[float, dict[str, Any], float]:
        """A cold sandbox_create, then a code_run right after it, then its destroy."""
        ms, data = await h.timed_call("sandbox_create", {})
        first_ms, _ = await h.timed_call(
            "code_run", {"sandboxId": data["sandboxId"], "language": "bash", "code": "true"}
        )
        await h.call("sandbox_destroy", {"sandboxId": data["sandboxId"]})
        return ms, data, first_ms

    # The harness's server makes the namespace network first: two servers creating it at the same
    # moment can end with two networks of one name (the engine's duplicate check is racy).
    c_data = await h.call("sandbox_create", {})
    async with extra_server(h, "pool-server", h.server_command(), BOXWRIGHT_POOL_SIZE="1") as pooled:
        await h.call("sandbox_destroy", {"sandboxId": c_data["sandboxId"]})
        claims = 0
        for i in range(n + 1):  # the first round is an uncounted warm-up
            # Each start begins on a settled machine (what came before still finishes in the background: a
            # refill's code runner loading, a network guard's removal), bare and cold taking turns first.
            if i % 2:
                await anyio.sleep(SETTLE_S)
                c_ms, c_data, f_ms = await cold_create()
            await anyio.sleep(SETTLE_S)
            bare = h.start_bare("pool", with_runner=True)
            h.remove_bare(bare)
            if not i % 2:
                await anyio.sleep(SETTLE_S)
                c_ms, c_data, f_ms = await cold_create()
            await _until(lambda: refills() > claims, "the pool to refill")  # noqa: B023
            p_ms, p_data = await client_call(pooled, "sandbox_create", {})
            claims += 1
            if not p_data.get("fromPool"):
                raise BenchError("the pooled server started a sandbox cold")
            await client_call(pooled, "sandbox_destroy", {"sandboxId": p_data["sandboxId"]})
            # Its refill (BOXWRIGHT_POOL_REFILL_DELAY after the claim) must not overlap the next round's
            # bare and cold starts, which it would slow.
            await _until(lambda: refills() > claims, "the pool to refill")  # noqa: B023
            if i == 0:
                continue
            agent.add(bare.marks["agent"])
            runner.add(bare.marks["runner"])
            cold.add(c_ms)
            cold_srv.add(float(c_data["startupMs"]))
            first_run.add(f_ms)
            pool.add(p_ms)
            pool_srv.add(float(p_data["startupMs"]))
            progress(
                f"{b} {i}/{n}: bare /healthz {agent.samples[-1]:.0f} ms (+runner {runner.samples[-1]:.0f}) | "
                f"cold {c_ms:.0f} ms, then code_run {f_ms:.0f} ms | "
                f"pool {p_ms:.1f} ms (server {p_data['startupMs']} ms)"
            )
    return [agent, runner, cold, cold_srv, first_run, pool, pool_srv]


@benchmark("pool_browser", "First browser call: pooled sandbox with Chromium prelaunched vs cold", default_n=5)
async def bench_pool_browser(h: Harness, n: int) -> list[Series]:
    """browser_goto about:blank as the first call of a sandbox: one from a pool with BOXWRIGHT_POOL_BROWSER
    (Chromium launched while it waited) vs one from the harness's server (launched on this call), and
    the second call of the cold one (the floor)."""
    h.require_tools("browser_goto")
    b = "pool_browser"
    pre, cold, second = Series.group(
        b,
        "ms",
        "first browser_goto, pooled + prelaunched",
        "first browser_goto, cold sandbox (launches Chromium)",
        "second browser_goto (warm)",
    )
    log = h.workdir / "pool-browser-server.log"
    warm = await h.call("sandbox_create", {})  # makes the namespace network first (see pool_create)
    env = {"BOXWRIGHT_POOL_SIZE": "1", "BOXWRIGHT_POOL_BROWSER": "true"}
    async with extra_server(h, "pool-browser-server", h.server_command(), **env) as pooled:
        await h.call("sandbox_destroy", {"sandboxId": warm["sandboxId"]})
        for i in range(n):
            await _until(lambda: log.read_text(errors="replace").count("ready (1 of 1)") > i, "the pool")  # noqa: B023
            # Chromium's launch and the spare context and tab come in the background after the agent is up:
            # a prewarmed sandbox is one whose prewarm is done (the agent logs it).
            await _until(lambda: _prewarmed(h), "the pooled sandbox's browser prewarm")
            _, p_data = await client_call(pooled, "sandbox_create", {})
            p_ms, _ = await client_call(
                pooled, "browser_goto", {"sandboxId": p_data["sandboxId"], "url": "about:blank"}
            )
            await client_call(pooled, "sandbox_destroy", {"sandboxId": p_data["sandboxId"]})
            c_data = await h.call("sandbox_create", {})
            c_ms, _ = await h.timed_call("browser_goto", {"sandboxId": c_data["sandboxId"], "url": "about:blank"})
            s_ms, _ = await h.timed_call("browser_goto", {"sandboxId": c_data["sandboxId"], "url": "about:blank"})
            await h.call("sandbox_destroy", {"sandboxId": c_data["sandboxId"]})
            pre.add(p_ms)
            cold.add(c_ms)
            second.add(s_ms)
            progress(f"{b} {i + 1}/{n}: pooled+prelaunched {p_ms:.0f} ms, cold {c_ms:.0f} ms, second {s_ms:.0f} ms")
    return [pre, cold, second]


def _prewarmed(h: Harness) -> bool:
    """The pooled sandbox waiting in the namespace (the previous one is destroyed) has its prewarm done."""
    flt = {"label": [f"{labels.NAMESPACE}={h.namespace}", f"{labels.POOL}=1"]}
    return any(b"spare browser context and tab open" in c.logs() for c in h.docker.containers.list(filters=flt))


# pool_refill: the refill policies compared, each a server of its own (variant -> its environment).
def _refill_policy(delay_s: str, shares: str) -> dict[str, str]:
    return {"BOXWRIGHT_POOL_REFILL_DELAY": delay_s, "BOXWRIGHT_POOL_CPU_SHARES": shares}


REFILL_POLICIES = {
    "refill at once, normal weight (the old pool)": _refill_policy("0", "0"),
    "refill at once, pooled at low weight": _refill_policy("0", "128"),
    "refill 2 s after the claim, normal weight (default)": _refill_policy("2", "0"),
    "refill 2 s after the claim, pooled at low weight": _refill_policy("2", "128"),
}
FIRST_CALLS = 8  # the claimant's calls timed right after its claim
CALLS_WINDOW_S = 5.0  # ... and then on until this long after it, past a 2 s refill delay (the refill's start)
# BENCH_BUSY_CPUS=N: pool_refill runs beside a container of the same image (the normal CPU weight) keeping
# N CPUs busy, as live sandboxes at work would: the contended case the pooled sandboxes' low weight is for.
BUSY_LOOP = """
import multiprocessing, sys
def spin():
    while True:
        pass
for _ in range(int(sys.argv[1])):
    multiprocessing.Process(target=spin).start()
"""


def _pools_quiet(h: Harness, count: int) -> bool:
    """Every server's pooled sandbox is started and prewarmed (the claimed ones are destroyed by then)."""
    flt = {"label": [f"{labels.NAMESPACE}={h.namespace}", f"{labels.POOL}=1"]}
    found = h.docker.containers.list(filters=flt)
    return len(found) == count and all(b"spare browser context and tab open" in c.logs() for c in found)


@benchmark("pool_refill", "The claimant's first calls while the pool refills, per refill policy", default_n=5)
async def bench_pool_refill(h: Harness, n: int) -> list[Series]:
    """One server per refill policy (REFILL_POLICIES), each with a pool of one prewarmed sandbox
    (BOXWRIGHT_POOL_BROWSER). In turn, once every pool is full and prewarmed and 1 s has passed (nothing
    else starting): a claim, then at once the claimant's first FIRST_CALLS calls — browser_goto
    about:blank, code_run print(1), then browser_goto again — and then on (goto and code_run in turn) until
    CALLS_WINDOW_S after the claim, past the refill's delayed start, while that server's pool refills by
    its policy. The order of the policies rotates every round."""
    h.require_tools("browser_goto")
    b = "pool_refill"
    rows: dict[str, list[Series]] = {
        name: Series.group(
            b,
            "ms",
            f"claim (sandbox_create): {name}",
            f"first browser_goto: {name}",
            f"first code_run: {name}",
            f"slowest of the first {FIRST_CALLS} calls: {name}",
            f"slowest call within {CALLS_WINDOW_S:g} s of the claim: {name}",
        )
        for name in REFILL_POLICIES
    }
    warm = await h.call("sandbox_create", {})  # makes the namespace network first (see pool_create)
    busy_cpus = int(os.environ.get("BENCH_BUSY_CPUS", "0"))
    async with contextlib.AsyncExitStack() as stack:
        if busy_cpus:
            busy = h.docker.containers.run(
                h.settings.image,
                ["python3", "-c", BUSY_LOOP, str(busy_cpus)],
                entrypoint=[],
                detach=True,
                user="agent",
                cpu_shares=1024,
                labels={labels.NAMESPACE: h.namespace, BENCH_LABEL: h.run_id},
            )
            stack.callback(busy.remove, force=True)
            progress(f"{b}: a neighbour container keeps {busy_cpus} CPUs busy")
        servers = {}
        for i, (name, env) in enumerate(REFILL_POLICIES.items()):
            servers[name] = await stack.enter_async_context(
                extra_server(
                    h,
                    f"pool-refill-{i}",
                    h.server_command(),
                    BOXWRIGHT_POOL_SIZE="1",
                    BOXWRIGHT_POOL_BROWSER="true",
                    **env,
                )
            )
        await h.call("sandbox_destroy", {"sandboxId": warm["sandboxId"]})
        names = list(REFILL_POLICIES)
        for i in range(n):
            for name in names[i % len(names) :] + names[: i % len(names)]:
                await _until(lambda: _pools_quiet(h, len(names)), "every pool full and prewarmed", timeout_s=300)
                await anyio.sleep(1.0)
                server = servers[name]
                claim_ms, data = await client_call(server, "sandbox_create", {})
                if not data.get("fromPool"):
                    raise BenchError(f"{name}: the pooled server started a sandbox cold")
                sid = data["sandboxId"]
                calls = [
                    ("browser_goto", {"sandboxId": sid, "url": "about:blank"}),
                    ("code_run", {"sandboxId": sid, "language": "python", "code": CODE}),
                ]
                calls += [calls[0]] * (FIRST_CALLS - len(calls))
                claimed = time.monotonic()
                times = [(await client_call(server, tool, args))[0] for tool, args in calls]
                window = list(times)
                while time.monotonic() - claimed < CALLS_WINDOW_S:
                    window.append((await client_call(server, *calls[len(window) % 2]))[0])  # goto, code_run in turn
                await client_call(server, "sandbox_destroy", {"sandboxId": sid})
                claim, goto, run, slowest, in_window = rows[name]
                claim.add(claim_ms)
                goto.add(times[0])
                run.add(times[1])
                slowest.add(max(times))
                in_window.add(max(window))
                load = os.getloadavg()[0]
                progress(
                    f"{b} {i + 1}/{n} {name}: claim {claim_ms:.1f} ms, goto {times[0]:.0f} ms, "
                    f"code_run {times[1]:.0f} ms, slowest {max(times):.0f} ms, in {CALLS_WINDOW_S:g} s "
                    f"{max(window):.0f} ms over {len(window)} calls (load {load:.1f})"
                )
    return [series for group in rows.values() for series in group]


FAST_PATH_IDLE_S = 0.02  # the pause before each call of the "after idle" condition


@benchmark("fast_path", "file_read 1 KiB via MCP vs the MCP SDK's no-op tool vs docker exec cat", default_n=50)
async def bench_fast_path(h: Harness, n: int) -> list[Series]:
    """The same 1 KiB file through file_read (MCP stdio), the official SDK's round trip for a tool that
    does nothing (benchmarks/noop_server.py over stdio: the floor), sandbox_list (Boxwright's server
    alone, no sandbox hop) and `docker exec cat`.

    Each variant runs as its own block under two conditions, because on a VM they differ by 2x: back
    to back (the CPUs stay awake between calls) and after FAST_PATH_IDLE_S idle before each call (an
    agent thinking between calls: every process hop then pays the vCPU's wake-up). Interleaving the
    variants instead would time each call in the wake of the one before it (a docker exec leaves the
    engine busy for milliseconds), favouring whichever variant follows the quietest one."""
    b = "fast_path"
    sid, container = await h.shared_sandbox()
    await h.call("file_write", {"sandboxId": sid, "path": "fast.txt", "content": "x" * 1024})
    noop_cmd = [sys.executable, str(Path(__file__).with_name("noop_server.py"))]
    out: list[Series] = []
    async with extra_server(h, "noop-server", noop_cmd) as floor:

        async def via_mcp() -> None:
            await h.call("file_read", {"sandboxId": sid, "path": "fast.txt"})

        async def via_noop() -> None:
            with anyio.fail_after(CALL_TIMEOUT_S):
                await floor.call_tool("noop", {})

        async def via_list() -> None:
            await h.call("sandbox_list", {})

        async def via_exec() -> None:
            code, _ = container.exec_run(["cat", "/workspace/fast.txt"], user="agent")
            if code != 0:
                raise BenchError(f"docker exec cat: exit {code}")

        variants = {
            "file_read 1 KiB (MCP stdio)": via_mcp,
            "no-op tool, MCP SDK stdio (floor)": via_noop,
            "sandbox_list (MCP stdio, no sandbox hop)": via_list,
            "docker exec cat (baseline)": via_exec,
        }
        conditions = (("back to back", 0.0), (f"after {FAST_PATH_IDLE_S * 1000:.0f} ms idle", FAST_PATH_IDLE_S))
        for condition, idle_s in conditions:
            for label, call in variants.items():
                series = Series(b, f"{label}, {condition}", "ms")
                for i in range(n + 3):  # three uncounted warm-up calls
                    if idle_s:
                        await anyio.sleep(idle_s)
                    started = time.perf_counter()
                    await call()
                    if i >= 3:
                        series.add((time.perf_counter() - started) * 1000)
                out.append(series)
            progress(f"{b}: {condition} done")
    return out


@benchmark("density", "Host memory per sandbox, idle and with a browser tab", default_n=1)
async def bench_density(h: Harness, n: int) -> list[Series]:
    """DENSITY_K sandboxes from sandbox_create: each one's memory (`docker stats` figure) after
    SETTLE_S idle, then after browser_goto about:blank (Chromium launched, one tab), beside the host's
    MemAvailable drop per sandbox over the same DENSITY_K; and how many such sandboxes this host's RAM
    holds at the docker stats size (MemTotal / the mean)."""
    b = "density"
    idle, browsing, host_idle, host_browsing = Series.group(
        b,
        "MiB",
        "idle sandbox (agent + code runner): docker stats",
        "with one about:blank tab (Chromium launched)",
        "idle: host MemAvailable drop per sandbox (shared pages counted once)",
        "with a tab: host MemAvailable drop per sandbox",
    )
    fit_idle, fit_browsing = Series.group(
        b, "count", "sandboxes per host (MemTotal) at the idle size", "sandboxes per host with a tab"
    )
    total_mib = _mem_total_mib()
    for _ in range(n):
        # The host's view beside docker stats: what DENSITY_K more sandboxes take from MemAvailable, where
        # the pages they share (Chromium's binary, the interpreter) count once — not charged to whichever
        # container touched them first, as the cgroup figure does. Noisy when anything else runs on the host.
        before = _mem_available_mib()
        sids = [(await h.call("sandbox_create", {}))["sandboxId"] for _ in range(DENSITY_K)]
        try:
            await anyio.sleep(SETTLE_S)
            for sid in sids:
                idle.add(h.container_memory(h.container_of(sid))["usage"])
            host_idle.add((before - _mem_available_mib()) / DENSITY_K)
            if "browser_goto" in h.tools:
                for sid in sids:
                    await h.call("browser_goto", {"sandboxId": sid, "url": "about:blank"})
                await anyio.sleep(SETTLE_S)
                for sid in sids:
                    browsing.add(h.container_memory(h.container_of(sid))["usage"])
                host_browsing.add((before - _mem_available_mib()) / DENSITY_K)
        finally:
            for sid in sids:
                await h.call("sandbox_destroy", {"sandboxId": sid})
    fit_idle.add(total_mib / (sum(idle.samples) / len(idle.samples)))
    if browsing.samples:
        fit_browsing.add(total_mib / (sum(browsing.samples) / len(browsing.samples)))
    progress(f"{b}: idle {idle.samples}, browsing {browsing.samples}")
    return [s for s in (idle, browsing, host_idle, host_browsing, fit_idle, fit_browsing) if s.samples]


def _meminfo_mib(key: str) -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _mem_total_mib() -> float:
    return _meminfo_mib("MemTotal")


def _mem_available_mib() -> float:
    return _meminfo_mib("MemAvailable")


@contextlib.asynccontextmanager
async def local_page(h: Harness, sid: str, html: str, server: str | None = None) -> AsyncIterator[str]:
    """`html` served from inside the sandbox (python -m http.server on loopback, or the Python script `server`,
    run with the port as its argument), so the network is not measured; yields its URL and stops the server
    afterwards."""
    url = f"http://127.0.0.1:{PAGE_PORT}/"
    await h.call("file_write", {"sandboxId": sid, "path": "bench_site/index.html", "content": html})
    command = f"exec python3 -m http.server {PAGE_PORT} --bind 127.0.0.1"
    if server is not None:
        await h.call("file_write", {"sandboxId": sid, "path": "bench_site/server.py", "content": server})
        command = f"exec python3 server.py {PAGE_PORT}"
    started = await h.call(
        "code_run",
        {"sandboxId": sid, "language": "bash", "code": command, "cwd": "bench_site", "background": True},
    )
    try:
        wait = (
            "import time, urllib.request\n"
            "for _ in range(200):\n"
            "    try:\n"
            f"        urllib.request.urlopen({url!r}, timeout=1).read(); break\n"
            "    except OSError:\n"
            "        time.sleep(0.05)\n"
            "else:\n"
            "    raise SystemExit('page server did not come up')\n"
        )
        await h.call("code_run", {"sandboxId": sid, "language": "python", "code": wait})
        yield url
    finally:
        with contextlib.suppress(BenchError):
            await h.call("process_kill", {"sandboxId": sid, "processId": started["processId"]})


@benchmark("browser_page", "browser_goto + browser_snapshot of a page served in the sandbox", default_n=20)
async def bench_browser_page(h: Harness, n: int) -> list[Series]:
    """A local page (python -m http.server inside the sandbox) so the network is not measured."""
    h.require_tools("browser_goto", "browser_snapshot")
    b = "browser_page"
    sid, _ = await h.shared_sandbox()
    async with local_page(h, sid, PAGE_HTML) as url:
        goto, snap, both, bare_goto, bare_snap, bare_both = Series.group(
            b,
            "ms",
            "browser_goto local page",
            "browser_snapshot",
            "goto + snapshot",
            "bare Playwright: goto (baseline)",
            "bare Playwright: aria_snapshot + inner_text (baseline)",
            "bare Playwright: goto + snapshot (baseline)",
        )
        bare = await h.bare_sandbox()

        async def mcp_round() -> tuple[float, float]:
            g_ms, _ = await h.timed_call("browser_goto", {"sandboxId": sid, "url": url})
            s_ms, data = await h.timed_call("browser_snapshot", {"sandboxId": sid})
            if "Benchmark page" not in json.dumps(data):
                raise BenchError("browser_snapshot does not show the local page")
            return g_ms, s_ms

        await mcp_round()  # launches the browser: not counted
        done = 0
        while done < n:  # blocks of MCP rounds and bare rounds alternate, so load drifts hit both
            k = min(PAGE_BLOCK, n - done)
            for _ in range(k):
                g_ms, s_ms = await mcp_round()
                goto.add(g_ms)
                snap.add(s_ms)
                both.add(g_ms + s_ms)
            raw = h.bare_playwright(bare, "page", k)
            for g_ms, s_ms in zip(raw["goto"], raw["snapshot"], strict=True):
                bare_goto.add(g_ms)
                bare_snap.add(s_ms)
                bare_both.add(g_ms + s_ms)
            done += k
            progress(f"{b} {done}/{n}")
        return [bare_goto, goto, bare_snap, snap, bare_both, both]


# browser_scrape: an article of some length (a table, a code block, a menu and a footer to leave out).
ARTICLE_HTML = (
    "<!doctype html><html lang='en'><head><title>Boxwright bench article</title></head><body>"
    "<header><nav>" + " ".join(f"<a href='/s{i}'>Section {i}</a>" for i in range(12)) + "</nav></header>"
    "<main><article><h1>Benchmark article</h1>"
    + "".join(
        f"<h2>Part {i}</h2><p>{'Paragraph words about foxes, dogs and the long grass between them. ' * 12}</p>"
        for i in range(20)
    )
    + "<table><tr><th>Animal</th><th>Speed</th></tr><tr><td>Fox</td><td>50</td></tr></table>"
    "<pre><code class='language-python'>print('fox')</code></pre></article></main>"
    "<footer><a href='/privacy'>Privacy</a> <a href='/terms'>Terms</a></footer></body></html>"
)


@benchmark(
    "browser_scrape", "browser_scrape of the open tab vs scrape (load afresh) vs browser_page_content", default_n=20
)
async def bench_browser_scrape(h: Harness, n: int) -> list[Series]:
    """What reading the tab as it is saves: the same local page read by the scrape engine from the open tab,
    opened and read (browser_goto + browser_scrape), and by `scrape` with sandboxId (a fresh context, the
    load and the smart wait); browser_page_content (innerText by headings, no main-content models) as the
    cheap reader beside it."""
    h.require_tools("browser_goto", "browser_scrape", "browser_page_content", "scrape")
    b = "browser_scrape"
    sid, _ = await h.shared_sandbox()
    async with local_page(h, sid, ARTICLE_HTML) as url:
        tab, opened, fresh, content = Series.group(
            b,
            "ms",
            "browser_scrape of the open tab (markdown, main content)",
            "browser_goto + browser_scrape",
            "scrape with sandboxId (fresh context, load, smart wait; baseline)",
            "browser_page_content of the open tab (innerText by headings)",
        )

        async def checked(tool: str, args: dict[str, Any]) -> float:
            ms, data = await h.timed_call(tool, {"sandboxId": sid, **args})
            if "Part 19" not in json.dumps(data) or "Privacy" in json.dumps(data.get("markdown", "")):
                raise BenchError(f"{tool} did not read the article's main content")
            return ms

        await h.call("browser_goto", {"sandboxId": sid, "url": url})  # launches the browser: not counted
        await checked("browser_scrape", {})  # loads the scrape engine: not counted
        for i in range(n):
            tab.add(await checked("browser_scrape", {}))
            content.add(await checked("browser_page_content", {"maxLength": 200_000}))
            g_ms, _ = await h.timed_call("browser_goto", {"sandboxId": sid, "url": url})
            opened.add(g_ms + await checked("browser_scrape", {}))
            fresh.add(await checked("scrape", {"url": url}))
            progress(f"{b} {i + 1}/{n}")
        return [fresh, opened, tab, content]


@benchmark(
    "scrape_parts", "the next part of a long scrape answer: cut from the kept text vs loaded again", default_n=10
)
async def bench_scrape_parts(h: Harness, n: int) -> list[Series]:
    """A long text read in parts (maxChars): the first call loads the page and the server keeps the whole
    text; a next part (offset > 0, the same arguments) is cut from it (host/readings.py). The baseline is
    the same next part with nothing kept — what every part cost before: the page loaded and read again
    (forced by a timeoutMs of its own, which is part of the key). A first part asked again with maxAge is
    answered from the same kept reading. In a given sandbox, and without one (the throw-away sandbox's own
    agent page, the one page it can load)."""
    h.require_tools("scrape")
    b = "scrape_parts"
    sid, _ = await h.shared_sandbox()
    own = f"http://127.0.0.1:{AGENT_PORT}/healthz"
    first, kept, aged, again, job_kept, job_again = Series.group(
        b,
        "ms",
        "first part, with sandboxId (page loaded, the text kept)",
        "next part, with sandboxId: cut from the kept text",
        "first part again with maxAge, with sandboxId: from the kept reading",
        "next part, with sandboxId, nothing kept (the page loaded again; baseline)",
        "next part, no sandboxId: cut from the kept text",
        "next part, no sandboxId, nothing kept (a sandbox started, the page loaded; baseline)",
    )

    async def part(args: dict[str, Any], *, reused: bool) -> tuple[float, dict[str, Any]]:
        ms, data = await h.timed_call("scrape", args)
        if data.get("reused") is not reused:
            raise BenchError(f"scrape {args} answered reused={data.get('reused')}, expected {reused}")
        return ms, data

    async with local_page(h, sid, ARTICLE_HTML) as url:
        await h.call("scrape", {"sandboxId": sid, "url": url})  # launches the browser: not counted
        for i in range(n):
            base = {"sandboxId": sid, "url": url, "maxChars": 300, "timeoutMs": 30_000 + i}
            ms, data = await part(base, reused=False)
            first.add(ms)
            offset = data.get("nextOffset")
            if offset is None:
                raise BenchError(f"the article came back whole ({data.get('totalChars')} chars): no parts to read")
            kept.add((await part({**base, "offset": offset}, reused=True))[0])
            aged.add((await part({**base, "maxAge": 60_000}, reused=True))[0])
            again.add((await part({**base, "offset": offset, "timeoutMs": 40_000 + i}, reused=False))[0])
            job = {"url": own, "maxChars": 20, "timeoutMs": 30_000 + i}
            _, data = await part(job, reused=False)
            job_kept.add((await part({**job, "offset": data["nextOffset"]}, reused=True))[0])
            job_again.add((await part({**job, "offset": data["nextOffset"], "timeoutMs": 40_000 + i}, reused=False))[0])
            progress(f"{b} {i + 1}/{n}")
    return [first, again, kept, aged, job_again, job_kept]


# scrape_blocking: the article with what a news page loads beside it — ad and tracker scripts and pixels (at
# paths EasyList and EasyPrivacy block on any site), pictures and a web font. The server answers each of those
# after a delay, as a third party across the internet would (the article itself at once).
ADS = 8
PICTURES = 16
AD_DELAY_S, PICTURE_DELAY_S = 0.3, 0.15
BLOCKING_HTML = ARTICLE_HTML.replace(
    "</head>",
    "<style>@font-face{font-family:Bench;src:url(/font.woff2)}body{font-family:Bench,sans-serif}</style>"
    + "".join(f"<script async src='/js/prebid.js?slot={i}'></script>" for i in range(ADS))
    + "</head>",
).replace(
    "</article>",
    "".join(f"<img src='/pixel.gif?event={i}' width='1' height='1' alt=''>" for i in range(ADS))
    + "".join(f"<img src='/img/{i}.png' width='320' height='200' alt='Picture {i}'>" for i in range(PICTURES))
    + "</article>",
)
BLOCKING_SERVER = f"""import sys, time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
class Handler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path == "/" or path.endswith(".html"):
            return super().do_GET()
        time.sleep({AD_DELAY_S} if path in ("/js/prebid.js", "/pixel.gif") else {PICTURE_DELAY_S})
        body = b"window.bids = (window.bids || 0) + 1;" if path.endswith(".js") else bytes(20_000)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
server.daemon_threads = True
server.serve_forever()
"""


# The article under a consent popup of the Complianz kind (autoconsent has a rule for it).
CONSENT_HTML = ARTICLE_HTML.replace(
    "<body>",
    "<body><div id='cmplz-cookiebanner-container'><div class='cmplz-cookiebanner' style='position:fixed;bottom:0'>"
    "<p>We use cookies to improve your experience.</p><button class='cmplz-accept'>Accept</button>"
    "<button class='cmplz-deny' onclick=\"document.cookie='cmplz_banner-status=dismissed';"
    "this.closest('.cmplz-cookiebanner').remove()\">Deny</button></div></div>",
)


# scrape_actions: a listing whose rest comes five "Load more" clicks later, each batch after a 100 ms "request".
LISTING_HTML = (
    "<!doctype html><html lang='en'><head><title>Bench listing</title></head><body><main><h1>Listing</h1>"
    "<ul id='items'></ul><button id='more'>Load more</button></main><script>"
    "let batch = 0;"
    "function add() { batch += 1; const ul = document.getElementById('items');"
    " for (let i = 1; i <= 10; i++) { const li = document.createElement('li');"
    " li.textContent = 'Listing item ' + batch + '.' + i + ': a fox, a dog and the long grass between them';"
    " ul.append(li); }"
    " if (batch >= 6) document.getElementById('more').remove(); }"
    "add(); document.getElementById('more').onclick = () => setTimeout(add, 100);"
    "</script></body></html>"
)
LISTING_CLICKS = 5


@benchmark(
    "scrape_actions",
    "a listing read after five 'Load more' clicks: scrape with actions vs the same by browser tools",
    default_n=10,
)
async def bench_scrape_actions(h: Harness, n: int) -> list[Series]:
    """The whole listing (LISTING_HTML: 10 items, 50 more after five clicks) with sandboxId: one scrape call
    whose click action repeats until the button goes, against the same steps as browser tools in a tab
    (browser_goto, then per click browser_click + browser_wait_for_stable, then browser_scrape: 12 calls; the
    baseline); scrape of the first batch alone beside them."""
    h.require_tools("scrape", "browser_goto", "browser_click", "browser_wait_for_stable", "browser_scrape")
    b = "scrape_actions"
    sid, _ = await h.shared_sandbox()
    acted, by_tab, by_tab_300, plain = Series.group(
        b,
        "ms",
        "scrape with actions: click repeat 10 (stops after 5: the button goes)",
        "browser_goto + 5 x (browser_click + browser_wait_for_stable) + browser_scrape (12 calls; baseline)",
        "the same 12 calls, browser_wait_for_stable with quietMs 300 (as the actions settle)",
        "scrape, no actions (the first 10 items only)",
    )
    last = "Listing item 6.10"

    def whole(data: dict[str, Any], *, expected: bool) -> None:
        if (last in json.dumps(data)) is not expected:
            raise BenchError(f"the listing {'lacks' if expected else 'has'} its last item: {json.dumps(data)[:300]}")

    async with local_page(h, sid, LISTING_HTML) as url:
        args = {"sandboxId": sid, "url": url, "onlyMainContent": False}
        await h.call("scrape", args)  # launches the browser: not counted
        for i in range(n):
            ms, data = await h.timed_call(
                "scrape", {**args, "actions": [{"type": "click", "selector": "#more", "repeat": 10}]}
            )
            whole(data, expected=True)
            if data["actions"][0]["times"] != LISTING_CLICKS:
                raise BenchError(f"the click was done {data['actions'][0]['times']} times, not {LISTING_CLICKS}")
            acted.add(ms)
            for series, quiet in ((by_tab, {}), (by_tab_300, {"quietMs": 300})):
                total, _ = await h.timed_call("browser_goto", {"sandboxId": sid, "url": url})
                for _ in range(LISTING_CLICKS):
                    total += (await h.timed_call("browser_click", {"sandboxId": sid, "selector": "#more"}))[0]
                    total += (await h.timed_call("browser_wait_for_stable", {"sandboxId": sid, **quiet}))[0]
                ms, data = await h.timed_call("browser_scrape", {"sandboxId": sid, "onlyMainContent": False})
                whole(data, expected=True)
                series.add(total + ms)
            ms, data = await h.timed_call("scrape", args)
            whole(data, expected=False)
            plain.add(ms)
            progress(f"{b} {i + 1}/{n}")
    return [by_tab, by_tab_300, acted, plain]


def agent_rss_mib(container: Container) -> float:
    """The in-container agent's RSS (not Chromium's, not the code runner's), from the engine's view of it."""
    top = container.top(ps_args="-o pid,rss,args")  # the engine needs the pid column
    for _pid, rss, args in top["Processes"]:
        if args.endswith("-m sandbox_image") and "tini" not in args:  # not PID 1, which started it
            return int(rss) / 1024
    raise BenchError("the agent process is not in the container's process list")


@benchmark(
    "scrape_blocking",
    "scrape of a page with ads, trackers and pictures: blockAds / blockResources vs all loaded",
    default_n=10,
)
async def bench_scrape_blocking(h: Harness, n: int) -> list[Series]:
    """One page (BLOCKING_HTML) scraped with sandboxId: everything loaded (baseline), blockAds, blockResources
    (image, media, font), and both; the article alone and under a consent popup, with and without
    blockCookieBanners; and what the ad filter costs the agent that loads it (its RSS before the first
    blockAds scrape and after, in a sandbox of its own each round)."""
    h.require_tools("scrape")
    b = "scrape_blocking"
    sid, _ = await h.shared_sandbox()
    plain, ads, kinds, both = Series.group(
        b,
        "ms",
        "scrape, everything loaded (baseline)",
        "scrape, blockAds",
        "scrape, blockResources: image, media, font",
        "scrape, blockAds and blockResources",
    )
    article, article_consent, popup, refused = Series.group(
        b,
        "ms",
        "scrape of the article alone (baseline)",
        "scrape of the article alone, blockCookieBanners (no popup: the consent script's cost)",
        "scrape of the article under a consent popup (baseline: the popup read as text)",
        "scrape of the article under a consent popup, blockCookieBanners (refused)",
    )
    rss_before, rss_after = Series.group(
        b, "MiB", "agent RSS before its first blockAds scrape (baseline)", "agent RSS after it: the ad filter loaded"
    )

    async def timed(url: str, want_blocked: int, **blocks: Any) -> float:
        ms, data = await h.timed_call("scrape", {"sandboxId": sid, "url": url, **blocks})
        if "Part 19" not in json.dumps(data) or (data.get("blocked") or 0) < want_blocked:
            raise BenchError(f"scrape {blocks} read {data.get('title')!r}, blocked {data.get('blocked')}")
        return ms

    async with local_page(h, sid, BLOCKING_HTML, BLOCKING_SERVER) as url:
        await timed(url, 0)  # launches the browser: not counted
        await timed(url, 2 * ADS, blockAds=True)  # loads the ad filter: not counted
        for i in range(n):
            plain.add(await timed(url, 0))
            ads.add(await timed(url, 2 * ADS, blockAds=True))
            kinds.add(await timed(url, ADS + PICTURES, blockResources=["image", "media", "font"]))
            both.add(await timed(url, 2 * ADS + PICTURES, blockAds=True, blockResources=["image", "media", "font"]))
            progress(f"{b} {i + 1}/{n}: {plain.samples[-1]:.0f} ms all loaded, {ads.samples[-1]:.0f} ms blockAds")
        await h.call("file_write", {"sandboxId": sid, "path": "bench_site/article.html", "content": ARTICLE_HTML})
        await h.call("file_write", {"sandboxId": sid, "path": "bench_site/consent.html", "content": CONSENT_HTML})

        async def consent(page: str, refuse: bool) -> float:
            # The whole page: the main content leaves a popup out either way.
            args = {"sandboxId": sid, "url": url + page, "blockCookieBanners": refuse, "onlyMainContent": False}
            ms, data = await h.timed_call("scrape", args)
            shown = "We use cookies" in json.dumps(data)
            if "Part 19" not in json.dumps(data) or (page == "consent.html" and shown is refuse):
                raise BenchError(
                    f"scrape {args} read {data.get('title')!r}, cookie banners {data.get('cookieBanners')}"
                )
            return ms

        await consent("consent.html", True)  # the consent assets read once: not counted
        for i in range(n):
            article.add(await consent("article.html", False))
            article_consent.add(await consent("article.html", True))
            popup.add(await consent("consent.html", False))
            refused.add(await consent("consent.html", True))
            progress(f"{b} consent {i + 1}/{n}: {article.samples[-1]:.0f} / {article_consent.samples[-1]:.0f} ms")
    for i in range(min(n, 3)):
        fresh = (await h.call("sandbox_create", {"name": f"bench-blocking-{i}"}))["sandboxId"]
        try:
            container = h.container_of(fresh)
            page = f"http://127.0.0.1:{AGENT_PORT}/healthz"
            await h.call("scrape", {"sandboxId": fresh, "url": page})  # the browser up, no filter
            rss_before.add(agent_rss_mib(container))
            await h.call("scrape", {"sandboxId": fresh, "url": page, "blockAds": True})
            rss_after.add(agent_rss_mib(container))
        finally:
            await h.call("sandbox_destroy", {"sandboxId": fresh})
    return [plain, ads, kinds, both, article, article_consent, popup, refused, rss_before, rss_after]


@benchmark(
    "scrape_headers",
    "scrape of a page with 33 resources of its own site: request headers vs none",
    default_n=10,
)
async def bench_scrape_headers(h: Harness, n: int) -> list[Series]:
    """BLOCKING_HTML (scripts, pixels, pictures and a font, all from the page's own server) scraped with
    sandboxId: no headers (baseline); an Authorization header, so every request to the site is made by the
    context's request client and handed to the page (browser/headers.py); and the header for another site,
    so the route is there but lets every request through to the browser."""
    h.require_tools("scrape")
    b = "scrape_headers"
    sid, _ = await h.shared_sandbox()
    plain, given, elsewhere = Series.group(
        b,
        "ms",
        "scrape, no headers (baseline)",
        "scrape, an Authorization header for the page's site (33 requests made with it)",
        "scrape, the header for another site (routed, none made with it)",
    )
    token = {"Authorization": "Bearer bench"}

    async def timed(url: str, **extra: Any) -> float:
        ms, data = await h.timed_call("scrape", {"sandboxId": sid, "url": url, **extra})
        if "Part 19" not in json.dumps(data) or data.get("status") != 200:
            raise BenchError(f"scrape {list(extra)} read {data.get('title')!r}, status {data.get('status')}")
        return ms

    async with local_page(h, sid, BLOCKING_HTML, BLOCKING_SERVER) as url:
        await timed(url)  # launches the browser: not counted
        for i in range(n):
            plain.add(await timed(url))
            given.add(await timed(url, headers=token))
            elsewhere.add(await timed(url, headers=token, headersOrigin="http://127.0.0.2:9"))
            progress(f"{b} {i + 1}/{n}: {plain.samples[-1]:.0f} ms without, {given.samples[-1]:.0f} ms with")
    return [plain, given, elsewhere]


@benchmark("batch_extract", f"batch_extract_pages over {BATCH_PAGES} local pages", default_n=3)
async def bench_batch_extract(h: Harness, n: int) -> list[Series]:
    """Pages per second of a template run at concurrency 1, 3 and 5 (sync mode: the call's wall time,
    and the run's own elapsedMs), next to a plain sequential Playwright loop in a bare container.
    Each iteration runs all four, interleaved, so load drift hits every row."""
    h.require_tools("run_task_template")
    b = "batch_extract"
    sid, _ = await h.shared_sandbox()
    root = "bench_batch"
    make = MAKE_PAGES + f"\nmake_pages({root!r}, {BATCH_PAGES})\n"
    await h.call("code_run", {"sandboxId": sid, "language": "python", "code": make})
    serve = MAKE_PAGES + f"\nserve_pages({root!r}, {BATCH_PORT}).serve_forever()\n"
    started = await h.call("code_run", {"sandboxId": sid, "language": "python", "code": serve, "background": True})
    urls = [f"http://127.0.0.1:{BATCH_PORT}/page{i}.html" for i in range(BATCH_PAGES)]
    bare = await h.bare_sandbox()
    baseline = Series(b, f"bare Playwright: sequential loop, {BATCH_PAGES} pages (baseline)", "pages/s")
    wall = {c: Series(b, f"run_task_template, concurrency {c}: call wall time", "pages/s") for c in BATCH_CONCURRENCY}
    inner = {c: Series(b, f"run_task_template, concurrency {c}: run elapsedMs", "pages/s") for c in BATCH_CONCURRENCY}

    async def run(concurrency: int) -> tuple[float, dict[str, Any]]:
        args = {
            "templateId": "batch_extract_pages",
            "sandboxId": sid,
            "inputs": {"urls": urls, "concurrency": concurrency},
            "options": {"mode": "sync", "timeoutMs": int(CALL_TIMEOUT_S * 1000) - 20_000},
        }
        ms, data = await h.timed_call("run_task_template", args)
        if data.get("status") != "succeeded":
            raise BenchError(f"batch run at concurrency {concurrency} ended {data.get('status')}: {data.get('error')}")
        return ms, data

    try:
        await run(3)  # launches the browser, warms the page cache: not counted
        for i in range(n):
            code, out = bare.container.exec_run(
                [AGENT_PYTHON, "-c", BARE_BATCH, "1", str(BATCH_PAGES), str(BATCH_PORT + 1)],
                user="agent",
                workdir="/tmp",
                demux=True,
            )
            stdout, stderr = out
            if code != 0:
                raise BenchError(f"bare batch loop: exit {code}: {(stderr or b'')[-500:].decode(errors='replace')}")
            for ms in json.loads(stdout):
                baseline.add(BATCH_PAGES / (ms / 1000))
            for c in BATCH_CONCURRENCY:
                ms, data = await run(c)
                wall[c].add(BATCH_PAGES / (ms / 1000))
                inner[c].add(BATCH_PAGES / (data["metrics"]["elapsedMs"] / 1000))
            rates = ", ".join(f"c{c} {wall[c].samples[-1]:.1f}" for c in BATCH_CONCURRENCY)
            progress(f"{b} {i + 1}/{n}: bare loop {baseline.samples[-1]:.1f} pages/s; {rates} pages/s")
        return [baseline, *(s for c in BATCH_CONCURRENCY for s in (wall[c], inner[c]))]
    finally:
        with contextlib.suppress(BenchError):
            await h.call("process_kill", {"sandboxId": sid, "processId": started["processId"]})


# -- report ----------------------------------------------------------------------------------
@benchmark("scrape", "scrape: in a given sandbox vs in a throw-away one, cold or from the warm pool", default_n=5)
async def bench_scrape(h: Harness, n: int) -> list[Series]:
    """What the throw-away sandbox of a scrape without sandboxId costs: the same page (the sandbox's own
    agent's /healthz, the one page a fresh sandbox can load) read with sandboxId, without (a sandbox
    started for the call), and without on a server whose warm pool holds one sandbox with Chromium
    prelaunched (BOXWRIGHT_POOL_SIZE=1, BOXWRIGHT_POOL_BROWSER) — each timed once the pool has refilled."""
    h.require_tools("scrape")
    b = "scrape"
    sid, _ = await h.shared_sandbox()
    url = f"http://127.0.0.1:{AGENT_PORT}/healthz"
    given, job, pooled_job = Series.group(
        b,
        "ms",
        "scrape with sandboxId (a fresh browser context)",
        "scrape without sandboxId (sandbox started, used, removed)",
        "scrape without sandboxId, warm pool (sandbox claimed with Chromium up, used, removed)",
    )
    log = h.workdir / "scrape-pool-server.log"
    await h.call("scrape", {"sandboxId": sid, "url": url})  # launches that sandbox's browser: not counted
    env = {"BOXWRIGHT_POOL_SIZE": "1", "BOXWRIGHT_POOL_BROWSER": "true"}
    async with extra_server(h, "scrape-pool-server", h.server_command(), **env) as pooled:
        for i in range(n):
            ms, _ = await h.timed_call("scrape", {"sandboxId": sid, "url": url})
            given.add(ms)
            ms, _ = await h.timed_call("scrape", {"url": url})
            job.add(ms)
            await _until(lambda: log.read_text(errors="replace").count("ready (1 of 1)") > i, "the pool")  # noqa: B023
            await _until(lambda: _prewarmed(h), "the pooled sandbox's browser prewarm")
            ms, _ = await client_call(pooled, "scrape", {"url": url})
            pooled_job.add(ms)
            progress(
                f"{b} {i + 1}/{n}: given {given.samples[-1]:.0f} ms, throw-away {job.samples[-1]:.0f} ms, "
                f"from the pool {ms:.0f} ms"
            )
        claimed = log.read_text(errors="replace").count(" from the pool for job ")
        if claimed != n:  # a scrape that started its sandbox cold is not a pooled figure
            raise BenchError(f"the pool served {claimed} of {n} scrapes")
    return [given, job, pooled_job]


def fmt(value: float) -> str:
    return f"{value:.1f}" if abs(value) < 100 else f"{value:.0f}"


def markdown_table(series: list[Series]) -> str:
    rows = ["| benchmark | variant | n | p50 | p95 | min | max | unit |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for s in series:
        st = s.stats()
        if not st:
            continue
        cells = [fmt(st[k]) for k in ("p50", "p95", "min", "max")]
        rows.append(f"| {s.benchmark} | {s.variant} | {len(s.samples)} | {' | '.join(cells)} | {s.unit} |")
    return "\n".join(rows)


def machine_info(client: docker.DockerClient, image: str) -> dict[str, Any]:
    """Enough context to compare runs: hardware, OS, engine, image, commit."""
    info: dict[str, Any] = {"cpus": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release()}
    with contextlib.suppress(OSError):
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        info["memGiB"] = round(kib / 1024 / 1024, 1)
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                info["os"] = line.split("=", 1)[1].strip('"')
    with contextlib.suppress(Exception):
        info["docker"] = client.version().get("Version")
    with contextlib.suppress(Exception):
        info["image"] = {"tag": image, "id": client.images.get(image).short_id}
    with contextlib.suppress(Exception):
        root = Path(__file__).resolve().parent.parent
        info["commit"] = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    return info


# -- main ------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--iterations",
        "-n",
        action="append",
        default=[],
        metavar="N|NAME=N",
        help="iterations of every benchmark, or of one (repeatable); default: each its own (see --list)",
    )
    p.add_argument("--only", action="append", default=[], help="benchmark name(s), comma-separated or repeated")
    p.add_argument("--json", type=Path, default=None, help="also write the results (with raw samples) here")
    p.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = p.parse_args(argv)
    args.only = [name for item in args.only for name in item.split(",") if name]
    unknown = [name for name in args.only if name not in REGISTRY]
    if unknown:
        p.error(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(REGISTRY)}")
    args.n_all, args.n_by_name = None, {}
    for item in args.iterations:
        name, _, value = item.rpartition("=")
        if name and name not in REGISTRY:
            p.error(f"--iterations {item}: unknown benchmark {name}")
        if not value.isdigit() or int(value) < 1:
            p.error(f"--iterations {item}: expected a positive integer")
        if name:
            args.n_by_name[name] = int(value)
        else:
            args.n_all = int(value)
    return args


async def run_all(h: Harness, specs: list[BenchSpec], args: argparse.Namespace) -> dict[str, Any] | None:
    """The benchmarks in one MCP session; None when SIGTERM stopped the run (Ctrl-C raises instead)."""
    outcome: dict[str, Any] | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(_cancel_on_sigterm, tg.cancel_scope)
        outcome = await _run_specs(h, specs, args)
        tg.cancel_scope.cancel()
    return outcome


async def _cancel_on_sigterm(scope: anyio.CancelScope) -> None:
    """SIGTERM cancels the run at the next await, so the MCP session shuts down in order."""
    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
        async for _ in signals:
            progress("SIGTERM: stopping")
            scope.cancel()
            return


async def _run_specs(h: Harness, specs: list[BenchSpec], args: argparse.Namespace) -> dict[str, Any]:
    series: list[Series] = []
    skipped: dict[str, str] = {}
    failed: dict[str, str] = {}
    async with h.session():
        for spec in specs:
            n = args.n_by_name.get(spec.name) or args.n_all or spec.default_n
            progress(f"== {spec.name}: {spec.title} (n={n})")
            started = time.perf_counter()
            try:
                series += await spec.fn(h, n)
            except Skipped as exc:
                skipped[spec.name] = str(exc)
                progress(f"{spec.name}: SKIPPED — {exc}")
            except Exception as exc:  # one broken benchmark must not cost the others' figures
                failed[spec.name] = f"{type(exc).__name__}: {exc}"
                progress(f"{spec.name}: FAILED — {failed[spec.name]}")
                traceback.print_exc(file=sys.stderr)
            else:
                progress(f"{spec.name}: done in {time.perf_counter() - started:.0f} s")
        if h.server_start_ms is not None:
            s = Series("server", "boxwright serve: spawn → MCP initialized", "ms", [h.server_start_ms])
            series.append(s)
    return {"series": series, "skipped": skipped, "failed": failed}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        for spec in REGISTRY.values():
            print(f"{spec.name:20} n={spec.default_n:<3} {spec.title}")
        return 0
    specs = [REGISTRY[name] for name in args.only] if args.only else list(REGISTRY.values())

    # Outside the event loop SIGTERM acts like Ctrl-C; inside it, _cancel_on_sigterm takes over.
    def _interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _interrupt)
    workdir = Path(tempfile.mkdtemp(prefix="boxwright-bench-"))
    run_id = secrets.token_hex(4)
    h = Harness(run_id, workdir)
    outcome: dict[str, Any] | None = None
    meta: dict[str, Any] = {}
    try:
        progress(f"namespace {h.namespace}, image {h.settings.image}, state {h.settings.state_dir}")
        # Build or check the image up front (as `boxwright image build --if-needed`), so no
        # rebuild can start in the middle of a measurement.
        ensure_image(h.docker, h.settings, progress=progress)
        meta = machine_info(h.docker, h.settings.image)
        others = [c.name for c in h.docker.containers.list() if c.labels.get(labels.NAMESPACE) != h.namespace]
        if others:
            progress(f"note: {len(others)} other containers are running on this engine (may add noise)")
        meta.update({"namespace": h.namespace, "date": datetime.now(UTC).isoformat(timespec="seconds")})
        meta["command"] = " ".join(["python", "benchmarks/bench.py", *(argv if argv is not None else sys.argv[1:])])
        meta["otherContainersRunning"] = len(others)
        meta["loadavgAtStart"] = [round(x, 2) for x in os.getloadavg()]
        outcome = anyio.run(run_all, h, specs, args)
    except KeyboardInterrupt:
        pass
    except Exception:
        if h.server_log.exists():
            tail = h.server_log.read_text(errors="replace").splitlines()[-30:]
            progress("server log tail:\n" + "\n".join(tail))
        raise
    finally:
        # A second Ctrl-C must not cut the cleanup short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            h.sweep()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if outcome is None:
        progress("interrupted: no results")
        return 130

    meta["loadavgAtEnd"] = [round(x, 2) for x in os.getloadavg()]
    series: list[Series] = outcome["series"]
    print(markdown_table(series))
    if outcome["skipped"] or outcome["failed"]:
        print()
    for name, why in outcome["skipped"].items():
        print(f"- {name}: skipped — {why}")
    for name, why in outcome["failed"].items():
        print(f"- {name}: FAILED — {why}")
    if args.json:
        payload = {
            "meta": meta,
            "results": [{**asdict(s), "n": len(s.samples), **s.stats()} for s in series],
            "skipped": outcome["skipped"],
            "failed": outcome["failed"],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
        progress(f"wrote {args.json}")
    return 1 if outcome["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
