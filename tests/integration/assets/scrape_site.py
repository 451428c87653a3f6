"""Pages for the scrape tests, served from inside a sandbox (`python3 scrape_site.py PORT`).

/article a long article with metadata, code, a table and repeated links · /timer adds text 1.5 s after
load · /late fetches /slow-data (0.7 s) after load and shows it · /nav-only nothing but menus · /gone a
404 page · /file.pdf a PDF that is not readable · /report.pdf a two-page PDF · /big 9 MiB of HTML ·
/never never answers (60 s) · /to-https sends itself to https (this server speaks http only), as some
sites do · /to-article sends itself on to /article · /lazy two noise images far down the page, one
with loading=lazy, one behind a lazy loader's IntersectionObserver · /seen which of them were asked
for · /stuck a page whose timers never fire. /staging /article behind HTTP Basic authentication
(ada / PASSWORD below). /members /article for a bearer token (MEMBERS_TOKEN below). Asked for a whole address, as a
proxy is, it answers itself (nothing goes further). /framed /article in a frame from
the other origin (localhost for 127.0.0.1). `python3 scrape_site.py PORT TLS_PORT` also serves them
over https on TLS_PORT, on every address, with the self-signed certificate in cert.pem / key.pem.
"""

import base64
import random
import struct
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FACTS = [
    "The quick brown fox jumps over the lazy dog while the reader keeps reading.",
    "Foxes hunt at dusk and rest through the day in dens dug under old roots.",
    "A dog sleeps late when the house is quiet and nobody rings the bell.",
    "Cubs learn to hunt in their first autumn by following their mother.",
    "Winter fur is thicker and paler, and the tail keeps the nose warm.",
    "Farmers build higher fences, and the foxes find the gaps all the same.",
]


def para(i: int) -> str:
    """Part i's paragraph: the facts in another order each time, as an article's paragraphs differ
    (twelve copies of one paragraph would be a repeat, kept once)."""
    return f"In part {i} we learn this. " + " ".join(FACTS[i % 6 :] + FACTS[: i % 6])


ARTICLE = f"""<!doctype html><html lang="en"><head><title>Fox news</title>
<meta name="description" content="All about foxes"><meta name="author" content="Ann Writer">
<meta property="article:published_time" content="2026-11-01T10:00:00Z"><link rel="canonical" href="/article">
<meta property="og:site_name" content="Fox Weekly"><meta property="og:image" content="/img/fox.jpg">
</head><body><nav><a href="/">Home</a> <a href="/about">About</a> <a href="/about">About again</a></nav>
<main><article><h1>Foxes and dogs</h1>
{"".join(f"<h2>Part {i}</h2><p>{para(i)}</p>" for i in range(1, 13))}
<pre><code class="language-python">print("fox")</code></pre>
<table><tr><th>Animal</th><th>Speed</th></tr><tr><td>Fox</td><td>50</td></tr></table>
<p>Every fox\u00e2\u20ac\u2122s den is warm, as a CMS that read UTF-8 as Windows-1252 would have it.</p>
<p>See <a href="/more">more</a> and <a href="https://example.org/fox">elsewhere</a>.</p>
</article></main><footer>Footer links <a href="/about">About</a></footer></body></html>"""
START = "<p>Words that are here from the start and stay here for the whole life of the page.</p>"
TIMER = f"""<!doctype html><html><head><title>Timer</title></head><body><main><h1>Timer page</h1>{START}</main>
<script>setTimeout(() => {{ const p = document.createElement('p'); p.textContent = 'TIMER CONTENT ARRIVED';
document.querySelector('main').appendChild(p); }}, 1500);</script></body></html>"""
LATE = f"""<!doctype html><html><head><title>Late</title></head><body><main><h1>Late page</h1>{START}</main>
<script>window.addEventListener('load', () => fetch('/slow-data').then(r => r.text()).then(t => {{
const p = document.createElement('p'); p.textContent = t; document.querySelector('main').appendChild(p); }}));
</script></body></html>"""
NAV_ONLY = """<!doctype html><html><head><title>Menu</title></head><body>
<nav><ul><li><a href="/a">Alpha</a></li><li><a href="/b">Beta</a></li><li><a href="/c">Gamma</a></li></ul></nav>
<footer><a href="/privacy">Privacy</a> <a href="/terms">Terms</a></footer></body></html>"""
DESK = """<!doctype html><html lang="en"><head><title>Walnut desk</title>
<style>.tab-pane{display:none}.tab-pane.active{display:block}</style></head>
<body><header><nav><a href="/">Home</a> <a href="/desks">Desks</a> <a href="/chairs">Chairs</a>
<a href="/cart">Cart</a></nav></header>
<main><h1>Walnut desk with two drawers</h1>
<p>Our walnut desk is built from solid, oiled American walnut by a small workshop in Porto. It has two
soft-closing drawers, a hidden cable tray and adjustable feet for uneven floors.</p>
<ul class="nav-tabs" role="tablist"><li role="tab">Description</li><li role="tab">Specifications</li>
<li role="tab">Care</li></ul>
<div class="tab-content">
<div class="tab-pane active" role="tabpanel"><p>The top is a single glued panel of walnut boards, finished
with hard-wax oil that brings out the grain. Each desk is made to order and ships within three weeks of
your order.</p><p>The drawers run on full-extension runners and hold A4 folders lying flat.</p></div>
<div class="tab-pane" role="tabpanel"><p>Width 140 centimetres, depth 70 centimetres, height 75
centimetres, weight 38 kilograms, drawer depth 45 centimetres.</p></div>
<div class="tab-pane" role="tabpanel"><p>Wipe with a damp cloth and refresh the oil once a year with the
kit that comes with the desk.</p></div>
</div></main>
<footer><p>Copyright 2026 Workshop. <a href="/privacy">Privacy</a> <a href="/terms">Terms</a></p>
</footer></body></html>"""
# A listing whose second half a "Load more" click adds (browser_scrape reads the tab after the click).
MORE = f"""<!doctype html><html lang="en"><head><title>Fox listing</title></head><body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<main><h1>Foxes, part one</h1>{START}<div id="later"></div>
<button id="more" onclick="document.getElementById('later').innerHTML = '<h2>Foxes, part two</h2>' +
'<p>Later words about the red fox, its den and its cubs, loaded on request.</p><a href=/fox/2>Second fox</a>'">
Load more</button> <a href="/article" target="_blank">The whole article</a></main><footer>Footer words</footer>
</body></html>"""
# An RSS feed served as plain XML (the browser would show it as a tree): scrape reads its entries.
FEED = """<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Fox Weekly</title>
<link>/</link><description>News about foxes</description><item><title>Foxes and dogs</title><link>/article</link>
<description>&lt;p&gt;The quick fox.&lt;/p&gt;&lt;script&gt;steal()&lt;/script&gt;</description></item>
</channel></rss>"""
SITEMAP = """<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>/article</loc><lastmod>2026-11-01</lastmod></url><url><loc>/desk</loc></url></urlset>"""
GONE = "<!doctype html><title>Gone</title><h1>404 Not Found</h1><p>No such page here.</p>"
BIG = "<!doctype html><title>Big</title><p>" + "x" * (9 * 1024 * 1024) + "</p>"
MOVES = """<!doctype html><html><head><title>Moving</title></head><body><main><h1>Moving on</h1>{start}</main>
<script>setTimeout(() => {{ location.href = {target}; }}, 100);</script></body></html>"""
TO_HTTPS = MOVES.format(start=START, target="location.href.replace(/^http:/, 'https:')")
TO_ARTICLE = MOVES.format(start=START, target="'/article'")


def make_pdf(title: str, pages: list[str], link: str) -> bytes:
    """A small valid PDF: one text line per page (Helvetica), a link annotation on the first page."""
    objs: list[bytes] = []
    n_pages = len(pages)
    page_ids = [4 + 2 * i for i in range(n_pages)]
    annot_id = 4 + 2 * n_pages
    objs.append(b"<< /Type /Catalog /Pages 2 0 R /Lang (en-GB) >>")
    kids = " ".join(f"{i} 0 R" for i in page_ids)
    objs.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, text in enumerate(pages):
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
        annots = f" /Annots [{annot_id} 0 R]" if i == 0 else ""
        objs.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {page_ids[i] + 1} 0 R{annots} >>".encode()
        )
        objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objs.append(f"<< /Type /Annot /Subtype /Link /Rect [72 700 200 730] /A << /S /URI /URI ({link}) >> >>".encode())
    info_id = len(objs) + 1
    objs.append(f"<< /Title ({title}) /Author (Ann Writer) /CreationDate (D:20261101100000Z) >>".encode())
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objs) + 1,
        info_id,
        xref,
    )
    return bytes(out)


def noise_png(width: int, height: int) -> bytes:
    """An RGB PNG of random pixels: it cannot compress, so a screenshot that shows it is big."""
    rng = random.Random(7)
    raw = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


NOISE = noise_png(400, 200)
LAZY = """<!doctype html><html><head><title>Lazy</title><style>html { scroll-behavior: smooth }</style></head>
<body><h1>Pictures far down</h1>
<div style="height:6000px">Scroll on.</div>
<img loading="lazy" src="/noise.png?native" width="400" height="200" alt="native">
<div style="height:1200px">Further.</div>
<img class="lazy" data-src="/noise.png?observer" width="400" height="200" alt="observer">
<script>const seen = new IntersectionObserver((entries) => entries.forEach((e) => {
  if (e.isIntersecting) { e.target.src = e.target.dataset.src; seen.unobserve(e.target); } }));
document.querySelectorAll("img.lazy").forEach((img) => seen.observe(img));</script></body></html>"""
# A page that took setTimeout away (as a hostile or broken page may): what waits on a timer in it never ends.
STUCK = """<!doctype html><html><head><title>Stuck</title></head><body><h1>Timers never fire</h1>
<div style="height:3000px">Long.</div><script>window.setTimeout = () => 0;</script></body></html>"""
ASKED: set[str] = set()
# A shop page with an ad script and a tracking pixel of its own, at paths the image's EasyList and EasyPrivacy
# block on any site (scrape's blockAds); what of them was asked for is PROBED.
SHOP = """<!doctype html><html><head><title>Shop</title></head><body><main><h1>Walnut desk</h1>
<p>A desk of solid walnut, oiled by hand.</p><img src="/pixel.gif?visit=1" alt=""><p id="ran"></p>
<div id="ad_container">Advertisement: sponsored chairs</div><div class="advert box">Sponsored: oak stools</div>
</main>
<script src="/js/prebid.js"></script>
<script>document.getElementById("ran").textContent = "bidder " + (window.bidder === true);</script></body></html>"""
PROBED: set[str] = set()
# A consent popup of the Complianz kind (autoconsent has a rule for it): its Deny button tells the server.
CONSENT = """<!doctype html><html><head><title>Desk shop</title></head><body>
<div id="cmplz-cookiebanner-container"><div class="cmplz-cookiebanner"
 style="position:fixed;bottom:0;left:0;right:0;background:#fff;padding:2em">
<p>We use cookies to improve your experience on our website and for marketing.</p>
<button class="cmplz-accept" onclick="fetch('/consent?choice=accept')">Accept</button>
<button class="cmplz-deny" onclick="document.cookie='cmplz_banner-status=dismissed';fetch('/consent?choice=deny');
this.closest('.cmplz-cookiebanner').remove()">Deny</button></div></div>
<main><h1>Walnut desk</h1><p>A desk of solid walnut, oiled by hand, with two drawers and brass handles.</p></main>
</body></html>"""

FRAMED = """<!doctype html><html><head><title>Framed</title></head><body><h1>Framed page</h1>
<iframe src="http://localhost:PORT/article" width="800" height="600"></iframe></body></html>"""
REPORT_PDF = make_pdf("Fox report", ["Foxes run fast.", "Dogs sleep late."], "https://example.org/fox")


CLOCK = """<!doctype html><title>Clock</title><main><h1>Clock</h1><p id="zone"></p><p id="where"></p></main><script>
const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
document.getElementById("zone").textContent = "Zone " + zone + ", noon UTC is "
  + new Date(Date.UTC(2026, 0, 1, 12)).getHours() + " o'clock";
navigator.geolocation.getCurrentPosition(
  (p) => { document.getElementById("where").textContent = "At " + p.coords.latitude + ", " + p.coords.longitude; },
  (e) => { document.getElementById("where").textContent = "Nowhere: " + e.message; });
</script>"""
STAGING_PASSWORD = "staging-pw-31"
STAGING_AUTH = "Basic " + base64.b64encode(f"ada:{STAGING_PASSWORD}".encode()).decode()
MEMBERS_TOKEN = "members-7f3e"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_args: object) -> None:
        pass

    def send(self, body: str | bytes, status: int = 200, ctype: str = "text/html; charset=utf-8") -> None:
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.startswith("http://"):  # asked as a proxy is (scrape's proxy): answered here, none goes on
            page = f"<title>Via proxy</title><main><h1>Catalog</h1><p>The proxy answered for {self.path}.</p></main>"
            return self.send(page)
        path = self.path.split("?", 1)[0]
        if path == "/staging":
            if self.headers.get("Authorization") != STAGING_AUTH:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="staging"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            return self.send(ARTICLE)
        if path == "/clock":  # the page's clock and place, as its scripts see them (scrape's timezone, geolocation)
            return self.send(CLOCK)
        if path == "/members":  # an API-gated site: a bearer token in a header, no password prompt
            if self.headers.get("Authorization") != f"Bearer {MEMBERS_TOKEN}":
                return self.send("<title>Sign in</title><main><p>Members only: sign in first.</p></main>", 401)
            return self.send(ARTICLE)
        if path == "/never":
            time.sleep(60)
        if path == "/slow-data":
            time.sleep(0.7)
            return self.send("SLOW DATA LOADED", ctype="text/plain")
        if path == "/file.pdf":
            return self.send(b"%PDF-1.4\n%%EOF\n", ctype="application/pdf")
        if path == "/noise.png":
            ASKED.add(self.path)
            return self.send(NOISE, ctype="image/png")
        if path in ("/js/prebid.js", "/pixel.gif"):
            PROBED.add(path)
            return self.send("window.bidder = true;", ctype="text/javascript")
        if path == "/consent":
            PROBED.add(self.path)
            return self.send("noted", ctype="text/plain")
        if path == "/probed":
            return self.send(" ".join(sorted(PROBED)) or "none", ctype="text/plain")
        if path == "/seen":
            return self.send(" ".join(sorted(ASKED)) or "none", ctype="text/plain")
        if path == "/language":  # scrape's locale and userAgent: what the browser asked for, as whom
            asked, agent = self.headers["Accept-Language"], self.headers["User-Agent"]
            return self.send(
                f"<title>Language</title><main><h1>Language</h1><p>asked {asked}</p><p>sent {agent}</p></main>"
            )
        if path == "/feed.xml":
            return self.send(FEED, ctype="text/xml")
        if path == "/sitemap.xml":
            return self.send(SITEMAP, ctype="application/xml")
        if path == "/report.pdf":
            return self.send(REPORT_PDF, ctype="application/pdf")
        pages = {"/article": ARTICLE, "/timer": TIMER, "/late": LATE, "/nav-only": NAV_ONLY, "/big": BIG,
                 "/to-https": TO_HTTPS, "/to-article": TO_ARTICLE, "/desk": DESK, "/lazy": LAZY, "/more": MORE,
                 "/stuck": STUCK, "/shop": SHOP, "/consent-page": CONSENT,
                 "/framed": FRAMED.replace("PORT", str(self.server.server_address[1]))}  # fmt: skip
        if path in pages:
            return self.send(pages[path])
        return self.send(GONE, 404)


def https_server(port: int) -> ThreadingHTTPServer:
    """The same pages over TLS on every address of the sandbox, with the self-signed cert.pem/key.pem."""
    import ssl

    server = ThreadingHTTPServer(("0.0.0.0", port), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain("cert.pem", "key.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    return server


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.daemon_threads = True
    if len(sys.argv) > 2:
        threading.Thread(target=https_server(int(sys.argv[2])).serve_forever, daemon=True).start()
    print("ready", flush=True)
    server.serve_forever()
