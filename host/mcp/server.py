"""Builds the MCPServer and runs it over stdio or streamable HTTP."""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
from collections.abc import Callable, Iterator, Sequence

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from host import __version__
from host.config import Settings
from host.mcp import stdio
from host.mcp.auth import BearerAuthMiddleware, TokenStore
from host.mcp.caller import CallerResolver
from host.mcp.capabilities import offer_only_what_exists
from host.mcp.event_store import RETRY_INTERVAL_MS, EventLog, give_each_session_its_own_events
from host.mcp.hosts import CanonicalHost, is_loopback, transport_security
from host.mcp.registry import ToolSpec, build_tool
from host.mcp.request_limit import MAX_REQUEST_BYTES, RequestSizeLimit
from host.mcp.resources import register_resources
from host.mcp.sessions import limit_sessions_per_owner
from host.mcp.tools import browser, code, files, profiles, sandbox, scrape, templates
from host.sandboxes.models import Caller
from host.services import Services

log = logging.getLogger(__name__)

INSTRUCTIONS = """\
Boxwright gives you disposable, isolated computers (sandboxes). Call sandbox_create first; later \
tools act on that sandbox unless you pass another sandboxId. Run code with code_run (python or \
bash; background=true for servers), move data with file_read/file_write/file_list (paths relative \
to /workspace), browse with browser_goto then browser_snapshot (act on elements by their [ref_N] \
with browser_click/browser_type), and destroy the sandbox with sandbox_destroy when done. For multi-step \
browser jobs without step-by-step calls, run a template (list_task_templates, run_task_template, get_task_run). \
To read one web page as markdown, html, links or a screenshot, call scrape (no sandbox needed); to read the \
page a browser tab shows after you clicked or typed in it, call browser_scrape. \
For sites that need a login, open a session from a saved login profile (browser_sessions create with profileId; \
scrape takes profileId too), or hand a person the link from browser_live_view so they can log in (or solve a \
CAPTCHA) in your session themselves. Every result starts with a one-line summary followed by JSON; errors carry \
errorCode and recoverHint — follow the hint."""


TOOLSETS: dict[str, Callable[[Services], list[ToolSpec]]] = {
    "sandbox": lambda s: sandbox.tools(s.manager),
    "code": lambda s: code.tools(s.manager),
    "files": lambda s: files.tools(s.manager),
    "browser": lambda s: browser.tools(s.manager) + profiles.tools(s),
    "templates": lambda s: templates.tools(s.runs),
    "scrape": lambda s: scrape.tools(s.manager, s.jobs, s.profiles, s.readings),
}


def tool_specs(services: Services, toolsets: Sequence[str] | None = None) -> list[ToolSpec]:
    """The tools of the chosen toolsets (all by default); `sandbox` is always included."""
    chosen = set(toolsets or TOOLSETS) | {"sandbox"}
    unknown = chosen - set(TOOLSETS)
    if unknown:
        raise ValueError(f"unknown toolset(s) {sorted(unknown)}; choose from {sorted(TOOLSETS)}")
    return [spec for name, make in TOOLSETS.items() if name in chosen for spec in make(services)]


def build_server(services: Services, resolver: Callable[[Context], Caller]) -> MCPServer:
    tools = [build_tool(spec, resolver) for spec in tool_specs(services, services.settings.toolsets)]
    server = MCPServer("boxwright", title="Boxwright", version=__version__, instructions=INSTRUCTIONS, tools=tools)
    if "templates" in (services.settings.toolsets or TOOLSETS):
        register_resources(server, services.runs, resolver)  # run artifacts, owned like their runs
    return offer_only_what_exists(server)


async def _on_signal(action: Callable[[], None]) -> None:
    """SIGTERM/SIGINT end the server through its normal shutdown, which cleans up sandboxes."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for sig in signals:
            log.info("received %s: shutting down", sig.name)
            action()
            return


async def serve_stdio(services: Services) -> None:
    server = build_server(services, CallerResolver("stdio"))
    async with services.running(), anyio.create_task_group() as tg:
        tg.start_soon(_on_signal, tg.cancel_scope.cancel)
        await stdio.serve(server)  # returns when the client closes stdin
        tg.cancel_scope.cancel()


SHUTDOWN_GRACE_S = 10


class _UvicornServer(uvicorn.Server):
    """uvicorn re-raises SIGTERM after its shutdown, which would kill us before sandboxes are cleaned
    up; signals are handled by `_on_signal` instead."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def http_caller(services: Services) -> CallerResolver:
    """HTTP callers: the owner the authentication middleware verified for the request, at the server's HTTP
    trust level (remote by default)."""
    return CallerResolver("http", http_trust=services.settings.http_trust_level)


def _url_host(host: str) -> str:
    """How links name this server: a wildcard bind by the machine's name (set BOXWRIGHT_LIVE_VIEW_BASE_URL
    when people reach it by another), an IPv6 address in brackets."""
    if host in ("0.0.0.0", "::", ""):
        return socket.gethostname()
    return f"[{host}]" if ":" in host else host


def http_app(services: Services, *, host: str, port: int, tokens: TokenStore) -> tuple[Starlette, MCPServer]:
    server = build_server(services, http_caller(services))
    settings = services.settings
    # Host/Origin checks on every bind (raises ValueError for a bad list: serve_http reports it).
    security = transport_security(host, settings.allowed_hosts, settings.allowed_origins)
    # Resumable streams: a priming event and `retry` on every SSE response, missed events replayed.
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        host=host,
        transport_security=security,
        retry_interval=RETRY_INTERVAL_MS,
        max_request_body_size=MAX_REQUEST_BYTES,
    )
    give_each_session_its_own_events(server.session_manager, EventLog())
    limit_sessions_per_owner(server.session_manager, settings.max_sessions_per_owner)

    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "version": __version__})

    app.add_route("/healthz", healthz, methods=["GET"])
    # /mcp/ is served as /mcp, not redirected there: the router's redirect came before any Host check
    # (a foreign Host got a 307 to itself instead of 421), and clients configured with it save a round trip.
    [endpoint] = [r.app for r in app.router.routes if isinstance(r, Route) and r.path == "/mcp"]
    app.router.routes.append(Route("/mcp/", endpoint=endpoint))
    app.router.redirect_slashes = False
    # The live view's pages: the same Host/Origin checks; their own credentials (views.py), so the
    # bearer middleware lets them through (a person's browser cannot send a bearer token).
    app.router.routes.extend(services.live.serve_on(f"http://{_url_host(host)}:{port}", security))
    app.add_middleware(RequestSizeLimit)
    app.add_middleware(CanonicalHost)
    app.state.allowed_hosts = security.allowed_hosts
    # Always: it is the one place a request's identity comes from (owner `local` without tokens).
    app.add_middleware(BearerAuthMiddleware, tokens=tokens if len(tokens) else None, open_prefixes=("/live/",))
    return app, server


# Worded so that host.logs.Redact, which masks whatever follows "bearer" or "basic", leaves it whole.
NO_TOKENS_WARNING = (
    "no HTTP tokens configured: any local process can use this server "
    "(create one with `boxwright token add <owner>` to require tokens)"
)


async def serve_http(services: Services, *, host: str, port: int, tokens: TokenStore) -> None:
    if not len(tokens):
        if not is_loopback(host):
            raise SystemExit(
                f"refusing to serve on {host} without authentication: create a token with `boxwright token add <owner>`"
            )
        log.warning(NO_TOKENS_WARNING)
    try:
        app, _ = http_app(services, host=host, port=port, tokens=tokens)
    except ValueError as exc:
        names = f"{Settings.env_name('allowed_hosts')} / {Settings.env_name('allowed_origins')}"
        raise SystemExit(f"cannot serve: {exc} (see {names}, or --allowed-host / --allowed-origin)") from None
    log.info("accepting Host headers: %s", ", ".join(app.state.allowed_hosts))
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        ws="websockets-sansio",
        # A client holding its session's stream open (or a long call) kept a graceful stop waiting for
        # ever, sandboxes and all: past this, what is still open is cut and the shutdown goes on.
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
    )
    server = _UvicornServer(config)

    def stop() -> None:
        server.should_exit = True

    async with services.running(), anyio.create_task_group() as tg:
        tg.start_soon(_on_signal, stop)
        log.info("serving MCP over streamable HTTP at http://%s:%d/mcp", host, port)
        await server.serve()
        tg.cancel_scope.cancel()
