"""Pages for the template-run tests, served from inside the sandbox (`python3 task_site.py PORT`).

/p/N plain page · /missing/N 404 · /slow/N answers after 0.8 s · /flaky/K hangs 6 s the first time,
then loads at once · /hold/K waits until /release/K (at most 60 s) · /big/N ~200 000 characters of
text · /shop/a|b|c three product pages · /login (GET form, POST checks the password and sets a
session cookie) → /account (needs the cookie).
"""

import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

PASSWORD = "correct-horse-Battery-9"
SHOPS = {
    "a": ("Acme Store", "<h1>Acme Widget</h1><h2>Price</h2><p>Only $19.99 today.</p><h2>Shipping</h2><p>2 days.</p>"),
    "b": ("Bolt Store", "<h1>Bolt Widget</h1><h2>Price</h2><p>Now $24.50.</p><h2>Shipping</h2><p>5 days.</p>"),
    "c": ("Acme Store", "<h1>Cog Widget</h1><h2>Price</h2><p>Just $19.99.</p><h2>Warranty</h2><p>2 years.</p>"),
}
LOGIN_FORM = """<main><h1>Sign in</h1><form action="/login" method="post">
<label>Email <input name="email" type="email"></label>
<label>Password <input name="password" type="password" id="password"></label>
<button type="submit">Sign in</button></form></main>"""

seen: dict[str, int] = {}
released: dict[str, threading.Event] = {}
sessions: set[str] = set()
lock = threading.Lock()


def page(title: str, body: str) -> str:
    return f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>"


def big(n: str) -> str:
    paragraphs = "".join(
        f"<p>Paragraph {i} of big page {n}: " + " ".join(f"word{n}x{i}x{j}" for j in range(60)) + "</p>"
        for i in range(200)
    )
    return page(f"Big {n}", f"<main><h1>Big page {n}</h1>{paragraphs}</main>")


def hold_event(key: str) -> threading.Event:
    with lock:
        return released.setdefault(key, threading.Event())


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def _send(self, body: str, status: int = 200, headers: dict[str, str] | None = None) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        parts = self.path.split("?")[0].strip("/").split("/")
        kind, arg = parts[0], parts[1] if len(parts) > 1 else ""
        if kind == "p":
            self._send(page(f"Page {arg}", f"<main><h1>Page {arg}</h1><p>Body of page {arg}.</p></main>"))
        elif kind == "missing":
            self._send(page("Not Found", "<h1>404</h1>"), status=404)
        elif kind == "slow":
            time.sleep(0.8)
            self._send(page(f"Slow {arg}", f"<h1>Slow {arg}</h1>"))
        elif kind == "flaky":
            with lock:
                seen[arg] = seen.get(arg, 0) + 1
                first = seen[arg] == 1
            if first:
                time.sleep(6)
            self._send(page("Flaky", "<h1>Loaded at last</h1>"))
        elif kind == "hold":
            hold_event(arg).wait(60)
            self._send(page(f"Held {arg}", f"<h1>Held {arg}</h1>"))
        elif kind == "release":
            hold_event(arg).set()
            self._send(page("Released", arg))
        elif kind == "big":
            self._send(big(arg))
        elif kind == "shop":
            title, body = SHOPS[arg]
            self._send(page(title, f"<main>{body}</main>"))
        elif kind == "login":
            self._send(page("Login", LOGIN_FORM))
        elif kind == "account":
            cookie = self.headers.get("Cookie", "")
            if any(c.strip() == f"sid={s}" for c in cookie.split(";") for s in sessions):
                self._send(page("Account", '<h1 id="hello">Welcome back</h1>'))
            else:
                self._send(page("Login required", "<h1>Please sign in</h1>"))
        else:
            self._send(page("Not Found", "<h1>404</h1>"), status=404)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        form = parse_qs(self.rfile.read(length).decode())
        if form.get("password", [""])[0] != PASSWORD:
            self._send(page("Login", "<p class=error>Wrong email or password</p>" + LOGIN_FORM))
            return
        sid = uuid.uuid4().hex
        sessions.add(sid)
        self._send("", status=302, headers={"Location": "/account", "Set-Cookie": f"sid={sid}; Path=/; HttpOnly"})


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()
