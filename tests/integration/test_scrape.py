"""Issue 10 acceptance: `scrape` end to end — the real engine, the real image, the official MCP client
over streamable HTTP, pages served by the test from inside alice's sandbox (assets/scrape_site.py).

One page sandbox serves every page; scrapes with its sandboxId read them there. Scrapes without one
get a throw-away job sandbox, which cannot reach alice's pages (sandboxes cannot reach each other), so
they read their own agent's /healthz. The forbidden target for the network policy is a decoy of our
own on the sandbox network's gateway (see test_network.py). The phases run in order in one test.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import docker

from host import labels
from rpc.agent import AGENT_PORT
from tests.integration.assets.scrape_site import MEMBERS_TOKEN
from tests.integration.conftest import HttpServer
from tests.integration.mcp_helpers import Session, http_session
from tests.integration.test_network import Decoy, gateway_of

SITE = (Path(__file__).parent / "assets" / "scrape_site.py").read_text()
PORT = 8000
TLS_PORT = 8443
BASE = f"http://127.0.0.1:{PORT}"
# A self-signed certificate for the https listener, made in the sandbox by its own openssl.
SELF_SIGNED = (
    "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost"
    " -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout key.pem -out cert.pem 2>/dev/null"
)
OWN_AGENT = f"http://127.0.0.1:{AGENT_PORT}/healthz"  # a page a job sandbox can load: its own agent


def engine_state(client: docker.DockerClient, namespace: str) -> tuple[list[str], list[str]]:
    """This test namespace's containers and volumes, by name."""
    wanted = {"label": f"{labels.NAMESPACE}={namespace}"}
    containers = sorted(c.name for c in client.containers.list(all=True, ignore_removed=True, filters=wanted))
    return containers, sorted(v.name for v in client.volumes.list(filters=wanted))


async def until(check: Callable[[], bool], limit_s: float) -> None:
    for _ in range(int(limit_s / 0.2)):
        if check():
            return
        await anyio.sleep(0.2)
    raise AssertionError(f"not within {limit_s} s")


def png_size(data_b64: str) -> tuple[int, int]:
    data = base64.b64decode(data_b64)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


class Scraper:
    def __init__(self, s: Session, sid: str) -> None:
        self.s, self.sid, self.calls = s, sid, 0

    async def ok(self, path: str, **args: Any) -> dict[str, Any]:
        self.calls += 1
        return await self.s.ok("scrape", {"url": f"{BASE}{path}", "sandboxId": self.sid, **args})

    async def error(self, url: str, code: str, **args: Any) -> dict[str, Any]:
        self.calls += 1
        err = await self.s.error("scrape", {"url": url, "sandboxId": self.sid, **args})
        assert err.code == code and "Traceback" not in err.text, err.data
        return err.data

    async def image(self, path: str, fmt: str, **args: Any) -> tuple[dict[str, Any], str]:
        self.calls += 1
        r = await self.s.client.call_tool(
            "scrape", {"url": f"{BASE}{path}", "sandboxId": self.sid, "format": fmt, **args}
        )
        assert not r.is_error and r.structured_content is not None
        [png] = [block for block in r.content if block.type == "image"]
        return r.structured_content, png.data

    async def open_in_browser(self) -> tuple[int, int, int]:
        listed = await self.s.ok("browser_sessions", {"sandboxId": self.sid, "action": "list"})
        return len(listed["sessions"]), listed["browserContexts"], listed["browserPages"]


async def serve_pages(s: Session) -> str:
    sid = (await s.ok("sandbox_create", {"name": "pages"}))["sandboxId"]
    await s.ok("file_write", {"sandboxId": sid, "path": "scrape_site.py", "content": SITE})
    started = await s.ok(
        "code_run",
        {"sandboxId": sid, "language": "bash", "code": f"{SELF_SIGNED} && python3 scrape_site.py {PORT} {TLS_PORT}",
         "background": True},
    )  # fmt: skip
    out = await s.ok("process_output", {"sandboxId": sid, "processId": started["processId"], "waitMs": 10_000})
    assert "ready" in out["output"], out
    return sid


# -- the phases ------------------------------------------------------------------------------


async def bad_inputs_open_nothing(s: Session, client: docker.DockerClient, namespace: str) -> None:
    """TC-05 / TC-15: refused before anything is opened (no sandbox, session or file)."""
    before = engine_state(client, namespace)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"url": "ftp://example.org/"}, "url"),
        ({"url": "not a url"}, "url"),
        ({"url": BASE, "format": "pdf"}, "format"),
        ({"url": BASE, "waitFor": -1}, "waitFor"),
        ({"url": BASE, "waitFor": 60001}, "waitFor"),
        ({"url": BASE, "profileId": "../x"}, "profileId"),
        ({"url": BASE, "profileId": "a/b"}, "profileId"),
        ({"url": BASE, "profileId": "p" * 65}, "profileId"),
        ({"url": BASE, "offset": -1}, "offset"),
        ({"url": BASE, "maxChars": 0}, "maxChars"),
        ({"url": BASE, "includeTags": [" "]}, "includeTags.0"),
    ]
    for args, field in cases:
        err = await s.error("scrape", args)
        assert err.code == "INVALID_PARAMETER", (args, err.data)
        assert [e["field"] for e in err.data["details"]["errors"]] == [field], (args, err.data)
    assert engine_state(client, namespace) == before
    assert (await s.ok("sandbox_list"))["sandboxes"] == []


async def formats(p: Scraper) -> None:
    """TC-01: every format returns its payload."""
    md = await p.ok("/article")
    assert md["status"] == 200 and md["title"] == "Fox news" and md["url"] == f"{BASE}/article"
    assert md["mainContent"] and not md["fallback"] and not md["truncated"]
    assert "# Foxes and dogs" in md["markdown"] and "```python" in md["markdown"] and "| Fox" in md["markdown"]
    assert "Footer links" not in md["markdown"] and f"({BASE}/more)" in md["markdown"]
    assert "Every fox\u2019s den is warm" in md["markdown"]  # mis-decoded UTF-8 put right (mojibake.py)
    assert md["metadata"] == {
        "description": "All about foxes",
        "language": "en",
        "canonicalUrl": f"{BASE}/article",
        "publishedDate": "2026-11-01T10:00:00Z",
        "modifiedDate": None,
        "author": "Ann Writer",
        "siteName": "Fox Weekly",
        "image": f"{BASE}/img/fox.jpg",
    }
    again = await p.ok("/article", maxAge=60_000)  # read again a moment later: from that reading
    assert again["reused"] and again["markdown"] == md["markdown"] and 0 <= again["ageMs"] < 60_000, again
    desk = await p.ok("/desk")  # the tabs a click away come with the shown one (whole_page.hidden_tabs_follow)
    assert "made to order" in desk["markdown"] and "Width 140 centimetres" in desk["markdown"]
    assert "refresh the oil" in desk["markdown"] and "Privacy" not in desk["markdown"]
    whole = await p.ok("/article", onlyMainContent=False)
    assert "Footer links" in whole["markdown"] and whole["totalChars"] == len(whole["markdown"])
    first = await p.ok("/article", onlyMainContent=False, maxChars=500)  # read in parts: nothing lost
    assert first["truncated"] and len(first["markdown"]) <= 500 and first["totalChars"] == whole["totalChars"]
    rest = await p.ok("/article", onlyMainContent=False, offset=first["nextOffset"])
    assert first["markdown"] + rest["markdown"] == whole["markdown"] and rest["nextOffset"] is None
    assert rest["reused"] and not first["reused"]  # the next part: cut from the first call's reading
    chosen = await p.ok("/article", includeTags=[":is(table, .none)"], excludeTags=["th"])  # the caller's own choice
    assert chosen["markdown"].strip().startswith("| Fox") and not chosen["mainContent"]
    bad = await p.error(f"{BASE}/article", "INVALID_PARAMETER", excludeTags=["div["])  # the browser's verdict
    assert [e["field"] for e in bad["details"]["errors"]] == ["excludeTags"], bad
    html = await p.ok("/article", format="html")
    assert "<h1>Foxes and dogs</h1>" in html["html"] and html["markdown"] is None
    links = await p.ok("/article", format="links")
    assert links["links"] == [f"{BASE}/", f"{BASE}/about", f"{BASE}/more", "https://example.org/fox"]
    framed = await p.ok("/framed", includeIframes=True)  # a document in a frame from another origin
    other = f"http://localhost:{PORT}"
    assert (
        framed["iframes"] == 1 and "# Foxes and dogs" in framed["markdown"] and f"({other}/more)" in framed["markdown"]
    )
    assert "Foxes and dogs" not in (await p.ok("/framed", onlyMainContent=False))["markdown"]  # not unless asked

    news = await p.ok("/feed.xml")  # a feed reads as its entries, their HTML sanitized
    assert news["title"] == "Fox Weekly" and news["contentType"] == "text/xml", news
    entry = f"## [Foxes and dogs]({BASE}/article)\n\nThe quick fox.\n"
    assert news["markdown"] == f"# [Fox Weekly]({BASE}/)\n\nNews about foxes\n\n{entry}"

    pages = await p.ok("/sitemap.xml", format="links")  # a sitemap reads as the pages it lists
    assert pages["links"] == [f"{BASE}/article", f"{BASE}/desk"] and pages["title"] == "Sitemap of 127.0.0.1:8000"

    shot, shot_png = await p.image("/article", "screenshot")
    full, full_png = await p.image("/article", "fullscreenshot")
    (w1, h1), (w2, h2) = png_size(shot_png), png_size(full_png)
    assert (shot["width"], shot["height"]) == (w1, h1) and (full["width"], full["height"]) == (w2, h2)
    assert w1 == w2 and h2 > h1 and "screenshot" not in shot
    asked = (await p.ok("/language", locale="de-DE", userAgent="ExampleBot/2.1", onlyMainContent=False))["markdown"]
    assert "asked de-DE" in asked and "sent ExampleBot/2.1" in asked
    assert "asked en-US" in (await p.ok("/language", onlyMainContent=False))["markdown"]  # the browser's own
    phone, phone_png = await p.image("/article", "screenshot", mobile=True)  # as a phone shows it
    assert (phone["width"], phone["height"]) == png_size(phone_png) == (412, 839)
    # What loads on sight (loading=lazy, a lazy loader's IntersectionObserver) is in a full-page capture:
    # the page is scrolled through first. The viewport's capture asks for neither picture.
    await p.image("/lazy", "screenshot")
    assert (await p.ok("/seen"))["markdown"].split() == ["none"]
    lazy, lazy_png = await p.image("/lazy", "fullscreenshot")
    assert (await p.ok("/seen"))["markdown"].split() == ["/noise.png?native", "/noise.png?observer"]
    # Both painted: 2 × 400 × 200 pixels of noise do not compress (the blank page is a few KiB).
    assert len(base64.b64decode(lazy_png)) > 400_000 and lazy["height"] > 7000, (len(lazy_png), lazy)
    stuck, _ = await p.image("/stuck", "fullscreenshot")  # the scroll waits on the page's timers: bounded
    assert stuck["height"] > 3000 and stuck["elapsedMs"] < 30_000, stuck


async def waits_and_fallback(p: Scraper) -> None:
    """TC-02 / TC-03 / TC-04."""
    # The whole page: the waits are under test, and which blocks of a toy page are main content is the models' call.
    short = await p.ok("/timer", waitFor=200, onlyMainContent=False)
    assert short["wait"] == "fixed" and "TIMER CONTENT ARRIVED" not in short["markdown"]
    long = await p.ok("/timer", waitFor=2500, onlyMainContent=False)
    assert long["wait"] == "fixed" and "TIMER CONTENT ARRIVED" in long["markdown"]
    late = await p.ok("/late", onlyMainContent=False)
    assert late["wait"] == "settled" and "SLOW DATA LOADED" in late["markdown"]
    menu = await p.ok("/nav-only")
    assert menu["fallback"] and not menu["mainContent"] and "Gamma" in menu["markdown"]


async def pages_that_fail(p: Scraper) -> None:
    gone = await p.ok("/gone")
    assert gone["status"] == 404 and "No such page" in gone["markdown"]  # returned, not hidden
    await p.error(f"{BASE}/file.pdf", "UNSUPPORTED_CONTENT_TYPE")  # a PDF that cannot be read
    report = await p.ok("/report.pdf")  # one that can: its text, title and stated metadata
    assert report["contentType"] == "application/pdf" and report["title"] == "Fox report"
    assert report["markdown"] == "# Fox report\n\nFoxes run fast.\n\nDogs sleep late.\n"
    assert report["metadata"] == {"author": "Ann Writer", "publishedDate": "2026-11-01T10:00:00+00:00",
                                  "language": "en-GB", "description": None, "canonicalUrl": None,
                                  "modifiedDate": None, "siteName": None, "image": None}  # fmt: skip
    assert (await p.ok("/report.pdf", format="links"))["links"] == ["https://example.org/fox"]
    head = await p.ok("/report.pdf", maxChars=16)  # a PDF's text in parts too: the next from the same reading
    tail = await p.ok("/report.pdf", offset=head["nextOffset"], format="markdown")
    assert head["markdown"] + tail["markdown"] == report["markdown"] and tail["reused"] and not head["reused"]
    shot = await p.error(f"{BASE}/report.pdf", "UNSUPPORTED_CONTENT_TYPE", format="screenshot")  # nothing rendered
    assert "markdown" in shot["recoverHint"], shot
    await p.error(f"{BASE}/big", "PAGE_TOO_LARGE")
    await p.error(f"{BASE}/never", "NAVIGATION_TIMEOUT", timeoutMs=3000)
    await p.error(f"http://127.0.0.1:{PORT + 1}/", "HOST_UNREACHABLE")
    # A page whose script moves it to an address that fails: that failure, not Chromium's error page as content.
    moved = await p.error(f"{BASE}/to-https", "TLS_ERROR")
    assert moved["details"] == {"url": f"https://127.0.0.1:{PORT}/to-https", "netError": "ERR_SSL_PROTOCOL_ERROR",
                                "sentFrom": f"{BASE}/to-https", "sandboxId": p.sid}, moved  # fmt: skip
    assert "error page" in moved["error"] and "/to-https" in moved["recoverHint"]
    on = await p.ok("/to-article")  # a script redirect that works: the page it went to, at its own url
    assert on["url"] == f"{BASE}/article" and "# Foxes and dogs" in on["markdown"]
    for _ in range(2):  # more failures and successes, for the count of what is left open
        await p.error(f"{BASE}/file.pdf", "UNSUPPORTED_CONTENT_TYPE", format="links")
        await p.ok("/gone", format="links")


async def self_signed_on_loopback_only(p: Scraper) -> None:
    """A self-signed certificate is accepted on the sandbox's own loopback (a dev server's), elsewhere only
    when the caller says it trusts the site (skipTlsVerification)."""
    local = await p.s.ok("scrape", {"url": f"https://127.0.0.1:{TLS_PORT}/article", "sandboxId": p.sid})
    assert local["status"] == 200 and "# Foxes and dogs" in local["markdown"]
    # A PDF there too, though it is fetched again outside the page (by a client as lenient on loopback).
    local_pdf = await p.s.ok("scrape", {"url": f"https://127.0.0.1:{TLS_PORT}/report.pdf", "sandboxId": p.sid})
    assert local_pdf["contentType"] == "application/pdf" and "Foxes run fast." in local_pdf["markdown"], local_pdf
    p.calls += 2
    ran = await p.s.ok("code_run", {"sandboxId": p.sid, "language": "bash", "code": "hostname -I"})
    own = ran["stdout"].split()[0]  # the same server, at the sandbox's address on its network
    other = await p.error(f"https://{own}:{TLS_PORT}/article", "TLS_ERROR")
    assert other["details"]["netError"].startswith("ERR_CERT_") and "skipTlsVerification" in other["recoverHint"]
    # Unless the caller trusts the site: the page, and a PDF there (fetched again outside the page) too.
    trusted = await p.s.ok("scrape", {"url": f"https://{own}:{TLS_PORT}/article", "sandboxId": p.sid,
                                      "skipTlsVerification": True})  # fmt: skip
    assert trusted["status"] == 200 and "# Foxes and dogs" in trusted["markdown"]
    pdf = await p.s.ok("scrape", {"url": f"https://{own}:{TLS_PORT}/report.pdf", "sandboxId": p.sid,
                                  "skipTlsVerification": True})  # fmt: skip
    assert pdf["contentType"] == "application/pdf" and pdf["markdown"], pdf
    p.calls += 2
    # The browser tools: a session's choice, made when it is created (both sessions closed at the end).
    page = f"https://{own}:{TLS_PORT}/article"
    await p.s.ok("browser_sessions", {"sandboxId": p.sid, "action": "create", "sessionId": "plain"})
    made = {"sandboxId": p.sid, "action": "create", "sessionId": "intranet", "skipTlsVerification": True}
    listed = await p.s.ok("browser_sessions", made)
    assert {x["sessionId"]: x["skipTlsVerification"] for x in listed["sessions"]} == {"plain": False, "intranet": True}
    try:
        refused = await p.s.error("browser_goto", {"sandboxId": p.sid, "sessionId": "plain", "url": page})
        assert refused.code == "NAVIGATION_FAILED" and "skipTlsVerification" in refused.data["recoverHint"]
        opened = await p.s.ok("browser_goto", {"sandboxId": p.sid, "sessionId": "intranet", "url": page})
        assert opened["status"] == 200 and opened["title"], opened
    finally:
        for name in ("plain", "intranet"):
            await p.s.ok("browser_sessions", {"sandboxId": p.sid, "action": "close", "sessionId": name})


async def behind_http_auth(p: Scraper) -> None:
    """A staging site behind HTTP Basic authentication: its 401 without credentials or with wrong ones, the page
    with them (and they appear nowhere in the answers)."""
    auth = {"username": "ada", "password": "staging-pw-31"}
    locked = await p.ok("/staging", format="links")
    wrong = await p.ok("/staging", format="links", httpAuth={**auth, "password": "nope"})
    assert locked["status"] == wrong["status"] == 401 and locked["links"] == wrong["links"] == []
    opened = await p.ok("/staging", httpAuth=auth)
    assert opened["status"] == 200 and "# Foxes and dogs" in opened["markdown"]
    # A browser session: its credentials name their site; listed by that site only.
    unnamed = await p.s.error("browser_sessions", {"sandboxId": p.sid, "action": "create", "httpAuth": auth})
    assert unnamed.code == "INVALID_PARAMETER" and "origin" in unnamed.data["error"], unnamed.data
    made = {"sandboxId": p.sid, "action": "create", "sessionId": "staging", "httpAuth": {**auth, "origin": BASE}}
    listed = await p.s.ok("browser_sessions", made)
    try:
        assert [x["httpAuthOrigin"] for x in listed["sessions"] if x["sessionId"] == "staging"] == [BASE]
        went = await p.s.ok("browser_goto", {"sandboxId": p.sid, "sessionId": "staging", "url": f"{BASE}/staging"})
        assert went["status"] == 200 and went["title"], went
    finally:
        await p.s.ok("browser_sessions", {"sandboxId": p.sid, "action": "close", "sessionId": "staging"})
    assert auth["password"] not in json.dumps([locked, wrong, opened, unnamed.data, listed])


async def behind_a_token(p: Scraper) -> None:
    """A site that wants a bearer token in a header: its 401 page without it, the page with it (the token
    appears nowhere in the answers); a header the browser owns refused before anything is opened."""
    locked = await p.ok("/members")
    assert locked["status"] == 401 and "sign in first" in locked["markdown"]
    opened = await p.ok("/members", headers={"Authorization": f"Bearer {MEMBERS_TOKEN}", "X-Trace": "t-1"})
    assert opened["status"] == 200 and "# Foxes and dogs" in opened["markdown"]
    # Over https on loopback, whose self-signed certificate the browser takes (a dev server's): so do the
    # requests made with the headers; at the sandbox's own address, when the caller trusts the site.
    token = {"Authorization": f"Bearer {MEMBERS_TOKEN}"}
    local = await p.s.ok("scrape", {"url": f"https://127.0.0.1:{TLS_PORT}/members", "sandboxId": p.sid,
                                    "headers": token})  # fmt: skip
    assert local["status"] == 200 and "# Foxes and dogs" in local["markdown"], local["status"]
    ran = await p.s.ok("code_run", {"sandboxId": p.sid, "language": "bash", "code": "hostname -I"})
    own = ran["stdout"].split()[0]
    trusted = await p.s.ok("scrape", {"url": f"https://{own}:{TLS_PORT}/members", "sandboxId": p.sid,
                                      "headers": token, "skipTlsVerification": True})  # fmt: skip
    assert trusted["status"] == 200 and "# Foxes and dogs" in trusted["markdown"], trusted["status"]
    p.calls += 2
    owned = await p.error(f"{BASE}/members", "INVALID_PARAMETER", headers={"Host": "elsewhere.test"})
    assert "set by the browser" in owned["error"], owned
    assert MEMBERS_TOKEN not in json.dumps([locked, opened, local, trusted, owned])


async def through_a_proxy(p: Scraper) -> None:
    """Through a proxy (the pages' server, which answers a proxy's requests itself): a site whose name is never
    looked up arrives; a proxy that is not there says so."""
    site = "http://shop.test/catalog"
    read = await p.s.ok("scrape", {"url": site, "sandboxId": p.sid, "proxy": {"server": BASE}})
    assert read["status"] == 200 and f"The proxy answered for {site}." in read["markdown"], read
    gone = await p.error(site, "HOST_UNREACHABLE", proxy={"server": "http://127.0.0.1:9"}, timeoutMs=5000)
    assert "proxy.server" in gone["recoverHint"], gone
    p.calls += 1


async def a_time_zone_and_a_place(p: Scraper) -> None:
    """The page's clock and position as the caller sets them, by the image's browser."""
    plain = await p.ok("/clock", onlyMainContent=False)
    assert "Zone UTC, noon UTC is 12 o'clock" in plain["markdown"], plain["markdown"]
    tokyo = await p.ok("/clock", onlyMainContent=False, timezone="Asia/Tokyo",
                       geolocation={"latitude": 35.68, "longitude": 139.69})  # fmt: skip
    assert "Zone Asia/Tokyo, noon UTC is 21 o'clock" in tokyo["markdown"], tokyo["markdown"]
    assert "At 35.68, 139.69" in tokyo["markdown"], tokyo["markdown"]
    bad = await p.error(f"{BASE}/clock", "INVALID_PARAMETER", timezone="Mars/Olympus")
    assert "IANA" in json.dumps(bad), bad


async def ads_not_loaded(p: Scraper) -> None:
    """blockAds with the image's EasyList and EasyPrivacy: an ad script and a tracking pixel at paths those lists
    block on any site are never asked for; without it they are. A browser session blocks alike."""
    said = await p.s.call("scrape", {"url": f"{BASE}/shop", "sandboxId": p.sid, "blockAds": True,
                                     "onlyMainContent": False})  # fmt: skip
    quiet = said.data
    assert "bidder false" in quiet["markdown"] and quiet["blocked"] >= 2, quiet
    assert "sponsored chairs" not in quiet["markdown"] and "oak stools" not in quiet["markdown"]  # ad boxes hidden
    assert f", {quiet['blocked']} requests blocked" in said.summary, said.summary
    assert (await p.ok("/probed"))["markdown"].split() == ["none"]
    made = {"sandboxId": p.sid, "action": "create", "sessionId": "quiet", "blockAds": True, "blockResources": ["font"]}
    created = await p.s.ok("browser_sessions", made)
    try:
        assert [(x["blockAds"], x["blockResources"]) for x in created["sessions"] if x["sessionId"] == "quiet"] == [
            (True, ["font"])
        ]
        await p.s.ok("browser_goto", {"sandboxId": p.sid, "sessionId": "quiet", "url": f"{BASE}/shop"})
        listed = await p.s.ok("browser_sessions", {"sandboxId": p.sid, "action": "list"})
        assert [x["blockedRequests"] >= 2 for x in listed["sessions"] if x["sessionId"] == "quiet"] == [True]
        assert (await p.ok("/probed"))["markdown"].split() == ["none"]
    finally:
        await p.s.ok("browser_sessions", {"sandboxId": p.sid, "action": "close", "sessionId": "quiet"})
    loud = await p.ok("/shop", onlyMainContent=False)
    assert "bidder true" in loud["markdown"] and loud["blocked"] is None, loud
    assert "sponsored chairs" in loud["markdown"] and "oak stools" in loud["markdown"]
    assert (await p.ok("/probed"))["markdown"].split() == ["/js/prebid.js", "/pixel.gif"]


async def cookie_banners_refused(p: Scraper) -> None:
    """blockCookieBanners on the image's headless shell: the popup refused (the site told so), gone from the text."""
    shown = await p.ok("/consent-page", onlyMainContent=False)
    assert "We use cookies" in shown["markdown"] and shown["cookieBanners"] is None
    said = await p.s.call("scrape", {"url": f"{BASE}/consent-page", "sandboxId": p.sid, "onlyMainContent": False,
                                     "blockCookieBanners": True})  # fmt: skip
    refused = said.data
    assert "We use cookies" not in refused["markdown"] and "Walnut desk" in refused["markdown"], refused
    assert refused["cookieBanners"] == ["Complianz banner"] and "cookie banner refused" in said.summary, said.summary
    assert "/consent?choice=deny" in (await p.ok("/probed"))["markdown"].split()


async def actions_before_reading(p: Scraper) -> None:
    """A click (on the button's text) that adds content, through MCP on the image's browser; a missing element
    names its action."""
    assert "part two" not in (await p.ok("/more", onlyMainContent=False))["markdown"]
    actions = [{"type": "click", "text": "Load more"}, {"type": "click", "selector": "#cookies", "optional": True}]
    clicked = await p.s.call(
        "scrape", {"url": f"{BASE}/more", "sandboxId": p.sid, "onlyMainContent": False, "actions": actions}
    )
    p.calls += 1
    assert "## Foxes, part two" in clicked.data["markdown"], clicked.data
    assert [a["times"] for a in clicked.data["actions"]] == [1, 0]
    assert clicked.summary.endswith(", after 2 actions (1 had nothing to act on)"), clicked.summary
    err = await p.error(
        f"{BASE}/more", "ELEMENT_NOT_FOUND", timeoutMs=5000, actions=[{"type": "click", "selector": "#buy"}]
    )
    assert err["details"]["action"] == 0 and err["details"]["type"] == "click" and "optional" in err["recoverHint"]
    # A link that opens a new window: the reading goes on there.
    went = await p.ok("/more", actions=[{"type": "click", "text": "The whole article"}])
    assert went["url"] == f"{BASE}/article" and went["actions"][0]["opened"] is True, went["actions"]
    assert went["status"] == 200 and "# Foxes and dogs" in went["markdown"]


async def network_policy(p: Scraper, client: docker.DockerClient, namespace: str) -> None:
    """The scrape goes through the sandbox's browser: public mode keeps the host out of reach."""
    decoy = Decoy(gateway_of(client, namespace))
    try:
        await p.error(f"http://{decoy.host}:{decoy.port}/", "HOST_UNREACHABLE")
        job = await p.s.error("scrape", {"url": f"http://{decoy.host}:{decoy.port}/"})  # a job sandbox: same
        assert job.code == "HOST_UNREACHABLE" and "network mode" in job.data["recoverHint"]
        assert decoy.accepted == 0
    finally:
        decoy.close()


async def job_sandboxes_leave_nothing(s: Session, client: docker.DockerClient, namespace: str) -> None:
    """Without sandboxId: a sandbox for the call, removed after success, failure and cancellation."""
    before = engine_state(client, namespace)
    own = await s.ok("scrape", {"url": OWN_AGENT})
    assert own["status"] == 200 and own["contentType"] == "application/json" and '"status"' in own["markdown"]
    assert engine_state(client, namespace) == before
    part = await s.ok("scrape", {"url": OWN_AGENT, "maxChars": 20})  # its next parts need no sandbox at all
    rest = await s.ok("scrape", {"url": OWN_AGENT, "offset": part["nextOffset"]})
    assert rest["reused"] and rest["nextOffset"] is None and rest["totalChars"] == part["totalChars"]
    assert len(part["markdown"] + rest["markdown"]) == part["totalChars"] and engine_state(client, namespace) == before
    refused = await s.error("scrape", {"url": f"http://127.0.0.1:{PORT}/"})  # nothing serves in a job sandbox
    assert refused.code == "HOST_UNREACHABLE" and "sandboxId" not in refused.data["details"]
    assert engine_state(client, namespace) == before

    # The client gives up while the page is being waited for: the server cancels, the sandbox goes.
    async with anyio.create_task_group() as tg:
        tg.start_soon(s.client.call_tool, "scrape", {"url": OWN_AGENT, "waitFor": 30_000})
        await until(lambda: len(engine_state(client, namespace)[0]) > len(before[0]), 60)
        await anyio.sleep(3)  # the sandbox is up and the page loading
        tg.cancel_scope.cancel()
    await until(lambda: engine_state(client, namespace) == before, 30)


async def the_tab(s: Session, sid: str) -> None:
    """browser_scrape: the page a tab shows after a click, read by the same engine; nothing loaded again."""
    await s.ok("browser_goto", {"sandboxId": sid, "url": f"{BASE}/more"})
    before = await s.call("browser_scrape", {"sandboxId": sid})
    assert before.summary.startswith(f"browser_scrape ok: {BASE}/more (Fox listing): markdown, "), before.summary
    assert "# Foxes, part one" in before.data["markdown"] and "part two" not in before.data["markdown"]
    await s.ok("browser_click", {"sandboxId": sid, "selector": "#more"})
    after = await s.ok("browser_scrape", {"sandboxId": sid, "onlyMainContent": False})
    assert "## Foxes, part two" in after["markdown"] and "Footer words" in after["markdown"]
    assert after["url"] == f"{BASE}/more" and after["contentType"] == "text/html" and after["tabId"]
    links = await s.ok("browser_scrape", {"sandboxId": sid, "format": "links"})
    assert f"{BASE}/fox/2" in links["links"]
    only = await s.ok("browser_scrape", {"sandboxId": sid, "includeTags": ["#later"]})
    assert only["markdown"].startswith("## Foxes, part two"), only
    for args, field in (({"includeTags": ["div["]}, "includeTags"), ({"format": "screenshot"}, "format")):
        err = await s.error("browser_scrape", {"sandboxId": sid, **args})
        assert err.code == "INVALID_PARAMETER" and err.data["details"]["errors"][0]["field"] == field, err.data
    for path, fmt in (("/sitemap.xml", "links"), ("/feed.xml", "markdown")):  # read as scrape reads them
        await s.ok("browser_goto", {"sandboxId": sid, "url": f"{BASE}{path}"})
        shown = await s.ok("browser_scrape", {"sandboxId": sid, "format": fmt})
        fresh = await s.ok("scrape", {"sandboxId": sid, "url": f"{BASE}{path}", "format": fmt})
        assert shown[fmt] == fresh[fmt] and shown[fmt], (path, shown)
    await s.ok("browser_goto", {"sandboxId": sid, "url": f"{BASE}/noise.png"})
    picture = await s.error("browser_scrape", {"sandboxId": sid})
    assert picture.code == "UNSUPPORTED_CONTENT_TYPE", picture.data


# -- the test --------------------------------------------------------------------------------


async def test_scrape(
    http_server: HttpServer, tokens: dict[str, str], docker_client: docker.DockerClient, namespace: str
) -> None:
    async with http_session(http_server.url, tokens["alice"]) as alice:
        await bad_inputs_open_nothing(alice, docker_client, namespace)
        sid = await serve_pages(alice)
        try:
            p = Scraper(alice, sid)
            await p.ok("/article")  # the browser is up: what is open now is the baseline
            baseline = await p.open_in_browser()
            await formats(p)
            await waits_and_fallback(p)
            await pages_that_fail(p)
            await self_signed_on_loopback_only(p)
            await behind_http_auth(p)
            await behind_a_token(p)
            await through_a_proxy(p)
            await a_time_zone_and_a_place(p)
            await ads_not_loaded(p)
            await cookie_banners_refused(p)
            await actions_before_reading(p)
            [box] = docker_client.containers.list(filters={"label": f"{labels.SANDBOX}={sid}"})
            logs = box.logs()  # the agent's log (the site's own, too) never has a password or a token
            assert b"staging-pw-31" not in logs and MEMBERS_TOKEN.encode() not in logs
            await network_policy(p, docker_client, namespace)
            assert p.calls >= 20
            assert await p.open_in_browser() == baseline  # no session, context or tab left behind
            await the_tab(alice, sid)
            async with http_session(http_server.url, tokens["bob"]) as bob:
                theirs = await bob.error("scrape", {"url": f"{BASE}/article", "sandboxId": sid})
                assert theirs.code == "SANDBOX_NOT_FOUND"
                tab = await bob.error("browser_scrape", {"sandboxId": sid})
                assert tab.code == "SANDBOX_NOT_FOUND"
            await job_sandboxes_leave_nothing(alice, docker_client, namespace)
        finally:
            await alice.call("sandbox_destroy", {"sandboxId": sid})
    assert "Traceback" not in http_server.log() and "staging-pw-31" not in http_server.log()
    assert MEMBERS_TOKEN not in http_server.log()
