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
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from rpc.models.browser import MAX_BROWSER_TIMEOUT_MS, ContextOptions, origin_of
from sandbox_image.browser.background import quietly

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Request, Route

log = logging.getLogger("boxwright.agent.browser")

# Answers that may stream for as long as the page is open: route.fetch would wait for their end.
STREAMED = frozenset({"media", "eventsource", "websocket"})
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


async def install(context: BrowserContext, options: ContextOptions) -> None:
    """Add `options.headers` to every request of `context` to `options.headersOrigin`."""
    given, origin = options.headers, options.headersOrigin
    if not given or origin is None:
        return
    given = {name.lower(): value for name, value in given.items()}

    async def handle(route: Route, request: Request) -> None:
        if request.resource_type in STREAMED or not _to_site(request, origin):
            await quietly(route.fallback())
            return
        sent = {**request.headers, **given}
        if "cookie" in given and "cookie" in request.headers:  # the given cookie first: a server takes the first
            sent["cookie"] = f"{given['cookie']}; {request.headers['cookie']}"
        try:
            answer = await route.fetch(headers=sent, max_redirects=0, timeout=MAX_BROWSER_TIMEOUT_MS)
        except Exception as exc:  # refused, unresolved, timed out, or the context closing
            log.debug("request with headers failed: %s", type(exc).__name__)
            if request.method in RETRIED:
                await quietly(route.fallback())
            else:
                await quietly(route.abort("failed"))
            return
        await quietly(route.fulfill(response=answer))

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
