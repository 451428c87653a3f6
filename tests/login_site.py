"""A small site with a login, for the profile and live view tests: only aiohttp, so it runs in the
test process (unit tests) or, as a script, in a container the integration tests start.

    /login     a form at fixed places on the page (the live view tests click there on the canvas)
    POST /login  alice / hunter2 → an HttpOnly session cookie, then /account
    /account   "Welcome alice" with a valid session cookie, else "Please log in"
    /red       a page that is all red (to recognise it in a screencast frame)

Run: python3 login_site.py HOST PORT
"""

from __future__ import annotations

import secrets
import sys

from aiohttp import web

USER, PASSWORD = "alice", "hunter2"
# Where the form's parts are, in CSS pixels of a 1280x720 viewport.
EMAIL_AT, PASSWORD_AT, SUBMIT_AT = (300, 130), (300, 230), (300, 330)

FORM = """<!doctype html><html><head><title>Sign in</title><style>
body { margin: 0; font: 20px sans-serif; }
input, button { position: absolute; left: 150px; width: 300px; height: 40px; font: 20px sans-serif; }
#email { top: 110px; } #password { top: 210px; } #submit { top: 310px; }
</style></head><body><h1 style="margin: 20px">Sign in</h1>
<form method="post" action="/login">
<input id="email" name="email" autocomplete="off" aria-label="Email">
<input id="password" name="password" type="password" aria-label="Password">
<button id="submit" type="submit">Sign in</button>
</form></body></html>"""


def _page(title: str, body: str) -> web.Response:
    return web.Response(text=f"<!doctype html><title>{title}</title><body>{body}</body>", content_type="text/html")


def make_app() -> web.Application:
    sessions: dict[str, str] = {}

    async def login_form(_request: web.Request) -> web.Response:
        return web.Response(text=FORM, content_type="text/html")

    async def login(request: web.Request) -> web.Response:
        form = await request.post()
        if form.get("email") != USER or form.get("password") != PASSWORD:
            return _page("Denied", "<h1>Wrong email or password</h1>")
        token = secrets.token_urlsafe(16)
        sessions[token] = USER
        response = web.HTTPFound("/account")
        response.set_cookie("session", token, httponly=True, samesite="Lax", path="/")
        raise response

    async def account(request: web.Request) -> web.Response:
        user = sessions.get(request.cookies.get("session", ""))
        if user is None:
            return _page("Account", "<h1>Please log in</h1>")
        return _page("Account", f"<h1>Welcome {user}</h1><p id='secret-area'>Members only</p>")

    async def red(_request: web.Request) -> web.Response:
        return _page("Red", "<style>html, body { margin: 0; height: 100%; background: rgb(255, 0, 0); }</style>")

    app = web.Application()
    app.router.add_get("/login", login_form)
    app.router.add_post("/login", login)
    app.router.add_get("/account", account)
    app.router.add_get("/red", red)
    return app


if __name__ == "__main__":
    web.run_app(make_app(), host=sys.argv[1], port=int(sys.argv[2]), print=None)
