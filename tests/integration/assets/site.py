"""Test pages, served from inside the sandbox (`python3 site.py PORT`) — tests browse only this."""

import html
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

INNER = html.escape(
    "<button onclick=\"document.body.insertAdjacentHTML('beforeend','<p>inner clicked</p>')\">Inner</button>"
)
LOGIN = f"""<!doctype html><html><head><title>Sign in</title></head><body>
<h1>Sign in</h1><p>Welcome back. Please sign in to continue.</p>
<form method="post" action="/login">
  <label>Username <input name="username" id="username"></label>
  <label>Password <input name="password" id="password" type="password"></label>
  <label>Plan <select name="plan" id="plan">
    <option value="free">Free</option><option value="pro">Pro</option>
  </select></label>
  <button type="submit" id="go">Sign in</button>
</form>
<div id="extra"><button id="doomed" onclick="document.getElementById('extra').remove()">Remove me</button></div>
<iframe srcdoc="{INNER}"></iframe>
</body></html>"""


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def _send(self, body: str, status: int = 200) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        url = urlparse(self.path)
        query = parse_qs(url.query)
        if url.path == "/":
            self._send(LOGIN)
        elif url.path == "/links":
            n = int(query.get("n", ["5000"])[0])
            links = "".join(f'<a href="/p/{i}">Link number {i}</a> ' for i in range(n))
            self._send(f"<html><head><title>Many links</title></head><body><h1>Links</h1>{links}</body></html>")
        elif url.path.startswith("/p/"):
            self._send(f"<html><head><title>Page {url.path[3:]}</title></head><body><h1>Page</h1></body></html>")
        elif url.path == "/slow":
            time.sleep(120)  # never finishes within any test timeout
            self._send("late")
        elif url.path == "/missing":
            self._send("<html><head><title>Not here</title></head><body>Not found</body></html>", 404)
        else:
            self._send("nope", 404)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        form = parse_qs(self.rfile.read(length).decode())
        user = html.escape(form.get("username", ["?"])[0])
        plan = html.escape(form.get("plan", ["?"])[0])
        self._send(
            f"<html><head><title>Welcome</title></head><body><h1>Welcome, {user}!</h1>"
            f"<p>Signed in on the {plan} plan.</p></body></html>"
        )


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
