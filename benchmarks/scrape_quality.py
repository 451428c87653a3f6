"""Main-content quality of `scrape` on WCXB pages, side by side with every installed extractor.

Run by hand (needs the `bench` extra, Chromium at /usr/bin/chromium, and for some baselines a
Python 3.12 and node modules; see docs/scrape-quality.md):

    .venv/bin/python benchmarks/scrape_quality.py render            # render + annotate once, cached
    .venv/bin/python benchmarks/scrape_quality.py score             # our engine + baselines, table
    .venv/bin/python benchmarks/scrape_quality.py score --split test --corpus /path/to/wcxb/test

Pages are served on 127.0.0.1 by this script and Chromium may reach nothing else: every request to
another host is aborted and every hostname but 127.0.0.1 resolves to nothing, so no page's
original address is ever fetched. Scores are WCXB's: word-level precision / recall / F1 between the
extracted text (markdown reduced to plain text) and the ground truth, averaged over pages, overall
and per page type.

Runners (how a page becomes our engine's output):
- `offline`: the host's Chromium renders each page, annotate.js marks it, the result is cached
  under --cache; our engine then runs on the cached annotated HTML (fast iterations).
- `mcp`: scrape each page through the real `scrape` MCP tool (`boxwright serve` over stdio), in a
  sandbox with network mode `none` that serves the corpus itself on its loopback — the whole path a
  user's call takes, timed per call (`score --runner mcp`; Docker and the sandbox image needed).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import os
import queue
import re
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from aiohttp import web  # noqa: E402

DEFAULT_CORPUS = Path(os.environ.get("WCXB_CORPUS", ROOT.parent / "shared/corpora/wcxb-dev-300"))
DEFAULT_CACHE = Path(os.environ.get("SCRAPE_QUALITY_CACHE", "/work/cache-extract"))
PAGE_TYPES = ("article", "service", "forum", "product", "collection", "listing", "documentation")
# Every hostname but loopback resolves to nothing: no DNS query and no connection leaves the machine.
ISOLATION_ARGS = ("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",)


# ---------------------------------------------------------------------------------------------
# Corpus and scoring
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    file_id: str
    page_type: str
    url: str
    html_path: Path
    main_content: str

    def html(self) -> str:
        with gzip.open(self.html_path, "rt", encoding="utf-8", errors="replace") as f:
            return f.read()


def load_corpus(corpus: Path, only: Iterable[str] | None = None) -> list[Page]:
    """Pages of a WCXB directory (html/, ground-truth/); the page type comes from the ground truth."""
    wanted = set(only) if only else None
    pages = []
    for gt_file in sorted((corpus / "ground-truth").glob("*.json")):
        if wanted is not None and gt_file.stem not in wanted:
            continue
        data = json.loads(gt_file.read_text(encoding="utf-8"))
        page_type = ((data.get("_internal") or {}).get("page_type") or {}).get("primary", "article")
        pages.append(
            Page(
                file_id=gt_file.stem,
                page_type="collection" if page_type == "category" else page_type,
                url=data.get("url") or "",
                html_path=corpus / "html" / f"{gt_file.stem}.html.gz",
                main_content=(data.get("ground_truth") or {}).get("main_content") or "",
            )
        )
    return pages


_WORD = re.compile(r"\w+")
# A version segment of a documentation URL (/docs/18/, /docs/current/, /en/stable/): two versions of a
# reference page are one document for deciding what training may not see.
_VERSION_SEGMENT = re.compile(r"/(?:v?\d+(?:\.\d+)+|v\d+|\d{1,2}|current|stable|latest|devel|dev)(?=/)", re.IGNORECASE)


def document_key(url: str) -> str:
    """Host (without www.), path with version segments ignored, and query: the same page however snapshotted."""
    parts = urlsplit(url)
    if not parts.hostname:
        return ""
    path = _VERSION_SEGMENT.sub("/*", parts.path).rstrip("/")
    return parts.hostname.removeprefix("www.") + path + (f"?{parts.query}" if parts.query else "")


def word_prf(predicted: str, reference: str) -> tuple[float, float, float]:
    """WCXB's metric: lower-cased \\w+ tokens, multiset overlap."""
    pred = Counter(_WORD.findall(predicted.lower()))
    ref = Counter(_WORD.findall(reference.lower()))
    if not ref:
        return (1.0, 1.0, 1.0) if not pred else (0.0, 0.0, 0.0)
    if not pred:
        return (0.0, 0.0, 0.0)
    overlap = sum((pred & ref).values())
    p, r = overlap / sum(pred.values()), overlap / sum(ref.values())
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


@dataclass
class Scores:
    """Per-page scores of one system."""

    per_page: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)
    failures: int = 0

    def summary(self, pages: list[Page]) -> dict[str, dict[str, float]]:
        groups: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
        for page in pages:
            prf = self.per_page.get(page.file_id, (0.0, 0.0, 0.0))
            groups["overall"].append(prf)
            groups[page.page_type].append(prf)
        return {
            name: {
                "n": len(v),
                "p": statistics.fmean(x[0] for x in v),
                "r": statistics.fmean(x[1] for x in v),
                "f1": statistics.fmean(x[2] for x in v),
            }
            for name, v in groups.items()
        }


# ---------------------------------------------------------------------------------------------
# Serving and rendering (the offline runner)
# ---------------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def serve(pages: dict[str, Page]) -> AsyncIterator[str]:
    """Serve the corpus on 127.0.0.1 (an ephemeral port): /p/<file_id>; anything else is a 404."""

    async def handler(request: web.Request) -> web.Response:
        page = pages.get(request.match_info["file_id"])
        if page is None:
            raise web.HTTPNotFound()
        return web.Response(text=page.html(), content_type="text/html", charset="utf-8")

    app = web.Application()
    app.router.add_get("/p/{file_id}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def cache_path(cache: Path, split: str, file_id: str) -> Path:
    return cache / "render" / split / f"{file_id}.json.gz"


async def render_corpus(pages: list[Page], cache: Path, split: str, concurrency: int, force: bool) -> None:
    """Render and annotate each page once with the host's Chromium; the result is cached."""
    from playwright.async_api import Route, async_playwright

    from sandbox_image.browser.launch import LAUNCH_ARGS, VIEWPORT
    from sandbox_image.scrape.annotate import annotate_page
    from sandbox_image.scrape.settle import settle

    todo = [p for p in pages if force or not cache_path(cache, split, p.file_id).exists()]
    print(f"rendering {len(todo)} of {len(pages)} pages ({split}) into {cache}", file=sys.stderr)
    if not todo:
        return
    by_id = {p.file_id: p for p in pages}
    async with serve(by_id) as base, async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=os.environ.get("BOXWRIGHT_CHROMIUM", "/usr/bin/chromium"),
            args=[*LAUNCH_ARGS, *ISOLATION_ARGS],
            headless=True,
        )

        async def only_loopback(route: Route) -> None:
            if route.request.url.startswith(base + "/"):
                await route.continue_()
            else:
                await route.abort("blockedbyclient")

        queue: asyncio.Queue[Page] = asyncio.Queue()
        for page in todo:
            queue.put_nowait(page)
        done = 0

        async def worker() -> None:
            nonlocal done
            while not queue.empty():
                page = queue.get_nowait()
                context = await browser.new_context(viewport=VIEWPORT, service_workers="block")
                await context.route("**/*", only_loopback)
                tab = await context.new_page()
                started = time.perf_counter()
                record: dict[str, Any] = {"file_id": page.file_id, "url": page.url}
                try:
                    await tab.goto(f"{base}/p/{page.file_id}", wait_until="load", timeout=20_000)
                    await settle(tab, max_ms=3000)
                    try:
                        annotated = await annotate_page(tab)
                    except Exception:  # a script navigated the page meanwhile: read the page it went to
                        await tab.wait_for_load_state("load", timeout=10_000)
                        await settle(tab, max_ms=3000)
                        annotated = await annotate_page(tab)
                    record.update(
                        annotated=annotated.html,
                        title=annotated.title,
                        lang=annotated.lang,
                        stats=annotated.stats,
                        width=annotated.width,
                        height=annotated.height,
                    )
                except Exception as exc:  # a page that breaks the renderer is recorded, not fatal
                    record["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                record["render_ms"] = round((time.perf_counter() - started) * 1000)
                await context.close()
                path = cache_path(cache, split, page.file_id)
                path.parent.mkdir(parents=True, exist_ok=True)
                with gzip.open(path, "wt", encoding="utf-8") as f:
                    json.dump(record, f)
                done += 1
                if done % 25 == 0:
                    print(f"  {done}/{len(todo)}", file=sys.stderr)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        await browser.close()


def load_rendered(cache: Path, split: str, file_id: str) -> dict[str, Any] | None:
    path = cache_path(cache, split, file_id)
    if not path.exists():
        return None
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


# ---------------------------------------------------------------------------------------------
# Baselines: every installed extractor on the page's own HTML, in worker processes
# ---------------------------------------------------------------------------------------------

HERE = Path(__file__).resolve().parent
PY311_BASELINES = (
    "trafilatura",
    "trafilatura-recall",
    "trafilatura-precision",
    "readability-lxml",
    "justext",
    "goose3",
    "newspaper4k",
    "boilerpy3",
    "resiliparse",
    "readabilipy",
    "trafilaturacore",
    "html-text (full page)",
    "inscriptis (full page)",
)
PY312_BASELINES = ("rs-trafilatura", "magic-html")
NODE_BASELINES = ("mozilla-readability", "defuddle")


def outputs_path(cache: Path, split: str, system: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", system).strip("_")
    return cache / "out" / split / f"{safe}.jsonl"


def load_outputs(cache: Path, split: str, system: str) -> dict[str, dict[str, Any]]:
    path = outputs_path(cache, split, system)
    if not path.exists():
        return {}
    answers = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        answer = json.loads(line)
        answers[answer["id"]] = answer
    return answers


# Worker pages per process: jsdom's heap grows page after page (8 GB after ~230 dev-rest pages,
# round 28), so a worker is replaced after this many pages.
WORKER_PAGES = 100
# Past a page's in-worker timeouts (each worker bounds a system at 30 s) plus this grace, the worker
# is taken to hang (jsdom's synchronous parse cannot be interrupted from inside) and is killed; the
# page scores 0 for the systems that did not answer. Generous: Defuddle's slowest dev-rest page
# (2923, a shop's category page) takes 52 s of synchronous parsing on a busy machine and answers.
WORKER_GRACE_S = 90.0


def run_worker(
    command: list[str],
    systems: tuple[str, ...],
    pages: list[Page],
    cache: Path,
    split: str,
    env: dict[str, str] | None = None,
    page_deadline_s: float | None = None,
    pages_per_worker: int = WORKER_PAGES,
) -> None:
    """Run a worker over the pages whose outputs are not cached yet; answers are appended.

    One page is in flight at a time, so a worker that hangs on a page is killed at that page's
    deadline and a fresh one carries on from the next page; workers are also replaced every
    `pages_per_worker` pages so a leaking one never slows the run down."""
    missing = [p for p in pages if any(p.file_id not in load_outputs(cache, split, s) for s in systems)]
    if not missing:
        return
    print(f"{' '.join(systems)}: {len(missing)} pages", file=sys.stderr)
    outputs_path(cache, split, systems[0]).parent.mkdir(parents=True, exist_ok=True)
    files = {s: outputs_path(cache, split, s).open("a", encoding="utf-8") for s in systems}
    import scrape_baselines  # beside this file; its workers' own bound on one system

    deadline_s = page_deadline_s or scrape_baselines.TIMEOUT_S * len(systems) + WORKER_GRACE_S
    try:
        for start in range(0, len(missing), pages_per_worker):
            todo = list(missing[start : start + pages_per_worker])
            while todo:
                todo = _worker_batch(command, systems, todo, files, deadline_s, env)
    finally:
        for f in files.values():
            f.close()


def _worker_batch(
    command: list[str],
    systems: tuple[str, ...],
    pages: list[Page],
    files: dict[str, TextIO],
    deadline_s: float,
    env: dict[str, str] | None,
) -> list[Page]:
    """One worker process over `pages`, a page at a time; returns the pages it did not reach
    (after it hung or died, with the page it was on recorded as failed)."""
    proc = subprocess.Popen(
        [*command, *systems],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    stdout = proc.stdout

    def read() -> None:  # in a thread: so the wait for an answer can end at a deadline
        for line in stdout:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        for n, page in enumerate(pages):
            pending = set(systems)
            try:
                proc.stdin.write(json.dumps({"id": page.file_id, "path": str(page.html_path), "url": page.url}) + "\n")
                proc.stdin.flush()
            except OSError:  # the worker is gone: this page fails below, a new worker takes the rest
                pass
            until = time.monotonic() + deadline_s
            while pending:
                try:
                    line = lines.get(timeout=max(0.0, until - time.monotonic()))
                    why = "worker exited"  # if its output has ended
                except queue.Empty:
                    line, why = None, "no answer in time: worker killed"
                if line is None:
                    for system in sorted(pending):
                        _keep(files, {"id": page.file_id, "system": system, "error": why})
                    print(f"{page.file_id}: {why}; a new worker takes the rest", file=sys.stderr)
                    return pages[n + 1 :]
                answer = json.loads(line)
                pending.discard(answer["system"])
                _keep(files, answer)
        return []
    finally:
        proc.kill()
        proc.wait()
        reader.join(timeout=5)  # the pipe ends with the process
        for pipe in (proc.stdin, stdout):
            with contextlib.suppress(OSError):
                pipe.close()


def _keep(files: dict[str, TextIO], answer: dict[str, Any]) -> None:
    """Append an answer to its system's cache file at once, so a run cut short keeps it."""
    files[answer["system"]].write(json.dumps(answer) + "\n")
    files[answer["system"]].flush()


def run_baselines(
    pages: list[Page],
    cache: Path,
    split: str,
    python312: str | None,
    node_modules: str | None,
    only: list[str] | None = None,
) -> list[str]:
    """Run every baseline that can run here (or those in `only`); returns the names run."""
    worker = str(HERE / "scrape_baselines.py")
    groups: list[tuple[list[str], tuple[str, ...], dict[str, str] | None, str]] = [
        ([sys.executable, worker, "worker"], PY311_BASELINES, None, ""),
        ([python312 or "", worker, "worker"], PY312_BASELINES, None, "" if python312 else "no --python312"),
        (
            ["node", str(HERE / "node_worker.js")],
            NODE_BASELINES,
            # jsdom's heap grows page after page: at Node's default limit the worker ran out of it after
            # ~160 dev-300 pages (round 14). A limit already in NODE_OPTIONS wins.
            {
                "NODE_PATH": node_modules or "",
                "NODE_OPTIONS": os.environ.get("NODE_OPTIONS", "--max-old-space-size=12288"),
            },
            "" if node_modules else "no --node-modules",
        ),
    ]
    ran: list[str] = []
    for command, systems, env, missing in groups:
        chosen = tuple(s for s in systems if not only or s in only)
        if not chosen:
            continue
        if missing:
            print(f"{missing}: skipping {', '.join(chosen)}", file=sys.stderr)
            continue
        run_worker(command, chosen, pages, cache, split, env=env)
        ran += chosen
    return ran


# ---------------------------------------------------------------------------------------------
# Our engine (runners) and the report
# ---------------------------------------------------------------------------------------------

# WCXB's published whole-dev-split figures (1,497 pages), for systems that cannot run here.
PUBLISHED = {
    "rs-trafilatura (published, full dev)": {
        "overall": 0.859,
        "article": 0.932,
        "documentation": 0.932,
        "service": 0.844,
        "forum": 0.808,
        "collection": 0.716,
        "listing": 0.707,
        "product": 0.641,
    },
    "trafilatura (published, full dev)": {
        "overall": 0.791,
        "article": 0.926,
        "documentation": 0.888,
        "service": 0.763,
        "forum": 0.585,
        "collection": 0.553,
        "listing": 0.589,
        "product": 0.567,
    },
}


@dataclass
class Output:
    """What a runner made of one page: markdown (scored after reduction to text) and its cost."""

    markdown: str
    seconds: float
    fallback: bool = False
    source: str = ""
    error: str = ""


def run_offline(
    pages: list[Page], cache: Path, split: str, only_main_content: bool = True, reuse_prepared: bool = False
) -> dict[str, Output]:
    """Our engine on the cached annotated renders, given the server's HTML as the tool would be.

    reuse_prepared: take the voters' answers from the `prepare` cache (same document, same code,
    so the same result) instead of running them again; the timings then leave the voters out.
    """
    import scrape_train

    from sandbox_image.scrape.extract import extract_html

    outputs = {}
    for n, page in enumerate(pages, 1):
        rendered = load_rendered(cache, split, page.file_id) or {}
        voter_texts = None
        prepared = scrape_train.prep_path(cache, split, page.file_id)
        if reuse_prepared and prepared.exists():
            with gzip.open(prepared, "rt", encoding="utf-8") as f:
                voter_texts = json.load(f)["voters"]
        started = time.perf_counter()
        try:
            extracted = extract_html(
                rendered.get("annotated", ""),
                page.url,
                only_main_content=only_main_content,
                response_html=page.html(),
                lang=rendered.get("lang", ""),
                voter_texts=voter_texts,
            )
            outputs[page.file_id] = Output(
                extracted.markdown, time.perf_counter() - started, extracted.fallback, extracted.source
            )
        except Exception as exc:  # scored as an empty answer, and reported
            outputs[page.file_id] = Output("", time.perf_counter() - started, error=f"{type(exc).__name__}: {exc}")
        if n % 50 == 0:
            print(f"  ours: {n}/{len(pages)}", file=sys.stderr)
    return outputs


# Served inside the sandbox: /any/path?bw=<file_id> answers that page (gunzipped) — the page keeps its
# original path, which the engine's page-kind features read, and `bw` tells pages with the same path apart —
# and its original scheme: an https page is served over TLS (a self-signed certificate, which the sandbox's
# Chromium accepts on its own loopback only), so a page that sends itself to https when it finds itself on
# http (some do) stays where it is, as on its real origin.
SANDBOX_SERVER = """
import gzip, ssl, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        file_id = parse_qs(urlsplit(self.path).query).get("bw", [""])[0]
        try:
            body = gzip.open(f"pages/{file_id}.html.gz", "rb").read() if file_id.isalnum() else None
        except OSError:
            body = None
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
secure = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain("cert.pem", "key.pem")
secure.socket = context.wrap_socket(secure.socket, server_side=True)
threading.Thread(target=secure.serve_forever, daemon=True).start()
print("ready", flush=True)
server.serve_forever()
"""
SANDBOX_PORTS = {"http": 8000, "https": 8443}
SELF_SIGNED = (
    "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost"
    " -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout key.pem -out cert.pem 2>/dev/null"
)


def _sandbox_url(page: Page) -> str:
    from urllib.parse import urlsplit

    original = urlsplit(page.url)
    scheme = "https" if original.scheme == "https" else "http"
    return f"{scheme}://127.0.0.1:{SANDBOX_PORTS[scheme]}{original.path or '/'}?bw={page.file_id}"


async def _scrape_through_mcp(pages: list[Page], only_main_content: bool) -> dict[str, Output]:
    """One `boxwright serve` (stdio) in a namespace of its own, one sandbox with network mode `none` (the
    pages' own scripts, images and fonts cannot reach anything: only the corpus on its loopback), one
    `scrape` call per page; the sandbox is destroyed and the server stopped at the end."""
    import base64
    import secrets
    import tempfile

    from mcp import Client, StdioServerParameters

    boxwright = str(Path(sys.executable).with_name("boxwright"))
    state = tempfile.mkdtemp(prefix="scrape-bench-")
    env = {**os.environ, "BOXWRIGHT_NAMESPACE": f"bench-{secrets.token_hex(3)}", "BOXWRIGHT_STATE_DIR": state}
    env["BOXWRIGHT_LOG_LEVEL"] = "WARNING"

    async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        r = await client.call_tool(tool, args)
        text = r.content[0].text if r.content and r.content[0].type == "text" else ""
        if r.is_error:
            raise RuntimeError(text.split("\n", 1)[0])
        return r.structured_content or {}

    outputs: dict[str, Output] = {}
    async with Client(StdioServerParameters(command=boxwright, args=["serve"], env=env)) as client:
        sid = (await call(client, "sandbox_create", {"network": "none", "ttlSeconds": 4 * 3600}))["sandboxId"]
        try:
            for page in pages:
                data = base64.b64encode(page.html_path.read_bytes()).decode("ascii")
                path = f"pages/{page.file_id}.html.gz"
                await call(
                    client, "file_write", {"sandboxId": sid, "path": path, "content": data, "encoding": "base64"}
                )
            await call(client, "file_write", {"sandboxId": sid, "path": "serve.py", "content": SANDBOX_SERVER})
            code = f"{SELF_SIGNED} && python3 serve.py {SANDBOX_PORTS['http']} {SANDBOX_PORTS['https']}"
            started = await call(client, "code_run", {"sandboxId": sid, "language": "bash", "code": code,
                                                      "background": True})  # fmt: skip
            ready = await call(client, "process_output", {"sandboxId": sid, "processId": started["processId"],
                                                          "waitMs": 10_000})  # fmt: skip
            if "ready" not in ready["output"]:
                raise SystemExit(f"the corpus server did not start: {ready['output'][:500]}")
            for n, page in enumerate(pages, 1):
                args = {"url": _sandbox_url(page), "sandboxId": sid, "onlyMainContent": only_main_content}
                t0 = time.perf_counter()
                try:
                    out = await call(client, "scrape", args)
                    outputs[page.file_id] = Output(
                        out.get("markdown") or "", time.perf_counter() - t0, bool(out.get("fallback"))
                    )
                except Exception as exc:  # scored as an empty answer, and reported
                    outputs[page.file_id] = Output("", time.perf_counter() - t0, error=str(exc)[:300])
                if n % 25 == 0:
                    print(f"  mcp: {n}/{len(pages)}", file=sys.stderr)
        finally:
            await client.call_tool("sandbox_destroy", {"sandboxId": sid})
    return outputs


def run_mcp(
    pages: list[Page], cache: Path, split: str, only_main_content: bool = True, reuse_prepared: bool = False
) -> dict[str, Output]:
    """End to end through the scrape MCP tool: the corpus served from inside a sandbox, each page read by
    the sandbox's Chromium and our engine there, the markdown back over MCP (seconds = the whole call).
    Needs Docker and the sandbox image (BOXWRIGHT_IMAGE); the cache is used only to choose the pages."""
    return asyncio.run(_scrape_through_mcp(pages, only_main_content))


RUNNERS = {"offline": run_offline, "mcp": run_mcp}


def score_outputs(pages: list[Page], texts: dict[str, str]) -> Scores:
    scores = Scores()
    for page in pages:
        scores.per_page[page.file_id] = word_prf(texts.get(page.file_id, ""), page.main_content)
    return scores


def table(rows: dict[str, dict[str, dict[str, float]]], metric: str = "f1") -> str:
    """Markdown table: one row per system, overall then each page type."""
    columns = ["overall", *PAGE_TYPES]
    out = ["| system | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    best = {c: max((r.get(c, {}).get(metric, 0.0) for r in rows.values()), default=0.0) for c in columns}
    for name, summary in rows.items():
        cells = []
        for c in columns:
            value = summary.get(c, {}).get(metric)
            cell = "" if value is None else f"{value:.3f}"
            cells.append(f"**{cell}**" if value is not None and value >= best[c] - 1e-9 else cell)
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def score(args: argparse.Namespace, pages: list[Page]) -> dict[str, Any]:
    from sandbox_image.scrape.model import load_model
    from sandbox_image.scrape.plaintext import markdown_to_text

    pages = [p for p in pages if load_rendered(args.cache, args.split, p.file_id) is not None]
    counts = Counter(p.page_type for p in pages)
    print(f"{len(pages)} rendered pages: {dict(counts)}", file=sys.stderr)
    summaries: dict[str, dict[str, dict[str, float]]] = {}
    speed: dict[str, dict[str, float]] = {}
    per_page: dict[str, dict[str, Any]] = {}

    runner = RUNNERS[args.runner]
    ours = runner(pages, args.cache, args.split, reuse_prepared=args.reuse_prepared)
    texts = {fid: markdown_to_text(o.markdown) for fid, o in ours.items()}
    ours_scores = score_outputs(pages, texts)
    name = f"boxwright scrape ({args.runner})"
    summaries[name] = ours_scores.summary(pages)
    seconds = [o.seconds for o in ours.values()]
    speed[name] = {
        "mean_ms": 1000 * statistics.fmean(seconds),
        "median_ms": 1000 * statistics.median(seconds),
        "pages_per_s": len(seconds) / sum(seconds),
    }
    if args.runner == "offline":
        render_ms = [(load_rendered(args.cache, args.split, p.file_id) or {}).get("render_ms", 0) for p in pages]
        speed[name]["render_median_ms"] = statistics.median(render_ms)
    errors = {fid: o.error for fid, o in ours.items() if o.error}
    per_page[name] = {
        fid: {"prf": ours_scores.per_page[fid], "fallback": o.fallback, "source": o.source} for fid, o in ours.items()
    }

    for system in [*PY311_BASELINES, *PY312_BASELINES, *NODE_BASELINES]:
        answers = load_outputs(args.cache, args.split, system)
        if not answers:
            continue
        missing = [p.file_id for p in pages if p.file_id not in answers]
        if missing:
            print(f"{system}: no output for {len(missing)} pages (scored 0 there)", file=sys.stderr)
        scores = score_outputs(pages, {fid: a.get("text") or "" for fid, a in answers.items()})
        summaries[system] = scores.summary(pages)
        ms = [a["ms"] for a in answers.values() if "ms" in a]
        if ms:
            speed[system] = {"mean_ms": statistics.fmean(ms), "median_ms": statistics.median(ms)}
        per_page[system] = {fid: {"prf": prf} for fid, prf in scores.per_page.items()}
    if args.published:
        for label, figures in PUBLISHED.items():
            summaries[label] = {k: {"f1": v} for k, v in figures.items()}

    model = load_model()
    report = {
        "split": args.split,
        "corpus": str(args.corpus),
        "pages": len(pages),
        "page_types": dict(counts),
        "runner": args.runner,
        "reused_prepared_voters": args.reuse_prepared,
        "model": dict(model.info),
        "summaries": summaries,
        "speed": speed,
        "errors": errors,
        "per_page": per_page,
    }
    print(f"\n### F1 ({args.split}, {len(pages)} pages)\n")
    print(table(summaries, "f1"))
    for metric in ("p", "r"):
        print(f"\n### {'Precision' if metric == 'p' else 'Recall'}\n")
        print(table({k: v for k, v in summaries.items() if "published" not in k}, metric))
    print("\n### Speed (extraction only; ms per page)\n")
    for system, figures in speed.items():
        print(f"- {system}: " + ", ".join(f"{k} {v:.1f}" for k, v in figures.items()))
    if errors:
        print(f"\n{len(errors)} pages failed in our engine: {list(errors.items())[:5]}")
    return report


def main(argv: list[str] | None = None) -> int:
    import scrape_train  # for its defaults; it loads scikit-learn only when fitting

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["render", "baselines", "prepare", "train", "cv", "score"])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--split", default="dev300", help="name of the corpus in the cache")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--only", nargs="*", help="file ids to run (default: all)")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--force", action="store_true", help="render again even when cached")
    parser.add_argument(
        "--python312",
        default=os.environ.get("SCRAPE_QUALITY_PY312"),
        help="a CPython 3.12 with rs-trafilatura and magic-html",
    )
    parser.add_argument(
        "--node-modules",
        default=os.environ.get("SCRAPE_QUALITY_NODE_MODULES"),
        help="node_modules with @mozilla/readability, defuddle, jsdom",
    )
    parser.add_argument("--runner", choices=sorted(RUNNERS), default="offline")
    parser.add_argument("--systems", nargs="*", help="baselines: run only these (default: all)")
    parser.add_argument(
        "--reuse-prepared", action="store_true", help="score: reuse the voters' cached answers (quality only)"
    )
    parser.add_argument("--published", action="store_true", help="add WCXB's published rows to the table")
    parser.add_argument("--output", type=Path, help="where to write the JSON report (default: in the cache)")
    parser.add_argument(
        "--train-on",
        nargs="+",
        default=[],
        metavar="SPLIT=CORPUS",
        help="train: the prepared splits to learn from, e.g. dev-rest=/path/to/wcxb/dev-rest",
    )
    parser.add_argument(
        "--lexicon",
        action="store_true",
        help="train, cv: the block models also read the lexicon of block words, learnt nested from the labels"
        " (train writes lexicon.json; not the shipped recipe, round 40)",
    )
    parser.add_argument(
        "--structure",
        action="store_true",
        help="train: learn the block model that also reads the structure features (model_structure.json)",
    )
    parser.add_argument(
        "--selector",
        action="store_true",
        help="train: learn the per-page threshold selector (selector.json) instead of the block model",
    )
    parser.add_argument(
        "--held-out",
        nargs="+",
        default=[],
        metavar="SPLIT=CORPUS",
        help="cv: also answer these rendered, prepared splits with every fold's models (each page's F1 averaged"
        " over the folds and seeds): a held-out comparison of designs that does not hang on one retrain",
    )
    parser.add_argument(
        "--selector-seeds",
        type=int,
        default=scrape_train.SELECTOR_SEEDS,
        metavar="N",
        help="cv, train --selector: how many seeds' out-of-fold block probabilities the selector learns from",
    )
    parser.add_argument(
        "--save-folds",
        type=Path,
        metavar="DIR",
        help="cv: keep each seed's fitted fold models and selectors in DIR (seed-S.pkl)",
    )
    parser.add_argument(
        "--from-folds",
        type=Path,
        metavar="DIR",
        help="cv: answer with the fold models and selectors --save-folds kept (no refit): for a change"
        " made after the threshold choice, with the same features and candidates",
    )
    parser.add_argument(
        "--seeds",
        nargs="+",
        type=int,
        default=[0, 1, 2],
        help="cv: the classifiers' seeds (each seed is a whole cross-validation; figures are averaged)",
    )
    args = parser.parse_args(argv)
    if args.lexicon:
        scrape_train.LEXICON = True
    if args.command == "cv":
        return cv_command(args)
    pages = load_corpus(args.corpus, args.only)
    if not pages:
        parser.error(
            f"no pages in {args.corpus} (a WCXB directory with ground-truth/ and html/, or --only matched none):"
            " pass --corpus DIR or set WCXB_CORPUS"
        )
    if args.command == "render":
        asyncio.run(render_corpus(pages, args.cache, args.split, args.concurrency, args.force))
        return 0
    if args.command == "baselines":
        run_baselines(pages, args.cache, args.split, args.python312, args.node_modules, args.systems)
        return 0
    if args.command == "prepare":
        import scrape_train

        prepare_pages = [p for p in pages if load_rendered(args.cache, args.split, p.file_id) is not None]
        scrape_train.prepare(prepare_pages, args.cache, args.split, load_rendered)
        return 0
    if args.command == "train":
        return train_command(args)
    report = score(args, pages)
    output = args.output or args.cache / f"scrape-quality-{args.split}-{args.runner}.json"
    output.write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"\nreport: {output}", file=sys.stderr)
    return 0


def training_rows(args: argparse.Namespace) -> tuple[list[Any], list[Page], dict[str, str]]:
    """The prepared pages of --train-on's splits, their feature rows, and each page's split."""
    import scrape_train

    rows: list[Any] = []
    pages: list[Page] = []
    split_of: dict[str, str] = {}
    # A training page that is the same document as a page we are measured on (another snapshot or version of
    # it) is left out: it would put that page's answer, or another annotator's idea of it, into training.
    measured = [args.corpus, *(Path(spec.partition("=")[2]) for spec in args.held_out)]
    measured_keys = {document_key(p.url) for corpus in measured for p in load_corpus(corpus)} - {""}
    for spec in args.train_on:
        split, _, corpus = spec.partition("=")
        # Pages prepared (`prepare` command) so far: preparing is the slow part, run it on its own.
        ready = [p for p in load_corpus(Path(corpus)) if scrape_train.prep_path(args.cache, split, p.file_id).exists()]
        same = [p for p in ready if document_key(p.url) in measured_keys]
        if same:
            left_out = [p.file_id for p in same]
            print(f"{split}: left out of training, the same document as a measured page: {left_out}", file=sys.stderr)
            ready = [p for p in ready if p not in same]
        rows += [scrape_train.page_rows(p, args.cache, split, load_rendered) for p in ready]
        pages += ready
        split_of.update(dict.fromkeys((p.file_id for p in ready), split))
    if not rows:
        raise SystemExit(f"{args.command}: give --train-on SPLIT=CORPUS (rendered and prepared first)")
    return rows, pages, split_of


def pages_per_split(split_of: dict[str, str]) -> dict[str, int]:
    return dict(Counter(split_of.values()))


def cross_validate(
    args: argparse.Namespace, rows: list[Any], pages: list[Page], split_of: dict[str, str], seed: int
) -> tuple[Scores, Scores]:
    """One whole cross-validation by site (the folds of the selector's training): per fold, both block
    models and the selector are learnt from the other folds' pages alone, and the engine itself
    (extract_html with those models, then markdown reduced to text) answers each held-out page.

    The selector learns from the other folds' out-of-fold probabilities, which came from models that did
    see the held-out fold: one level of nesting less than a clean estimate, as cheap as `train` itself.

    Returned with the out-of-fold scores: the --held-out pages' scores, each page's precision, recall
    and F1 averaged over the folds' models (each trained on four fifths of the training pages).
    """
    import scrape_train

    from sandbox_image.scrape.extract import extract_html
    from sandbox_image.scrape.plaintext import markdown_to_text

    fitted = fitted_folds(args, rows, pages, seed)

    def answer(
        page: Page, models: tuple[Any, ...], selector: Any, words: dict[str, float], split: str = ""
    ) -> tuple[float, float, float]:
        split = split or split_of[page.file_id]
        rendered = load_rendered(args.cache, split, page.file_id) or {}
        with gzip.open(scrape_train.prep_path(args.cache, split, page.file_id), "rt", encoding="utf-8") as f:
            voter_texts = json.load(f)["voters"]
        extracted = extract_html(
            rendered.get("annotated", ""),
            page.url,
            response_html=page.html(),
            lang=rendered.get("lang", ""),
            models=models,
            selector=selector,
            voter_texts=voter_texts,
            lexicon=words,
        )
        return word_prf(markdown_to_text(extracted.markdown), page.main_content)

    held_out = held_out_pages(args)
    answers: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    scores = Scores()
    by_id = {p.file_id: p for p in pages}
    for fold in fitted:
        for fid in fold.test:
            scores.per_page[fid] = answer(by_id[fid], fold.models, fold.selector, fold.lexicon)
        for split, page in held_out:
            answers[page.file_id].append(answer(page, fold.models, fold.selector, fold.lexicon, split))
    held_out_scores = Scores()
    for fid, prfs in answers.items():
        held_out_scores.per_page[fid] = (
            statistics.fmean(p for p, _, _ in prfs),
            statistics.fmean(r for _, r, _ in prfs),
            statistics.fmean(f for _, _, f in prfs),
        )
    # A page without blocks (an app shell that rendered nothing, here 8 of dev-rest's) is in no fold; the
    # engine still answers it (its whole page, or nothing), the same for every design.
    for page in pages:
        if page.file_id not in scores.per_page:
            scores.per_page[page.file_id] = answer(page, fitted[0].models, None, fitted[0].lexicon)
    return scores, held_out_scores


@dataclass
class FittedFold:
    """One fold's block models, selector and lexicon, and the pages (file ids) they answer out of fold."""

    test: list[str]
    models: tuple[Any, ...]
    selector: Any
    lexicon: dict[str, float]


def fitted_folds(args: argparse.Namespace, rows: list[Any], pages: list[Page], seed: int) -> list[FittedFold]:
    """Each fold's models and selector for one seed: fitted here, or with --from-folds read back from
    --save-folds' file of an earlier run on the same pages (a rule applied after the threshold then
    costs minutes, not a refit; features and candidates must be the same as in that run)."""
    import pickle

    import scrape_train

    ids = [p.file_id for p in pages]
    if args.from_folds:
        path = args.from_folds / f"seed-{seed}.pkl"
        if not path.is_file():
            raise SystemExit(f"cv: no {path}: run cv --seeds {seed} --save-folds {args.from_folds} first")
        saved = pickle.loads(path.read_bytes())
        if saved["pages"] != ids or saved["selector_seeds"] != args.selector_seeds:
            raise SystemExit(f"cv: {args.from_folds} was fitted on other pages or selector seeds")
        return saved["folds"]
    folds = scrape_train.fold_models(rows, seed=seed)
    probabilities = scrape_train.selector_probabilities(rows, seed=seed, fitted=folds, sets=args.selector_seeds)
    out = []
    for fold in folds:
        train = [rows[i] for i in fold.train]
        selector = scrape_train.fit_selector(train, [[p[i] for i in fold.train] for p in probabilities], {}, seed)
        out.append(FittedFold([ids[i] for i in fold.test], fold.forests(), selector, fold.lexicon))
    if args.save_folds:
        args.save_folds.mkdir(parents=True, exist_ok=True)
        saved = {"pages": ids, "selector_seeds": args.selector_seeds, "folds": out}
        (args.save_folds / f"seed-{seed}.pkl").write_bytes(pickle.dumps(saved))
    return out


def held_out_pages(args: argparse.Namespace) -> list[tuple[str, Page]]:
    """(split, page) of every rendered and prepared page of --held-out's splits."""
    import scrape_train

    out = []
    for spec in args.held_out:
        split, _, corpus = spec.partition("=")
        out += [
            (split, p)
            for p in load_corpus(Path(corpus))
            if scrape_train.prep_path(args.cache, split, p.file_id).exists()
            and load_rendered(args.cache, split, p.file_id) is not None
        ]
    return out


def cached_baselines(cache: Path, pages: list[Page], split_of: dict[str, str]) -> dict[str, Scores]:
    """The baselines whose answers `baselines` cached for every page of the training splits, scored.

    The extractors are not trained, so their answers on these pages stand beside our out-of-fold
    ones: a comparison on four times the pages of dev-300 (rs-trafilatura's README calls WCXB's
    dev split its development set, so these pages are in its sample)."""
    out = {}
    for system in [*PY311_BASELINES, *PY312_BASELINES, *NODE_BASELINES]:
        answers: dict[str, dict[str, Any]] = {}
        for split in set(split_of.values()):
            answers.update(load_outputs(cache, split, system))
        if answers and all(p.file_id in answers for p in pages):
            out[system] = score_outputs(pages, {fid: a.get("text") or "" for fid, a in answers.items()})
    return out


def paired_differences(
    ours: dict[str, float], theirs: Scores, pages: list[Page], rounds: int = 2000
) -> dict[str, tuple[float, float, float]]:
    """Per column: mean of our F1 minus theirs over the same pages, and its 95% bootstrap interval."""
    import random

    rng = random.Random(0)
    out = {}
    for column in ["overall", *PAGE_TYPES]:
        diffs = [
            ours[p.file_id] - theirs.per_page[p.file_id][2]
            for p in pages
            if column in ("overall", p.page_type) and p.file_id in ours
        ]
        if not diffs:
            continue
        means = sorted(statistics.fmean(rng.choices(diffs, k=len(diffs))) for _ in range(rounds))
        out[column] = (statistics.fmean(diffs), means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1])
    return out


_CV_INPUT: tuple[argparse.Namespace, list[Any], list[Page], dict[str, str]] | None = None


def _cross_validate_seed(seed: int) -> tuple[Scores, Scores]:
    assert _CV_INPUT is not None
    return cross_validate(*_CV_INPUT, seed)


def cv_command(args: argparse.Namespace) -> int:
    """Cross-validation on the training splits (never the scored ones): how a design is chosen."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    global _CV_INPUT
    rows, pages, split_of = training_rows(args)
    used = pages_per_split(split_of)
    if args.held_out and not held_out_pages(args):
        raise SystemExit(f"cv: no rendered, prepared pages in --held-out {' '.join(args.held_out)} (SPLIT=CORPUS)")
    print(f"cv on {used}, seeds {args.seeds}", file=sys.stderr)
    # Forked workers inherit the rows already built (nothing large is pickled); each seed is independent.
    _CV_INPUT = (args, rows, pages, split_of)
    with ProcessPoolExecutor(max(1, min(args.concurrency, len(args.seeds))), mp_context=get_context("fork")) as pool:
        runs = list(pool.map(_cross_validate_seed, args.seeds))
    report: dict[str, Any] = {"trained_on": used, "seeds": args.seeds}
    report |= seed_report(
        f"Cross-validated F1 ({used}, 5 folds by site)",
        "Out-of-fold F1",
        [r for r, _ in runs],
        args,
        pages,
        split_of,
    )
    held_out = held_out_pages(args)
    if held_out:
        held_out_split = {p.file_id: s for s, p in held_out}
        report["held_out"] = seed_report(
            f"Held-out F1 ({pages_per_split(held_out_split)}, each page averaged over the 5 folds' models)",
            "Held-out F1",
            [h for _, h in runs],
            args,
            [p for _, p in held_out],
            held_out_split,
        )
    output = args.output or args.cache / "scrape-quality-cv.json"
    output.write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"\nreport: {output}", file=sys.stderr)
    return 0


def seed_report(
    title: str,
    ours_label: str,
    runs: list[Scores],
    args: argparse.Namespace,
    pages: list[Page],
    split_of: dict[str, str],
) -> dict[str, Any]:
    """Print and return per-seed and mean F1 beside the cached baselines, with paired differences."""
    summaries = {f"seed {s}": r.summary(pages) for s, r in zip(args.seeds, runs, strict=True)}
    columns = ["overall", *PAGE_TYPES]
    mean = {
        c: {m: statistics.fmean(v[c][m] for v in summaries.values()) for m in ("p", "r", "f1")}
        for c in columns
        if all(c in v for v in summaries.values())
    }
    summaries[f"mean of {len(runs)}"] = mean
    baselines = cached_baselines(args.cache, pages, split_of)
    summaries.update({name: scores.summary(pages) for name, scores in baselines.items()})
    print(f"\n### {title}\n")
    print(table(summaries, "f1"))
    ours = {fid: statistics.fmean(r.per_page[fid][2] for r in runs) for fid in runs[0].per_page}
    differences = {name: paired_differences(ours, scores, pages) for name, scores in baselines.items()}
    if differences:
        print(f"\n### {ours_label} (mean of the seeds) minus each baseline's, with a 95% paired bootstrap by page\n")
        for name, by_column in differences.items():
            cells = ", ".join(f"{c} {m:+.3f} [{lo:+.3f}, {hi:+.3f}]" for c, (m, lo, hi) in by_column.items())
            print(f"- {name}: {cells}")
    return {
        "summaries": summaries,
        "differences": differences,
        "per_page": {f"seed {s}": r.per_page for s, r in zip(args.seeds, runs, strict=True)},
    }


def train_command(args: argparse.Namespace) -> int:
    """Learn the block classifier (or with --selector the threshold selector) from other rendered splits
    (never the one being scored)."""
    import scrape_train

    from sandbox_image.scrape import candidates

    rows, _pages, split_of = training_rows(args)
    used = pages_per_split(split_of)
    if args.selector:
        selector_info = {
            "trained_on": used,
            "target": "word F1 gain of each threshold candidate over threshold 0.5",
            "probabilities": f"out-of-fold block model(s), {scrape_train.SELECTOR_FOLDS} folds grouped by site,"
            f" {args.selector_seeds} seeds (0, 1000, ...), each page once per seed",
            "repeats": f"a kept text of {candidates.REPEAT_WORDS}+ words kept once",
            "regressor": "sklearn HistGradientBoostingRegressor (defaults, random_state=0)",
            "margin": scrape_train.SELECTOR_MARGIN,
        }
        selector = scrape_train.train_selector(rows, selector_info, sets=args.selector_seeds)
        print(f"selector: {len(selector.trees)} trees on {len(selector.features)} features", file=sys.stderr)
        return 0
    info = {
        "trained_on": used,
        "blocks": sum(len(r.labels) for r in rows),
        "label_purity": scrape_train.LABEL_PURITY,
        "classifier": "sklearn HistGradientBoostingClassifier (defaults, random_state=0)",
        "features": "all, with structure.py's" if args.structure else "all but structure.py's (the v2 recipe)",
    }
    path = scrape_train.STRUCTURE_MODEL_PATH if args.structure else scrape_train.MODEL_PATH
    forest = scrape_train.train(rows, info, path, structure=args.structure)
    print(f"model: {len(forest.trees)} trees on {len(forest.features)} features; {info}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
