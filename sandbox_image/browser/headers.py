"""The caller's request headers (`headers`), sent to one site only (`headersOrigin`): a scrape's page's own
site, or the one a browser session names; and a file fetched again outside the page (a PDF, a feed) the
way the page's own requests go.

Playwright can add headers two ways and neither fits: `extra_http_headers` sends them to every site a page
touches (an API token handed to each ad server and CDN), and a route's `fallback(headers=…)` keeps them on
the redirects the request leads to (measured: a 302 from the site to another one took the Authorization
header along). So a request to that site is made here instead, through the context's own request client
(`route.fetch`: its cookies, certificates and HTTP credentials), with the headers added and redirects not
followed; the browser gets the answer as it came (`route.fulfill`), and a redirect in it is followed by the
browser as a new request that carries none of the headers — the header goes nowhere the caller did not
name. At most CONNECTIONS such requests run at once, as a browser's connections to one host. A Cookie given
goes before the browser's own cookies and never enters the jar, so it is not saved into a login profile.
Kinds whose answer may never end (media streams, event streams, sockets) are left to the browser, without
the headers; so is a request the client could not make (the browser makes it and reports its own failure).

Two things the browser does that its request client does not, done here: it takes any certificate on
loopback (launch.LAUNCH_ARGS: a dev server's self-signed one), so a request to an https site on loopback is
made by a client as lenient, made for that request and gone with it (it keeps no cookie the page may since
have dropped; the browser's cookies travel in the request's own headers); and a fulfilled document has no
address of its own, so Chromium's Local Network Access would treat a local site's page as a public one's:
the site gets that permission back when its name resolves to loopback or private addresses only.

Headers are secrets (a bearer token, a session cookie): never logged.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from rpc.models.browser import MAX_BROWSER_TIMEOUT_MS, ContextOptions, origin_of
from sandbox_image.browser.background import quietly
from sandbox_image.browser.launch import proxy_settings

if TYPE_CHECKING:
    from playwright.async_api import APIRequestContext, BrowserContext, HttpCredentials, Playwright, Request, Route

log = logging.getLogger("boxwright.agent.browser")

# Answers that may stream for as long as the page is open: route.fetch would wait for their end.
STREAMED = frozenset({"media", "eventsource", "websocket"})
# Requests to the site at once, as a browser opens connections to one host over HTTP/1.1 (the request
# client would open one per request: a page of 200 pictures, 200 connections to its site).
CONNECTIONS = 6
RETRIED = frozenset({"GET", "HEAD"})  # safe to let the browser make again after the client failed
# Chromium's Local Network Access permission (Playwright's name for it).
LOCAL_NETWORK = "local-network-access"
RESOLVE_S = 2.0
MAX_REDIRECTS = 20  # a file fetched again: hops followed, as the browser follows them


def _to_site(url: str, origin: str | None) -> bool:
    try:
        return origin is not None and origin_of(url) == origin
    except ValueError:  # data:, blob:, about:
        return False


def _lenient(options: ContextOptions, url: str) -> bool:
    """An https address on loopback, whose certificate the browser takes whatever it is."""
    parts = urlsplit(url)
    if options.skipTlsVerification or parts.scheme != "https":
        return False
    if parts.hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(parts.hostname or "").is_loopback
    except ValueError:
        return False


@asynccontextmanager
async def _client(
    context: BrowserContext, options: ContextOptions, playwright: Playwright | None, url: str
) -> AsyncIterator[APIRequestContext]:
    """The client a request to `url` is made by: the context's own, or one made for it (see the module)."""
    if playwright is None or not _lenient(options, url):
        yield context.request
        return
    auth = options.httpAuth
    credentials: HttpCredentials | None = None
    if auth is not None and auth.origin is not None and _to_site(url, auth.origin):
        credentials = {"username": auth.username, "password": auth.password, "origin": auth.origin}
    proxy = proxy_settings(options.proxy) if options.proxy is not None else None
    client = await playwright.request.new_context(ignore_https_errors=True, http_credentials=credentials, proxy=proxy)
    try:
        yield client
    finally:
        await quietly(client.dispose())


async def _cookie(context: BrowserContext, url: str, given: str, browser: str | None) -> str:
    """The given cookie first (a server takes the first of two alike), then the browser's own for `url`
    (the client adds none of its own to a request that has a Cookie header)."""
    if browser is None:
        browser = "; ".join(f"{c['name']}={c['value']}" for c in await context.cookies(url)) or None
    return f"{given}; {browser}" if browser else given


async def _sent(context: BrowserContext, options: ContextOptions, url: str, browser: dict[str, str]) -> dict[str, str]:
    """The headers of a request to `url`: the browser's, with the caller's when it is their site."""
    if not options.headers or not _to_site(url, options.headersOrigin):
        return browser
    given = {name.lower(): value for name, value in options.headers.items()}
    sent = {**browser, **given}
    if "cookie" in given:
        sent["cookie"] = await _cookie(context, url, given["cookie"], browser.get("cookie"))
    return sent


async def install(context: BrowserContext, options: ContextOptions, playwright: Playwright | None = None) -> None:
    """Add `options.headers` to every request of `context` to `options.headersOrigin`."""
    origin = options.headersOrigin
    if not options.headers or origin is None:
        return
    connections = asyncio.Semaphore(CONNECTIONS)

    async def handle(route: Route, request: Request) -> None:
        if request.resource_type in STREAMED or not _to_site(request.url, origin):
            await quietly(route.fallback())
            return
        try:
            async with connections:
                sent = await _sent(context, options, request.url, request.headers)
                async with _client(context, options, playwright, request.url) as client:
                    if client is context.request:
                        answer: dict[str, Any] = {
                            "response": await route.fetch(headers=sent, max_redirects=0, timeout=MAX_BROWSER_TIMEOUT_MS)
                        }
                    else:  # its answer read before the client goes
                        got = await client.fetch(request, headers=sent, max_redirects=0, timeout=MAX_BROWSER_TIMEOUT_MS)
                        answer = {"status": got.status, "headers": got.headers, "body": await got.body()}
        except Exception as exc:  # refused, unresolved, timed out, or the context closing
            log.debug("request with headers failed: %s", type(exc).__name__)
            await quietly(route.fallback() if request.method in RETRIED else route.abort("failed"))
            return
        await quietly(route.fulfill(**answer))

    await context.route("**/*", handle)
    if await _local(origin):
        await context.grant_permissions([LOCAL_NETWORK], origin=origin)


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


# -- a file fetched again, outside the page ----------------------------------------------------------------
@dataclass(frozen=True)
class Fetched:
    status: int
    headers: dict[str, str]
    url: str  # after the redirects
    body: bytes


class TooManyRedirects(Exception):
    pass


class TooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


async def get(
    context: BrowserContext, options: ContextOptions, playwright: Playwright | None, url: str, timeout_ms: float,
    limit: int,
) -> Fetched:  # fmt: skip
    """GET `url` as the page's own requests go — the context's cookies, the caller's headers on the hops to
    their site only, a loopback site's certificate taken as the browser takes it — redirects followed hop by
    hop; at most `limit` bytes of body (TooLarge past that, told by Content-Length when the server says)."""
    for _ in range(MAX_REDIRECTS + 1):
        sent = await _sent(context, options, url, {})
        async with _client(context, options, playwright, url) as client:
            response = await client.get(url, headers=sent or None, timeout=timeout_ms, max_redirects=0)
            try:
                location = response.headers.get("location")
                if 300 <= response.status < 400 and location:
                    url = urljoin(response.url, location)
                    continue
                length = response.headers.get("content-length", "")
                if length.isdigit() and int(length) > limit:
                    raise TooLarge(int(length))
                body = await response.body()
                if len(body) > limit:
                    raise TooLarge(len(body))
                return Fetched(response.status, response.headers, response.url, body)
            finally:
                await response.dispose()
    raise TooManyRedirects(url)
