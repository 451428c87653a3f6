"""A local site (aiohttp on 127.0.0.1 only) for the template-run tests: plain pages, error pages, slow pages
that count how many requests are in flight at once, a page that hangs once then loads, a login with a
session cookie, and three shop pages with a known comparison."""

from __future__ import annotations

import asyncio
import html
import secrets
from collections import Counter
from collections.abc import AsyncIterator

from aiohttp import web

PASSWORD = "correct-horse-Battery-9"
SLOW_S = 0.4
# Pages of the window test (/slow/w<n>) are held longer, so loads overlap even when opening a tab is slow (busy CI).
WINDOW_SLOW_S = 2.0
HANG_S = 4.0


def page(title: str, body: str) -> web.Response:
    doc = f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>"
    return web.Response(text=doc, content_type="text/html")


SHOPS = {
    "a": ("Acme Store", "<h1>Acme Widget</h1><h2>Price</h2><p>Only $19.99 today, 3 colours.</p>"
          "<h2>Shipping</h2><p>Ships in 2 days.</p><h2>Reviews</h2><p>Rated 4.5 by 120 buyers.</p>"),
    "b": ("Bolt Store", "<h1>Bolt Widget</h1><h2>Price</h2><p>Now $24.50, 3 colours.</p>"
          "<h2>Shipping</h2><p>Ships in 5 days.</p>"),
    "c": ("Acme Store", "<h1>Cog Widget</h1><h2>Price</h2><p>Just $19.99, 2 colours.</p>"
          "<h2>Shipping</h2><p>Free shipping over 50 EUR.</p><h2>Warranty</h2><p>2 years.</p>"),
}  # fmt: skip

LOGIN_FORM = """<main><h1>Sign in</h1><form action="/login" method="post">
<label>Email <input name="email" type="email"></label>
<label>Password <input name="password" type="password" id="password"></label>
<button type="submit" id="go">Sign in</button></form></main>"""


GET_LOGIN_FORM = """<main><h1>Sign in</h1><form action="/welcome" method="get">
<label>User <input name="user"></label> <label>Password <input name="pw" type="password"></label>
<button type="submit">Sign in</button></form></main>"""


class TaskSite:
    def __init__(self) -> None:
        self.base = ""
        self.in_flight = 0
        self.max_in_flight = 0
        self.hits: Counter[str] = Counter()
        self.sessions: set[str] = set()
        self.released = asyncio.Event()

    def url(self, path: str) -> str:
        return self.base + path

    async def plain(self, request: web.Request) -> web.Response:
        n = request.match_info["n"]
        self.hits[request.path] += 1
        return page(f"Page {n}", f"<main><h1>Page {n}</h1><p>Body of page number {n}, costs $1{n}.00.</p></main>")

    async def missing(self, request: web.Request) -> web.Response:
        return web.Response(status=404, text="<title>Not Found</title><h1>404</h1>", content_type="text/html")

    async def slow(self, request: web.Request) -> web.Response:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(WINDOW_SLOW_S if request.match_info["n"].startswith("w") else SLOW_S)
        finally:
            self.in_flight -= 1
        return await self.plain(request)

    async def flaky(self, request: web.Request) -> web.Response:
        """Hangs past the navigation timeout the first time, loads at once after that."""
        self.hits[request.path] += 1
        if self.hits[request.path] == 1:
            with_timeout = asyncio.wait_for(self.released.wait(), HANG_S)
            await asyncio.gather(with_timeout, return_exceptions=True)
        return page("Flaky", "<h1>Loaded at last</h1>")

    async def never(self, _request: web.Request) -> web.Response:
        await self.released.wait()
        return page("Too late", "")

    async def shop(self, request: web.Request) -> web.Response:
        title, body = SHOPS[request.match_info["n"]]
        return page(title, f"<main>{body}</main>")

    async def login_form(self, request: web.Request) -> web.Response:
        self.hits[request.path] += 1
        return page("Login", LOGIN_FORM)

    async def login(self, request: web.Request) -> web.Response:
        form = await request.post()
        if form.get("password") != PASSWORD:
            return page("Login", "<p class=error>Wrong email or password</p>" + LOGIN_FORM)
        sid = secrets.token_hex(8)
        self.sessions.add(sid)
        raise web.HTTPFound("/account", headers={"Set-Cookie": f"sid={sid}; Path=/; HttpOnly"})

    async def get_login_form(self, _request: web.Request) -> web.Response:
        return page("Login", GET_LOGIN_FORM)

    async def welcome(self, request: web.Request) -> web.Response:
        """A careless site: the form is sent in the address, and the title greets the user by name."""
        user = html.escape(request.query.get("user", ""))
        return page(f"Welcome {user} ({html.escape(request.query.get('pw', ''))})", "<h1>Welcome back</h1>")

    async def account(self, request: web.Request) -> web.Response:
        if request.cookies.get("sid") in self.sessions:
            return page("Account", f'<h1 id="hello">Welcome back</h1><p>{html.escape("alice")}</p>')
        return page("Login required", "<h1>Please sign in</h1>")


async def serve() -> AsyncIterator[TaskSite]:
    site = TaskSite()
    app = web.Application()
    app.router.add_get("/p/{n}", site.plain)
    app.router.add_get("/missing/{n}", site.missing)
    app.router.add_get("/slow/{n}", site.slow)
    app.router.add_get("/flaky/{key}", site.flaky)
    app.router.add_get("/never/{n}", site.never)
    app.router.add_get("/shop/{n}", site.shop)
    app.router.add_get("/login", site.login_form)
    app.router.add_post("/login", site.login)
    app.router.add_get("/account", site.account)
    app.router.add_get("/get-login", site.get_login_form)
    app.router.add_get("/welcome", site.welcome)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    site.base = f"http://127.0.0.1:{tcp._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    yield site
    site.released.set()
    await runner.cleanup()
