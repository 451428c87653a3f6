"""Shared pieces of the browser tests: a local test site (aiohttp on 127.0.0.1 only) and a driver that
calls browser.* through the agent's dispatcher against the real Chromium on this machine.

The fixtures `site`, `browser` (module scope: one Chromium per test module, shared by its tests) and
`sid` (a session of its own per test) are defined here and offered to every unit test by conftest.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import os
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from rpc.errors import BoxwrightError, ErrorBody
from sandbox_image import browser as browser_feature
from sandbox_image.browser import BrowserService
from sandbox_image.config import SandboxSettings
from sandbox_image.dispatcher import Dispatcher

# tests/conftest.py skips these tests (or fails them in CI) when there is no Chromium here.
CHROMIUM = os.environ.get("BOXWRIGHT_CHROMIUM", "/usr/bin/chromium")


def page(title: str, body: str, head: str = "") -> web.Response:
    doc = f"<!doctype html><html><head><title>{title}</title>{head}</head><body>{body}</body></html>"
    return web.Response(text=doc, content_type="text/html")


LOGIN_FORM = """
<header><nav><a href="/">Home</a> <a href="/about">About</a></nav></header>
<main><h1>Sign in</h1>
<form action="/login" method="post">
  <label>Email <input name="email" type="email" id="email"></label>
  <label>Password <input name="password" type="password" id="password"></label>
  <label><input type="checkbox" name="remember" checked> Remember me</label>
  <select name="lang" aria-label="Language">
    <option value="en">English</option><option value="fr">Français</option>
  </select>
  <button type="button" disabled>Help</button>
  <button type="submit" id="submit">Sign in</button>
</form></main>
"""


async def login_get(_request: web.Request) -> web.Response:
    return page("Login", LOGIN_FORM)


async def login_post(request: web.Request) -> web.Response:
    form = await request.post()
    email = html.escape(str(form.get("email", "")))
    lang = html.escape(str(form.get("lang", "")))
    ok = form.get("password") == "hunter2"
    return page("Welcome" if ok else "Denied", f"<h1>{'Welcome' if ok else 'Denied'} {email}</h1><p>lang={lang}</p>")


async def many_links(_request: web.Request) -> web.Response:
    links = "".join(f'<li><a href="/p/{i}">Link number {i}</a></li>' for i in range(5000))
    return page("Many links", f"<h1>Directory</h1><ul>{links}</ul>")


async def frames(_request: web.Request) -> web.Response:
    return page(
        "Frames",
        '<h1>Outer</h1><p id="out">outer</p><iframe src="/inner" title="inner frame"></iframe>',
    )


async def inner(_request: web.Request) -> web.Response:
    return page(
        "Inner",
        "<button onclick=\"this.textContent = 'Clicked inside'\">Inside button</button>"
        '<input aria-label="Inner field">',
    )


async def removable(_request: web.Request) -> web.Response:
    return page(
        "Removable",
        '<button id="victim">Victim</button>'
        "<button onclick=\"document.getElementById('victim').remove()\">Remove it</button>"
        "<button onclick=\"document.title = 'clicked'\">Plain</button>",
    )


async def never_finishes(_request: web.Request) -> web.StreamResponse:
    await asyncio.sleep(60)
    return page("Too late", "")


async def dialogs(_request: web.Request) -> web.Response:
    return page(
        "Dialogs",
        "<button onclick=\"document.getElementById('r').textContent = String(confirm('Proceed?'))\">Ask</button>"
        "<button onclick=\"document.getElementById('r').textContent = prompt('Name?', 'x')\">Prompt</button>"
        '<p id="r">none</p>',
    )


async def noisy(_request: web.Request) -> web.Response:
    return page(
        "Noisy",
        "<p>noise</p>",
        head="<script>console.log('hello from the page'); console.error('something bad');"
        "fetch('/missing').catch(() => {}); fetch('http://127.0.0.1:9/x').catch(() => {});</script>",
    )


async def busy(_request: web.Request) -> web.Response:
    # Mutates the DOM every 50 ms for about 600 ms, then stays quiet.
    return page(
        "Busy",
        '<p id="n">0</p>',
        head="<script>let n = 0; const t = setInterval(() => {"
        " document.getElementById('n').textContent = String(++n); if (n >= 12) clearInterval(t); }, 50);</script>",
    )


async def forever_busy(_request: web.Request) -> web.Response:
    return page(
        "Forever",
        '<p id="n">0</p>',
        head="<script>let n = 0; setInterval(() => { document.getElementById('n').textContent = String(++n); }, 30);"
        "</script>",
    )


async def article(_request: web.Request) -> web.Response:
    para = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt. " * 6
    return page(
        "An article",
        '<nav><a href="/">Home</a></nav><main><article><h1>The headline</h1>'
        f"<p>{para}</p><h2>Part one</h2><p>{para}</p><p>{para}</p><h2>Part two</h2><p>Last words.</p>"
        "</article></main><footer>Footer text</footer>",
    )


async def set_cookie(_request: web.Request) -> web.Response:
    response = page("Cookie set", "<p>set</p>")
    response.set_cookie("flavour", "oatmeal")
    return response


async def show_cookie(request: web.Request) -> web.Response:
    return page("Cookie", f'<p id="c">flavour={html.escape(request.cookies.get("flavour", "none"))}</p>')


async def popups(_request: web.Request) -> web.Response:
    return page(
        "Popups",
        '<a href="/article" target="_blank">Open article</a>'
        "<button onclick=\"window.open('/login')\">Open login</button>",
    )


async def not_found(_request: web.Request) -> web.Response:
    return web.Response(status=404, text="<title>Not Found</title><h1>404 Not Found</h1>", content_type="text/html")


async def index(_request: web.Request) -> web.Response:
    return page("Index", '<h1>Index</h1><a href="/article">Article</a> <a href="/login">Login</a>')


ROUTES = {
    "/": index,
    "/login": login_get,
    "/many": many_links,
    "/frames": frames,
    "/inner": inner,
    "/removable": removable,
    "/never": never_finishes,
    "/dialogs": dialogs,
    "/noisy": noisy,
    "/busy": busy,
    "/forever-busy": forever_busy,
    "/article": article,
    "/set-cookie": set_cookie,
    "/show-cookie": show_cookie,
    "/popups": popups,
    "/missing": not_found,
}


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    return int(stat[stat.rfind(b")") + 2 :].split()[1])


def our_browser_pids() -> list[int]:
    """Chromium main processes started by this test process (through its Playwright driver)."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read()
            is_browser = b"--remote-debugging-pipe" in cmdline and b"--type=" not in cmdline
            if is_browser and _parent(_parent(int(name))) == os.getpid():
                pids.append(int(name))
        except OSError:
            continue
    return pids


class Site:
    def __init__(self, base: str) -> None:
        self.base = base

    def url(self, path: str) -> str:
        return self.base + path


async def start_site() -> tuple[web.AppRunner, Site]:
    app = web.Application()
    for path, handler in ROUTES.items():
        app.router.add_get(path, handler)
    app.router.add_post("/login", login_post)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, Site(f"http://127.0.0.1:{port}")


class BrowserDriver:
    """browser.* calls through a dispatcher, as the agent serves them; errors raise BoxwrightError."""

    def __init__(self, service: BrowserService, dispatcher: Dispatcher) -> None:
        self.service = service
        self.dispatcher = dispatcher
        self._ids = 0

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._ids += 1
        body = await self.dispatcher.dispatch({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params})
        if "error" in body:
            data = body["error"]["data"]
            raise BoxwrightError.from_body(
                ErrorBody(
                    error=body["error"]["message"],
                    errorCode=data["errorCode"],
                    recoverHint=data.get("recoverHint", ""),
                    details=data.get("details", {}),
                )
            )
        return body["result"]

    async def error(self, method: str, **params: Any) -> BoxwrightError:
        """The error a call must fail with."""
        with pytest.raises(BoxwrightError) as caught:
            await self.call(method, **params)
        return caught.value


@pytest.fixture(scope="module", name="site")
async def site_fixture() -> AsyncIterator[Site]:
    runner, served = await start_site()
    yield served
    await runner.cleanup()


@pytest.fixture(scope="module", name="browser")
async def browser_fixture() -> AsyncIterator[BrowserDriver]:
    dispatcher = Dispatcher("agent")
    service = browser_feature.register(dispatcher, SandboxSettings(chromium=CHROMIUM))
    yield BrowserDriver(service, dispatcher)
    await service.on_cleanup(web.Application())


@pytest.fixture(name="sid")
async def session_fixture(browser: BrowserDriver, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A session of its own for one test (own tabs and cookies), closed afterwards."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", request.node.name)[:64]
    await browser.call("browser.sessions", action="create", sessionId=name)
    yield name
    with contextlib.suppress(BoxwrightError):
        await browser.call("browser.sessions", action="close", sessionId=name)
