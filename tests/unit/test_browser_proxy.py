"""`proxy` (a context's requests through a proxy) against the real Chromium on this machine, with a proxy of
the test's own on loopback that answers every request itself — so the site's name (shop.test) is never
looked up and nothing leaves the machine: a page that arrives proves the proxy carried the request."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest
from pydantic import ValidationError

from rpc.errors import ErrorCode
from rpc.models.browser import ContextOptions
from sandbox_image.browser.errors import PROXY_HINT
from tests.unit.browser_harness import BrowserDriver
from tests.unit.test_request_headers import driver  # noqa: F401 (fixture: the agent's browser and scrape)

PASSWORD = "proxy-pw-5c1"
SITE = "http://shop.test/catalog"


@dataclass
class FakeProxy:
    """Answers each request itself: a 407 when it wants credentials and was not given them, else a page
    that says what it was asked for."""

    credentials: str | None = None  # "user:password" it asks for
    seen: list[tuple[str, str | None]] = field(default_factory=list)  # (request target, Proxy-Authorization)
    authorization: list[str | None] = field(default_factory=list)  # each request's Authorization (the site's)

    async def _head(self, reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str]]:
        lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        method, target = lines[0].split(" ")[:2]
        return (
            method,
            target,
            {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)},
        )

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            method, target, fields = await self._head(reader)
            auth = fields.get("proxy-authorization")
            wanted = f"Basic {base64.b64encode(self.credentials.encode()).decode()}" if self.credentials else None
            if wanted is not None and auth != wanted:
                self.seen.append((target, auth))
                writer.write(
                    b'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="proxy"\r\n'
                    b"Content-Length: 0\r\nConnection: close\r\n\r\n"
                )
                await writer.drain()
                return
            if method == "CONNECT":  # a tunnel (the request client's way): the request inside it is answered here
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                host = target
                method, target, fields = await self._head(reader)
                target = f"http://{host.removesuffix(':80')}{target}"
            self.seen.append((target, auth))
            self.authorization.append(fields.get("authorization"))
            page = f"<title>Via proxy</title><main><h1>Catalog</h1><p>The proxy answered for {target}.</p></main>"
            data = page.encode()
            head_out = f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len(data)}\r\n"
            writer.write((head_out + "Connection: close\r\n\r\n").encode() + data)
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@asynccontextmanager
async def serving(proxy: FakeProxy) -> AsyncIterator[str]:
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await server.wait_closed()


async def test_every_request_goes_through_the_proxy(driver: BrowserDriver) -> None:  # noqa: F811
    proxy = FakeProxy()
    async with serving(proxy) as server:
        read = await driver.call("scrape.page", url=SITE, proxy={"server": server})
    assert read["status"] == 200 and f"The proxy answered for {SITE}." in read["markdown"], read["markdown"]
    assert (SITE, None) in proxy.seen  # asked for the whole address, as a proxy is


async def test_headers_go_through_the_proxy_too(driver: BrowserDriver) -> None:  # noqa: F811
    """The requests made with the caller's headers (browser.headers: the context's request client) take the
    context's proxy as the browser's own do."""
    proxy = FakeProxy()
    async with serving(proxy) as server:
        read = await driver.call("scrape.page", url=SITE, proxy={"server": server}, headers={"Authorization": "t-1"})
    assert "The proxy answered" in read["markdown"] and proxy.authorization == ["t-1"], proxy.seen


async def test_a_proxy_that_asks_for_credentials(driver: BrowserDriver) -> None:  # noqa: F811
    proxy = FakeProxy(credentials=f"ada:{PASSWORD}")
    async with serving(proxy) as server:
        given = {"server": server, "username": "ada", "password": PASSWORD}
        read = await driver.call("scrape.page", url=SITE, proxy=given)
        assert read["status"] == 200 and "The proxy answered" in read["markdown"]
        assert proxy.seen[-1][1] == "Basic " + base64.b64encode(f"ada:{PASSWORD}".encode()).decode()
        refused = await driver.error("scrape.page", url=SITE, proxy={"server": server}, timeoutMs=5000)
    shown = json.dumps([read, refused.message, refused.hint, refused.details], default=str)
    assert PASSWORD not in shown
    # Chromium tells a proxy's 407 from a site's 401 no better than ERR_INVALID_AUTH_CREDENTIALS: both are said.
    assert refused.code is ErrorCode.NAVIGATION_FAILED and "proxy.username" in (refused.hint or ""), refused


async def test_a_proxy_that_is_not_there(driver: BrowserDriver) -> None:  # noqa: F811
    async with serving(FakeProxy()) as server:
        pass  # closed again: nothing answers there now
    gone = await driver.error("scrape.page", url=SITE, proxy={"server": server}, timeoutMs=5000)
    assert gone.code is ErrorCode.HOST_UNREACHABLE and gone.hint == PROXY_HINT, gone
    assert gone.details["netError"].startswith("ERR_PROXY"), gone.details
    goto = await driver.call("browser.sessions", action="create", sessionId="via", proxy={"server": server})
    try:
        info = next(s for s in goto["sessions"] if s["sessionId"] == "via")
        assert info["proxyServer"] == server
        failed = await driver.error("browser.goto", sessionId="via", url=SITE)
        assert failed.code is ErrorCode.NAVIGATION_FAILED and failed.hint == PROXY_HINT, failed
    finally:
        await driver.call("browser.sessions", action="close", sessionId="via")


async def test_a_session_lists_its_proxy_and_never_its_password(driver: BrowserDriver) -> None:  # noqa: F811
    proxy = FakeProxy(credentials=f"ada:{PASSWORD}")
    async with serving(proxy) as server:
        given = {"server": server, "username": "ada", "password": PASSWORD, "bypass": "localhost"}
        made = await driver.call("browser.sessions", action="create", sessionId="egress", proxy=given)
        try:
            assert PASSWORD not in json.dumps(made)
            went = await driver.call("browser.goto", sessionId="egress", url=SITE)
            assert went["status"] == 200 and went["title"] == "Via proxy"
        finally:
            await driver.call("browser.sessions", action="close", sessionId="egress")


@pytest.mark.parametrize(
    ("proxy", "said"),
    [
        ({"server": "ftp://proxy.internal:21"}, "http, https, socks5"),
        ({"server": "proxy.internal:3128"}, "http, https, socks5"),
        ({"server": "http://ada:pw@proxy.internal:3128"}, "username and password, not in its address"),
        ({"server": "http://proxy.internal:3128/path"}, "no path"),
        ({"server": "http://proxy.internal:99999"}, "not a proxy address"),
        ({"server": "socks5://proxy.internal:1080", "username": "a", "password": "b"}, "SOCKS"),
        ({"server": "http://proxy.internal:3128", "username": "a"}, "together"),
    ],
)
def test_proxies_the_model_refuses(proxy: dict[str, str], said: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ContextOptions.model_validate({"proxy": proxy})
    assert said in str(caught.value), str(caught.value)


def test_a_proxy_address_is_normalised() -> None:
    def made(server: str) -> str:
        proxy = ContextOptions.model_validate({"proxy": {"server": server}}).proxy
        assert proxy is not None
        return proxy.server

    assert made("HTTP://Proxy.Internal:3128/") == "http://proxy.internal:3128"
    assert made("socks5://[::1]:1080") == "socks5://[::1]:1080"
    assert PASSWORD not in repr(ContextOptions.model_validate(
        {"proxy": {"server": "http://p:1", "username": "a", "password": PASSWORD}}))  # fmt: skip
