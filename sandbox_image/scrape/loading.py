"""Loading a page for scrape: navigate, keep the main document's response, and give every way a load
can fail its own error — DNS, unreachable host, TLS, not a web page, too large, out of time.

An HTTP error status is not a failure here: the page the server sent (a 404 page, a 500 page) is
returned with its `status`, because what the server says is information the caller asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import time
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.scrape import MAX_PAGE_BYTES, MAX_PDF_BYTES, SCREENSHOT_FORMATS
from sandbox_image.browser import headers
from sandbox_image.browser.background import consume, quietly, spawn
from sandbox_image.browser.errors import (
    AUTH_ERROR,
    NET_ERROR,
    PROXY_ERRORS,
    PROXY_HINT,
    PlaywrightError,
    PlaywrightTimeoutError,
    clean_message,
    net_error_to_code,
)
from sandbox_image.browser.headers import Fetched
from sandbox_image.browser.tab import Tab
from sandbox_image.browser.urls import ERROR_PAGE, redact
from sandbox_image.scrape import feed, sitemap
from sandbox_image.scrape.pdf import PDF_TYPE

if TYPE_CHECKING:
    from playwright.async_api import CDPSession, Page, Request, Response

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
XML_TYPES = frozenset({"text/xml", "application/xml"})
AUTH_HINT = (
    "pass httpAuth {username, password}: given to that site only, when it asks (a wrong password comes back as "
    "the site's 401 page)"
)
GZIP_TYPES = frozenset({"application/gzip", "application/x-gzip"})
COUNTING_START_S = 1.0  # at most this long to open the DevTools session that counts a document's bytes
# Which reader (service.READERS) reads a file as text instead of the page the browser made of it.
FileReader = Literal["pdf", "feed", "sitemap"]


@dataclass(frozen=True)
class Loaded:
    status: int | None
    content_type: str  # the media type the browser shows the document as, e.g. "text/html"
    response_html: str | None  # the server's HTML, for extraction's fallback to it (HTML pages only)
    file: bytes | None = None  # a document read as text by `reader` rather than rendered (the server's bytes)
    reader: FileReader | None = None
    url: str | None = None  # where that file came from, after redirects (a page's is the tab's url)

    @property
    def is_html(self) -> bool:
        return self.content_type in HTML_TYPES

    @property
    def is_text(self) -> bool:
        """A text document the browser shows as plain text (text/plain, JSON, CSV, …)."""
        ct = self.content_type
        if ct.startswith("text/"):
            return ct not in HTML_TYPES and ct != "text/xml"
        return ct == "application/json" or ct.endswith("+json")


def media_type(header: str | None) -> str:
    return (header or "").split(";", 1)[0].strip().lower()


def unsupported(url: str, content_type: str, fmt: str) -> BoxwrightError:
    details = {"url": redact(url), "contentType": content_type, "format": fmt}
    if fmt in SCREENSHOT_FORMATS:  # the browser downloads it rather than show it: nothing to capture
        return BoxwrightError(
            ErrorCode.UNSUPPORTED_CONTENT_TYPE,
            f"{redact(url)} is {content_type or 'a download'}: the browser downloads it rather than show it, so "
            "there is nothing to capture",
            hint="a PDF is read as text with format markdown, html or links; any other file: fetch it with code_run "
            "(curl, python)",
            details=details,
        )
    return BoxwrightError(
        ErrorCode.UNSUPPORTED_CONTENT_TYPE,
        f"{redact(url)} is {content_type or 'a download'}, not a web page: format {fmt!r} needs an HTML, text or "
        "PDF document, an RSS or Atom feed or an XML sitemap",
        details=details,
    )


def no_page_to_act_on(url: str, content_type: str) -> BoxwrightError:
    """actions asked of a document read as a file (a PDF, a feed, a sitemap): there is no page to act on."""
    return BoxwrightError(
        ErrorCode.UNSUPPORTED_CONTENT_TYPE,
        f"{redact(url)} is {content_type}, read as a file rather than shown as a page: there is nothing to click "
        "or type into",
        hint="call again without actions to read it as text",
        details={"url": redact(url), "contentType": content_type},
    )


async def reloaded(tab: Tab, frame: MainFrame, loaded: Loaded) -> Loaded:
    """After an action sent the page to another document: that document's status and type; the server's HTML
    of the first one no longer counts."""
    try:
        content_type = str(await tab.guard(tab.check().evaluate("document.contentType")) or "").lower()
    except PlaywrightError:
        content_type = loaded.content_type
    status = frame.response.status if frame.response is not None else loaded.status
    return Loaded(status=status, content_type=content_type, response_html=None)


def timed_out(url: str, timeout_ms: float) -> BoxwrightError:
    return BoxwrightError(
        ErrorCode.NAVIGATION_TIMEOUT,
        f"{redact(url)} did not load within {int(timeout_ms)} ms",
        hint="the site is slow or hangs: retry with a larger timeoutMs, or check that it responds",
        details={"url": redact(url), "timeoutMs": int(timeout_ms)},
    )


def too_large(url: str, size: int, what: str, limit: int = MAX_PAGE_BYTES) -> BoxwrightError:
    return BoxwrightError(
        ErrorCode.PAGE_TOO_LARGE,
        f"{redact(url)} is too large to read: its {what} is {size / 1048576:.1f} MiB (at most {limit // 1048576} MiB)",
        details={"url": redact(url), "bytes": size, "maxBytes": limit, "measured": what},
    )


def failed(
    url: str,
    message: str,
    fmt: str,
    response: Response | None,
    *,
    sent_from: str | None = None,
    sent_by: str = "its own script",
    proxied: bool = False,
) -> BoxwrightError:
    """Why a navigation did not produce a page, as the most specific code there is.

    `sent_from`: the page that navigated to `url` after it had loaded — by its own script, or `sent_by` one of
    the call's actions (a link clicked, a form submitted). `proxied`: the context goes through a proxy.
    """
    if "Download is starting" in message:  # a PDF, an archive: anything the browser downloads
        content_type = media_type(response.headers.get("content-type")) if response is not None else ""
        return unsupported(url, content_type, fmt)
    match = NET_ERROR.search(message)
    net_error = match.group(1) if match else ""
    code = net_error_to_code(net_error) if net_error else ErrorCode.NAVIGATION_FAILED
    reason = {
        ErrorCode.DNS_FAILURE: "its host name does not resolve",
        ErrorCode.HOST_UNREACHABLE: "nothing answered there",
        ErrorCode.TLS_ERROR: "its TLS connection was refused",
    }.get(code, "the browser could not load it")
    hint = None
    if net_error == AUTH_ERROR and proxied:  # Chromium says the same of the proxy's 407 as of the site's 401
        reason = "the proxy or the site asks for a username and password"
        hint = f"the proxy's: give proxy.username and proxy.password; the site's: {AUTH_HINT}"
    elif net_error == AUTH_ERROR:
        reason, hint = "the site asks for a username and password (HTTP authentication)", AUTH_HINT
    elif net_error in PROXY_ERRORS:
        reason, hint = "the proxy did not take the request", PROXY_HINT
    details: dict[str, str] = {"url": redact(url)}
    if net_error:
        details["netError"] = net_error
    if sent_from is None:
        return BoxwrightError(
            code, f"could not load {redact(url)}: {reason} ({net_error or message})", hint=hint, details=details
        )
    details["sentFrom"] = redact(sent_from)
    return BoxwrightError(
        code,
        f"{redact(sent_from)} loaded, then {sent_by} sent the browser to {redact(url)}, which failed: {reason} "
        f"({net_error or message}); what the browser shows is its error page, not the page",
        hint=f"the page sends the browser on to {redact(url)}: check that that address answers from the sandbox "
        "(its network mode), or scrape it directly",
        details=details,
    )


class MainFrame:
    """The main frame's navigations while a scrape runs: the last response (kept even when goto itself
    fails) and the last navigation that failed — a page whose script sends it on after it loaded (an
    http page that moves itself to https, a JS redirect) may end on Chromium's error page."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.response: Response | None = None
        self.failure: tuple[str, str] | None = None  # (url, net::ERR_…)
        self.oversized = asyncio.Event()  # the document's Content-Length, or what has arrived, is past MAX_PAGE_BYTES
        self.oversized_bytes = 0
        self.oversized_as = "HTML"
        self._arriving: dict[str, int] = {}  # DevTools request id of a main-frame document -> bytes so far
        page.on("response", self._on_response)
        page.on("requestfailed", self._on_failed)

    async def counting(self) -> CDPSession | None:
        """A DevTools session of our own that counts a document's bytes as they arrive: a page sent without a
        Content-Length (chunked, or a server that streams it) is stopped once past MAX_PAGE_BYTES too, not
        given to the renderer whole. None when Chromium does not answer in time: then only a stated length
        is checked, and the rendered document is measured once it has loaded."""
        cdp = None
        with contextlib.suppress(PlaywrightError, TimeoutError):
            async with asyncio.timeout(COUNTING_START_S):
                cdp = await self.page.context.new_cdp_session(self.page)
                main = (await cdp.send("Page.getFrameTree"))["frameTree"]["frame"]["id"]
                cdp.on("Network.responseReceived", functools.partial(self._on_document, main))
                cdp.on("Network.dataReceived", self._on_data)
                await cdp.send("Network.enable")
                return cdp
        if cdp is not None:
            spawn(quietly(cdp.detach()))
        return None

    def _on_document(self, main: str, event: dict[str, Any]) -> None:
        mime = str((event.get("response") or {}).get("mimeType") or "")
        if event.get("type") == "Document" and event.get("frameId") == main and _a_page_type(mime):
            self._arriving[str(event.get("requestId"))] = 0

    def _on_data(self, event: dict[str, Any]) -> None:
        request = str(event.get("requestId"))
        if request in self._arriving:
            self._arriving[request] += int(event.get("dataLength") or 0)
            if self._arriving[request] > MAX_PAGE_BYTES and not self.oversized.is_set():
                self.oversized_bytes, self.oversized_as = self._arriving[request], "HTML as it arrived"
                self.oversized.set()

    def _main_navigation(self, request: Request) -> bool:
        try:
            return request.is_navigation_request() and request.frame is self.page.main_frame
        except PlaywrightError:  # service-worker requests have no frame
            return False

    def _on_response(self, response: Response) -> None:
        if self._main_navigation(response.request):
            self.response = response
            length = response.headers.get("content-length", "")
            if length.isdigit() and int(length) > MAX_PAGE_BYTES and _rendered_as_a_page(response):
                self.oversized_bytes = int(length)
                self.oversized.set()

    def _on_failed(self, request: Request) -> None:
        if self._main_navigation(request):
            self.failure = (request.url, request.failure or "")

    def detach(self) -> None:
        self.page.remove_listener("response", self._on_response)
        self.page.remove_listener("requestfailed", self._on_failed)


def _rendered_as_a_page(response: Response) -> bool:
    """Whether the browser renders the answer as a document (a PDF or an archive is a download instead)."""
    return _a_page_type(media_type(response.headers.get("content-type")))


def _a_page_type(declared: str) -> bool:
    return not declared or declared.startswith("text/") or declared in HTML_TYPES | XML_TYPES | feed.FEED_TYPES


async def _goto(tab: Tab, url: str, timeout_ms: float, frame: MainFrame) -> Response | None:
    """page.goto until DOMContentLoaded — unless the document announces a size past MAX_PAGE_BYTES, or sends
    more than that without announcing it: then PAGE_TOO_LARGE as soon as its headers say so or those bytes
    have arrived, before the renderer spends its memory on it (27 MB of HTML ran the sandbox's renderer out
    of memory, PAGE_CRASHED after 13 s)."""
    page = tab.check()
    started = time.monotonic()
    cdp = await frame.counting()
    timeout_ms -= (time.monotonic() - started) * 1000
    navigation = page.goto(url, wait_until="domcontentloaded", timeout=max(1.0, timeout_ms))
    going = asyncio.ensure_future(tab.guard(navigation))
    too_big = asyncio.ensure_future(frame.oversized.wait())
    try:
        await asyncio.wait([going, too_big], return_when=asyncio.FIRST_COMPLETED)
    finally:
        too_big.cancel()
        stopped = not going.done()  # too large, or the scrape itself was cancelled
        if stopped:
            going.cancel()
            going.add_done_callback(consume)
        if cdp is not None:  # in the background: detaching waits for the renderer
            spawn(quietly(cdp.detach()))
    if stopped:
        response = frame.response
        raise too_large(response.url if response is not None else url, frame.oversized_bytes, frame.oversized_as)
    return going.result()


def _proxied(tab: Tab) -> bool:
    return tab.session.options.proxy is not None


def on_error_page(tab: Tab, url: str, fmt: str, frame: MainFrame, sent_by: str = "its own script") -> None:
    """After the wait (or an action): the page at `url` moved to an address that failed → that failure, not
    Chromium's error page returned as the page's content."""
    if not tab.url.startswith(ERROR_PAGE):
        return
    target, message = frame.failure or (url, "the page moved to an address that failed")
    raise failed(target, message, fmt, None, sent_from=url, sent_by=sent_by, proxied=_proxied(tab))


def is_pdf_download(message: str, response: Response) -> bool:
    """The browser took the navigation for a download that is a PDF by the server's word, or by its name
    when the server only says "some bytes" (many send PDFs as application/octet-stream)."""
    if "Download is starting" not in message:
        return False
    declared = media_type(response.headers.get("content-type"))
    named = urlsplit(response.url).path.lower().endswith(".pdf")
    return declared == PDF_TYPE or (named and declared in ("", "application/octet-stream"))


def is_gzip_download(message: str, response: Response) -> bool:
    """A gzipped file the browser would download (a sitemap.xml.gz, a feed): gzip by the server's word, or by
    its name when the server only says "some bytes"."""
    if "Download is starting" not in message:
        return False
    declared = media_type(response.headers.get("content-type"))
    named = urlsplit(response.url).path.lower().endswith(".gz")
    return declared in GZIP_TYPES or (named and declared in ("", "application/octet-stream"))


async def fetch_again(tab: Tab, url: str, fmt: str, timeout_ms: float, limit: int, what: str) -> Fetched:
    """The file the browser would have downloaded, fetched as the page's own requests go (browser.headers.get:
    the context's cookies, the caller's headers to their site): the same request again, from the sandbox (its
    network policy applies), within the time left to load; at most `limit` bytes of body (PAGE_TOO_LARGE past
    that)."""
    if timeout_ms <= 0:
        raise timed_out(url, timeout_ms)
    session = tab.session
    context = tab.check().context
    try:
        return await tab.guard(headers.get(context, session.options, session.engine.playwright, url, timeout_ms, limit))
    except headers.TooLarge as exc:
        raise too_large(url, exc.size, what, limit) from None
    except headers.TooManyRedirects:
        raise failed(url, f"more than {headers.MAX_REDIRECTS} redirects", fmt, None) from None
    except PlaywrightTimeoutError:
        raise timed_out(url, timeout_ms) from None
    except PlaywrightError as exc:
        raise failed(url, clean_message(exc), fmt, None, proxied=_proxied(tab)) from None


async def _pdf(tab: Tab, url: str, fmt: str, timeout_ms: float) -> Loaded:
    response = await fetch_again(tab, url, fmt, timeout_ms, MAX_PDF_BYTES, "PDF")
    body = response.body
    if b"%PDF-" not in body[:1024]:  # where the format puts its header: a file named .pdf that is not one
        raise unsupported(url, media_type(response.headers.get("content-type")), fmt)
    return Loaded(response.status, PDF_TYPE, response_html=None, file=body, reader="pdf", url=response.url)


async def _gzipped(tab: Tab, url: str, fmt: str, timeout_ms: float) -> Loaded:
    """A gzipped feed or sitemap, unpacked to at most MAX_PAGE_BYTES (a small file that unpacks to more — a
    gzip bomb — is PAGE_TOO_LARGE, found out without unpacking the rest)."""
    response = await fetch_again(tab, url, fmt, timeout_ms, MAX_PAGE_BYTES, "gzip file")
    packed = response.body
    declared = media_type(response.headers.get("content-type"))
    unpacker = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        body = unpacker.decompress(packed, MAX_PAGE_BYTES + 1)
    except zlib.error:
        raise unsupported(url, declared, fmt) from None
    if len(body) > MAX_PAGE_BYTES:
        raise too_large(response.url, len(body), "unpacked gzip file")
    reader = xml_reader("", "application/xml", body)
    if reader is None:  # only feeds and sitemaps are read out of a gzip file
        raise unsupported(url, declared or "application/gzip", fmt)
    return Loaded(response.status, declared or "application/gzip", None, file=body, reader=reader, url=response.url)


def xml_reader(declared: str, shown: str, head: bytes) -> FileReader | None:
    """A feed: served as a feed type (by the server, or as the browser took it), or as XML that opens like
    one; a sitemap: XML that opens like one. None: neither."""
    if declared in feed.FEED_TYPES or shown in feed.FEED_TYPES:
        return "feed"
    if declared not in XML_TYPES and shown not in XML_TYPES:
        return None
    if feed.opens_as_feed(head):
        return "feed"
    return "sitemap" if sitemap.opens_as_sitemap(head) else None


async def _body(response: Response, url: str, what: str) -> bytes | None:
    """What the server sent, refused when larger than MAX_PAGE_BYTES; None when unavailable."""
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_PAGE_BYTES:
        raise too_large(url, int(length), what)
    try:
        body = await response.body()
    except PlaywrightError:  # no body kept (e.g. evicted)
        return None
    if len(body) > MAX_PAGE_BYTES:
        raise too_large(url, len(body), what)
    return body


async def _server_html(response: Response, url: str) -> str | None:
    """The HTML the server sent, refused when larger than MAX_PAGE_BYTES; None when unavailable (extraction
    then works from the rendered page alone)."""
    body = await _body(response, url, "HTML")
    if body is None:
        return None
    # Chromium hands a document over decoded, as UTF-8, whatever charset the server sent it in (Shift_JIS,
    # GBK, Latin-1 alike: its own reading of header, <meta> and bytes); decoding it again by the header's
    # charset turned such a page into nonsense. Only bytes that are not UTF-8 fall back to the header.
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    charset = re.search(r"charset=([\w.:-]+)", response.headers.get("content-type", ""), re.IGNORECASE)
    try:
        return body.decode(charset.group(1) if charset else "utf-8", errors="replace")
    except LookupError:  # an unknown charset name
        return body.decode("utf-8", errors="replace")


async def load(tab: Tab, url: str, fmt: str, timeout_ms: float, frame: MainFrame, *, want_html: bool) -> Loaded:
    """Navigate `tab` to `url` (until DOMContentLoaded) within `timeout_ms`; the page's status and type.

    `frame` watches the tab's page (attached by the caller for the whole scrape). `want_html`: the caller
    will parse the page, so its size is checked and the server's HTML kept.
    """
    page = tab.check()
    started = time.monotonic()

    def left_ms() -> float:
        return timeout_ms - (time.monotonic() - started) * 1000

    try:
        response = await _goto(tab, url, timeout_ms, frame)
    except PlaywrightTimeoutError:
        raise timed_out(url, timeout_ms) from None
    except PlaywrightError as exc:
        message = clean_message(exc)
        downloaded = frame.response if fmt not in SCREENSHOT_FORMATS else None
        if downloaded is not None and is_pdf_download(message, downloaded):
            return await _pdf(tab, downloaded.url, fmt, left_ms())
        if downloaded is not None and is_gzip_download(message, downloaded):
            return await _gzipped(tab, downloaded.url, fmt, left_ms())
        raise failed(url, message, fmt, frame.response, proxied=_proxied(tab)) from None
    response = response or frame.response
    try:
        content_type = str(await tab.guard(page.evaluate("document.contentType")) or "").lower()
    except PlaywrightError:
        content_type = media_type(response.headers.get("content-type")) if response is not None else ""
    if content_type == PDF_TYPE and fmt not in SCREENSHOT_FORMATS:  # a browser that shows PDFs inline
        return await _pdf(tab, page.url, fmt, left_ms())
    status = response.status if response is not None else None
    if response is not None and fmt not in SCREENSHOT_FORMATS:
        declared = media_type(response.headers.get("content-type"))
        if {declared, content_type} & (XML_TYPES | feed.FEED_TYPES):
            body = await _body(response, url, "XML document")
            reader = xml_reader(declared, content_type, body or b"")
            if body is not None and reader is not None:
                return Loaded(status, declared or content_type, None, file=body, reader=reader, url=response.url)
    loaded = Loaded(status=status, content_type=content_type, response_html=None)
    if want_html and loaded.is_html and response is not None:
        loaded = Loaded(loaded.status, loaded.content_type, await _server_html(response, url))
    return loaded
