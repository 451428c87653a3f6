"""The caller's request headers (`headers`), sent to one site only (`headersOrigin`): a scrape's page's own
site, or the one a browser session names.

Playwright can add headers two ways and neither fits: `extra_http_headers` sends them to every site a page
touches (an API token handed to each ad server and CDN), and a route's `fallback(headers=…)` keeps them on
the redirects the request leads to (measured: a 302 from the site to another one took the Authorization
header along). So a request to that site is made here instead, through the context's own request client
(`route.fetch`: its cookies, certificates and HTTP credentials), with the headers added and redirects not
followed; the browser gets the answer as it came (`route.fulfill`), and a redirect in it is followed by the
browser as a new request that carries none of the headers — the header goes nowhere the caller did not
name. A Cookie given joins the jar's cookies on the way out and never enters the jar, so it is not saved
into a login profile. Kinds whose answer may never end (media streams, event streams, sockets) are left to
the browser, without the headers; so is a request the client could not make (the browser makes it and
reports its own failure). A fulfilled document has no address of its own, so Chromium's Local Network Access
would treat a local site's page as a public one's: the site gets that permission back when its name
resolves to loopback or private addresses only.

Headers are secrets (a bearer token, a session cookie): never logged.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from rpc.models.browser import MAX_BROWSER_TIMEOUT_MS, ContextOptions, origin_of
from sandbox_image.browser.background import quietly

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, HttpCredentials, Playwright, Request, Route

log = logging.getLogger("boxwright.agent.browser")

# Answers that may stream for as long as the page is open: route.fetch would wait for their end.
STREAMED = frozenset({"media", "eventsource", "websocket"})
# Requests to the site at once, as a browser opens connections to one host over HTTP/1.1 (the request
# client would open one per request: a page of 200 pictures, 200 connections to its site).
CONNECTIONS = 6
RETRIED = frozenset({"GET", "HEAD"})  # safe to let the browser make again after the client failed
# Chromium's Local Network Access: a document that came through route.fulfill has no address, so the
# browser takes it for a public site's and refuses its requests to loopback and private addresses. A site
# that is itself local gets the permission back (its own documents had it); a public one does not.
LOCAL_NETWORK = "local-network-access"
RESOLVE_S = 2.0


def _to_site(request: Request, origin: str) -> bool:
    try:
        return origin_of(request.url) == origin
    except ValueError:  # data:, blob:, about:
        return False


async def install(context: BrowserContext, options: ContextOptions, playwright: Playwright | None = None) -> None:
    """Add `options.headers` to every request of `context` to `options.headersOrigin`."""
    given, origin = options.headers, options.headersOrigin
    if not given or origin is None:
        return
    given = {name.lower(): value for name, value in given.items()}
    fetch = _fetcher(options, origin, playwright)
    connections = asyncio.Semaphore(CONNECTIONS)

    async def handle(route: Route, request: Request) -> None:
        if request.resource_type in STREAMED or not _to_site(request, origin):
            await quietly(route.fallback())
            return
        sent = {**request.headers, **given}
        if "cookie" in given and "cookie" in request.headers:  # the given cookie first: a server takes the first
            sent["cookie"] = f"{given['cookie']}; {request.headers['cookie']}"
        try:
            async with connections:
                answer = await fetch(route, request, sent)
        except Exception as exc:  # refused, unresolved, timed out, or the context closing
            log.debug("request with headers failed: %s", type(exc).__name__)
            if request.method in RETRIED:
                await quietly(route.fallback())
            else:
                await quietly(route.abort("failed"))
            return
        await quietly(route.fulfill(**answer))

    await context.route("**/*", handle)
    if await _local(origin):
        await context.grant_permissions([LOCAL_NETWORK], origin=origin)


Fetch = Callable[["Route", "Request", dict[str, str]], Awaitable[dict[str, Any]]]


def _fetcher(options: ContextOptions, origin: str, playwright: Playwright | None) -> Fetch:
    """How a request is made (its answer as route.fulfill's arguments): by the context's own request client;
    for an https site on loopback — whose certificate the browser takes whatever it is (launch.LAUNCH_ARGS),
    and that client would refuse as self-signed — by a client as lenient, for that one request: made and
    gone with it, so it keeps no cookie the page may since have dropped (the browser's cookies travel in the
    request's own headers)."""

    async def own(route: Route, _request: Request, sent: dict[str, str]) -> dict[str, Any]:
        return {"response": await route.fetch(headers=sent, max_redirects=0, timeout=MAX_BROWSER_TIMEOUT_MS)}

    parts = urlsplit(origin)
    if playwright is None or options.skipTlsVerification or parts.scheme != "https" or not _loopback(parts.hostname):
        return own
    auth = options.httpAuth
    credentials: HttpCredentials | None = None
    if auth is not None and auth.origin == origin:
        credentials = {"username": auth.username, "password": auth.password, "origin": origin}

    async def lenient(_route: Route, request: Request, sent: dict[str, str]) -> dict[str, Any]:
        client = await playwright.request.new_context(ignore_https_errors=True, http_credentials=credentials)
        try:
            got = await client.fetch(request, headers=sent, max_redirects=0, timeout=MAX_BROWSER_TIMEOUT_MS)
            return {"status": got.status, "headers": got.headers, "body": await got.body()}  # before it goes
        finally:
            await quietly(client.dispose())

    return lenient


def _loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


async def _local(origin: str) -> bool:
    """Whether every address the site's name has is on this machine or a private network."""
    host = urlsplit(origin).hostname or ""
    try:
        async with asyncio.timeout(RESOLVE_S):
            found = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, TimeoutError):
        return False
    addresses = {ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found}
    return bool(addresses) and all(a.is_loopback or a.is_private or a.is_link_local for a in addresses)
