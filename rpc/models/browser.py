"""browser.* methods: sessions (isolated contexts), tabs, element refs, snapshots and actions.

Addressing: every method takes optional `sessionId` and `tabId`. Without them it acts on the
sandbox's default session and that session's active tab; with a `tabId` it acts on that tab
without changing which tab is active (templates drive several tabs at once this way).

Element selectors are either a ref from the latest `browser.snapshot` of that tab (`ref_12`) or a
CSS selector. A ref is bound to the document it was issued for: after a navigation, or once its
element is gone, it is refused with STALE_REF — it never resolves to a different element.
"""

from __future__ import annotations

import re
import zoneinfo
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, StringConstraints, field_validator, model_validator

from rpc.models.base import Params, Result

MAX_TABS_PER_SESSION = 20
MAX_SESSIONS = 10
DEFAULT_ACTION_TIMEOUT_MS = 10_000
DEFAULT_NAVIGATION_TIMEOUT_MS = 30_000
MAX_BROWSER_TIMEOUT_MS = 120_000

WaitUntil = Literal["load", "domcontentloaded", "networkidle", "commit"]


class TabParams(Params):
    sessionId: str | None = Field(
        None, min_length=1, max_length=64, description="Browser session; default session if omitted"
    )
    tabId: str | None = Field(None, min_length=1, max_length=64, description="Tab to act on; the active tab if omitted")


class ElementParams(TabParams):
    selector: str = Field(
        min_length=1, max_length=2000, description="A ref from browser_snapshot (e.g. 'ref_12') or a CSS selector"
    )
    timeoutMs: int = Field(DEFAULT_ACTION_TIMEOUT_MS, ge=100, le=MAX_BROWSER_TIMEOUT_MS)


class TabResult(Result):
    tabId: str
    url: str
    title: str


# -- navigation -------------------------------------------------------------------------------
class GotoParams(TabParams):
    url: str = Field(min_length=1, max_length=8192, description="http(s), about: or data: URL")
    waitUntil: WaitUntil = Field("load", description="When navigation counts as done")
    timeoutMs: int = Field(DEFAULT_NAVIGATION_TIMEOUT_MS, ge=100, le=MAX_BROWSER_TIMEOUT_MS)


class GotoResult(TabResult):
    status: int | None = Field(None, description="HTTP status of the main document (null for about:/data:)")


class HistoryParams(TabParams):
    timeoutMs: int = Field(DEFAULT_NAVIGATION_TIMEOUT_MS, ge=100, le=MAX_BROWSER_TIMEOUT_MS)


class HistoryResult(TabResult):
    navigated: bool = Field(description="False when there was no history entry to go to")


# -- actions ----------------------------------------------------------------------------------
class ClickParams(ElementParams):
    button: Literal["left", "right", "middle"] = "left"
    doubleClick: bool = False


class ActionResult(TabResult):
    navigated: bool = Field(False, description="The action started a navigation: refs from before are now stale")


class TypeParams(ElementParams):
    text: str = Field(max_length=100_000)
    clear: bool = Field(True, description="Replace the field's content (false: append keystrokes)")
    submit: bool = Field(False, description="Press Enter afterwards")


class PressKeyParams(TabParams):
    key: str = Field(min_length=1, max_length=64, description="e.g. 'Enter', 'Escape', 'Control+A', 'ArrowDown'")
    selector: str | None = Field(None, max_length=2000, description="Focus this element first")
    timeoutMs: int = Field(DEFAULT_ACTION_TIMEOUT_MS, ge=100, le=MAX_BROWSER_TIMEOUT_MS)


class HoverParams(ElementParams):
    pass


class SelectOptionParams(ElementParams):
    values: list[str] = Field(min_length=1, max_length=100, description="Option values or labels to select")


class SelectOptionResult(ActionResult):
    selected: list[str] = Field(description="Values now selected")


class ScrollParams(TabParams):
    selector: str | None = Field(None, max_length=2000, description="Scroll this element into view")
    direction: Literal["up", "down", "left", "right"] = "down"
    amount: int | None = Field(None, ge=1, le=100_000, description="Pixels; one viewport if omitted")
    timeoutMs: int = Field(DEFAULT_ACTION_TIMEOUT_MS, ge=100, le=MAX_BROWSER_TIMEOUT_MS)


class ScrollResult(TabResult):
    scrollX: int
    scrollY: int
    atTop: bool
    atBottom: bool


# -- reading the page -------------------------------------------------------------------------
class SnapshotParams(TabParams):
    maxTextLen: int = Field(8000, ge=0, le=200_000, description="Cap on the page text returned")
    maxElements: int = Field(300, ge=0, le=5000, description="Cap on the interactive elements returned")
    timeoutMs: int = Field(10_000, ge=100, le=MAX_BROWSER_TIMEOUT_MS)


class SnapshotResult(TabResult):
    text: str = Field(description="Visible text of the page, capped at maxTextLen")
    elements: str = Field(description='One interactive element per line: [ref_12] button "Sign in"')
    elementCount: int = Field(description="Interactive elements on the page (before the cap)")
    truncated: bool = Field(description="text or elements were cut to respect the caps")


class ScreenshotParams(TabParams):
    fullPage: bool = Field(False, description="The whole scrollable page instead of the viewport")
    selector: str | None = Field(None, max_length=2000, description="Only this element")
    timeoutMs: int = Field(DEFAULT_ACTION_TIMEOUT_MS, ge=100, le=MAX_BROWSER_TIMEOUT_MS)


MAX_FULL_PAGE_HEIGHT = 8000


class ScreenshotInfo(TabResult):
    """What is known of a screenshot besides its pixels (the MCP tool's structured result)."""

    mimeType: Literal["image/png"] = "image/png"
    width: int
    height: int
    sizeBytes: int = Field(description="Size of the PNG in bytes")
    truncated: bool = Field(False, description=f"fullPage was cut at {MAX_FULL_PAGE_HEIGHT} px of height")


class ScreenshotResult(ScreenshotInfo):
    data: str = Field(description="Base64 PNG", repr=False)


class WaitForStableParams(TabParams):
    timeoutMs: int = Field(10_000, ge=100, le=MAX_BROWSER_TIMEOUT_MS)
    quietMs: int = Field(500, ge=50, le=10_000, description="DOM and network must stay quiet this long")


class StabilityResult(Result):
    tabId: str
    stable: bool
    domStable: bool
    networkPending: int
    loadState: str
    elapsedMs: int


class PageInfoParams(TabParams):
    maxElements: int = Field(50, ge=0, le=1000)
    visibleOnly: bool = True
    timeoutMs: int = Field(10_000, ge=100, le=MAX_BROWSER_TIMEOUT_MS)


class PageElement(Result):
    ref: str
    role: str
    name: str = ""
    value: str | None = None
    disabled: bool = False
    region: str | None = Field(None, description="Landmark the element sits in")


class PageRegion(Result):
    role: str = Field(description="banner, navigation, main, form, search, complementary, contentinfo, dialog…")
    name: str = ""
    elementCount: int = 0


class PageSummary(Result):
    url: str
    title: str
    type: str = Field(description="login, search, form, article, listing, error or other")
    summary: str


class DialogInfo(Result):
    type: str
    message: str
    defaultValue: str | None = None


class PageInfoResult(Result):
    tabId: str
    page: PageSummary
    elements: list[PageElement]
    totalElements: int
    truncated: bool
    regions: list[PageRegion]
    intents: list[str] = Field(default_factory=list, description="What the page invites: login, search, submit…")
    stability: StabilityResult | None = None
    pendingDialog: DialogInfo | None = None


class PageContentParams(TabParams):
    maxLength: int = Field(4000, ge=100, le=200_000)
    timeoutMs: int = Field(10_000, ge=100, le=MAX_BROWSER_TIMEOUT_MS)


class ContentSection(Result):
    heading: str = ""
    level: int = 0
    text: str


class PageContentResult(TabResult):
    sections: list[ContentSection]
    totalLength: int = Field(description="Characters of main text before the cap")
    truncated: bool


# -- tabs, sessions, dialogs, scripts, console ------------------------------------------------
class TabsParams(Params):
    sessionId: str | None = Field(None, min_length=1, max_length=64)
    action: Literal["list", "new", "close", "select"] = "list"
    tabId: str | None = Field(None, min_length=1, max_length=64, description="Tab to close or select")
    url: str | None = Field(None, max_length=8192, description="For 'new': open this URL")
    activate: bool = Field(True, description="For 'new': make it the active tab")
    timeoutMs: int = Field(DEFAULT_NAVIGATION_TIMEOUT_MS, ge=100, le=MAX_BROWSER_TIMEOUT_MS)


class TabInfo(Result):
    tabId: str
    url: str
    title: str
    active: bool


class TabsResult(Result):
    sessionId: str
    tabs: list[TabInfo]
    activeTabId: str | None
    tabId: str | None = Field(None, description="The tab the action created, closed or selected")


# A language tag as browsers take it (BCP 47: language, optional script, optional region), e.g. "de-DE", "fr",
# "zh-Hans-CN", "es-419".
Locale = Annotated[str, StringConstraints(pattern=r"^[A-Za-z]{2,3}(-[A-Za-z]{4})?(-([A-Za-z]{2}|[0-9]{3}))?$")]


def port_error(url: str) -> str | None:
    """What is wrong with the URL's port (beyond 65535, 0, not a number), or None: said before the browser
    is asked, which answers with an internal message (and only after a sandbox was started for it)."""
    try:
        port = urlsplit(url.strip()).port
    except ValueError as exc:  # "Port out of range 0-65535", "Port could not be cast to integer value as '8o'"
        if "Port" not in str(exc):
            return None  # not the port's fault (e.g. a broken IPv6 literal): the caller's own checks judge it
        return "its port is not a number from 1 to 65535"
    return "its port is 0, which nothing listens on" if port == 0 else None


def origin_of(url: str) -> str:
    """scheme://host[:port] as a browser compares origins: lower case, a default port left out."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise ValueError("not a URL") from None
    scheme, host = parts.scheme.lower(), (parts.hostname or "")
    if scheme not in ("http", "https") or not host:
        raise ValueError("must be an http:// or https:// origin, e.g. https://staging.example.com")
    if ":" in host:  # IPv6
        host = f"[{host}]"
    default = 443 if scheme == "https" else 80
    return f"{scheme}://{host}" + (f":{port}" if port not in (None, default) else "")


def _bare_origin(value: str) -> str:
    if urlsplit(value.strip()).path not in ("", "/"):
        raise ValueError("an origin has no path: scheme://host[:port]")
    return origin_of(value)


Origin = Annotated[str, Field(max_length=2048), AfterValidator(_bare_origin)]


class HttpAuth(Params):
    """HTTP authentication for one site — the server's Basic, Digest or NTLM challenge (a staging site behind a
    password) answered with these, and only there: never sent to another origin, not even after a redirect.
    The password is never logged, listed or returned."""

    username: str = Field(max_length=256)
    password: str = Field(max_length=1024, repr=False)
    origin: Origin | None = Field(
        None,
        description="The one site the credentials are for, scheme://host[:port]. scrape: the url's own by default; "
        "a browser session: required",
    )


# Request headers a caller adds (`headers`): a token for an API-gated site, a cookie, a header a staging
# server wants. Names the browser owns are refused (it would drop or mangle them), with the option that does
# the job where there is one.
MAX_HEADERS = 32
MAX_HEADER_VALUE = 8192
MAX_HEADERS_BYTES = 32 * 1024
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # RFC 9110 field-name
_VALUE = re.compile(r"^[\t\x20-\x7e]*$")
_OWN_HEADERS = {
    "user-agent": "set userAgent instead",
    "accept-language": "set locale instead (e.g. 'de-DE')",
}
_BROWSER_HEADERS = frozenset(
    {"host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
     "expect", "proxy-connection", "accept-encoding"}
)  # fmt: skip


def _headers_ok(headers: dict[str, str] | None) -> dict[str, str] | None:
    if headers is None:
        return None
    seen: set[str] = set()
    for name, value in headers.items():
        low = name.lower()
        if not _TOKEN.fullmatch(name) or len(name) > 256:
            raise ValueError(f"{name[:60]!r} is not a header name (letters, digits and !#$%&'*+.^_`|~- only)")
        if low in seen:
            raise ValueError(f"{name!r} is given twice (header names are case-insensitive)")
        seen.add(low)
        hint = _OWN_HEADERS.get(low)
        if low in _BROWSER_HEADERS or low.startswith(("sec-", "proxy-")) or hint:
            raise ValueError(f"{name!r} is set by the browser itself" + (f"; {hint}" if hint else ""))
        if not _VALUE.fullmatch(value) or len(value) > MAX_HEADER_VALUE:
            raise ValueError(
                f"the value of {name!r} must be printable ASCII of at most {MAX_HEADER_VALUE} characters, no line "
                "breaks (percent-encode other characters)"
            )
    if sum(len(name) + len(value) for name, value in headers.items()) > MAX_HEADERS_BYTES:
        raise ValueError(f"the headers add up to more than {MAX_HEADERS_BYTES // 1024} KiB")
    return headers


RequestHeaders = Annotated[dict[str, str], Field(max_length=MAX_HEADERS), AfterValidator(_headers_ok)]


def _known_zone(name: str) -> str:
    if not _ZONE_NAME.fullmatch(name) or (_ZONES and name not in _ZONES):
        raise ValueError(f"{name!r} is not an IANA time zone (e.g. 'Europe/Berlin', 'America/New_York', 'UTC')")
    return name


# The zone database where this Python has one (a system without it checks the name's form; the browser
# refuses a name it does not know).
_ZONES = frozenset(zoneinfo.available_timezones())
_ZONE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){0,2}")
TimeZone = Annotated[str, StringConstraints(max_length=64), AfterValidator(_known_zone)]


class Geolocation(Params):
    latitude: float = Field(ge=-90, le=90)
    longitude: float = Field(ge=-180, le=180)
    accuracy: float = Field(0, ge=0, le=100_000, description="Metres")


PROXY_SCHEMES = ("http", "https", "socks5")


def _proxy_server(value: str) -> str:
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        raise ValueError("not a proxy address: scheme://host:port, e.g. http://proxy.internal:3128") from None
    if parts.scheme.lower() not in PROXY_SCHEMES or not parts.hostname:
        raise ValueError(f"a proxy is {', '.join(PROXY_SCHEMES)}://host:port (e.g. http://proxy.internal:3128)")
    if parts.username is not None or parts.password is not None:
        raise ValueError("give the proxy's credentials as username and password, not in its address")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError("a proxy address has no path: scheme://host:port")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme.lower()}://{host}" + (f":{port}" if port is not None else "")


class Proxy(Params):
    """A proxy every request of the context goes through (the page's, its scripts', a file fetched again) —
    a company's egress proxy, a residential one for a site that answers by region. Its password is never
    logged, listed or returned."""

    server: Annotated[str, Field(max_length=2048), AfterValidator(_proxy_server)] = Field(
        description="scheme://host:port — http, https or socks5 (e.g. http://proxy.internal:3128)"
    )
    username: str | None = Field(None, max_length=256, description="For a proxy that asks (HTTP proxies only)")
    password: str | None = Field(None, max_length=1024, repr=False)
    bypass: str | None = Field(
        None,
        max_length=2048,
        description="Hosts reached directly, comma-separated (e.g. '.internal.example, localhost')",
    )

    @model_validator(mode="after")
    def _auth_where_chromium_has_it(self) -> Proxy:
        if (self.username is None) != (self.password is None):
            raise ValueError("give the proxy's username and password together")
        if self.username is not None and self.server.startswith("socks5"):
            raise ValueError("Chromium does not sign in to a SOCKS proxy: use an HTTP proxy for one that asks")
        return self


# What blockResources may name: kinds whose absence changes no text a page shows (a stylesheet's would).
BLOCKABLE_RESOURCES: tuple[str, ...] = ("image", "media", "font")
BlockedResource = Literal["image", "media", "font"]


class ContextOptions(Params):
    """How a browser context opens pages — a scrape's, or a browser session's: the device, language and
    User-Agent they are shown for, whether a certificate the browser does not trust stops them, one site's
    HTTP credentials, and the requests it never makes. Fixed when the context is made."""

    mobile: bool = Field(
        False,
        description="As a phone shows pages: a 412×839 viewport, mobile Chrome's user agent, touch (Playwright's "
        "Pixel 7, one device pixel per CSS pixel) — for a site's mobile layout or screenshot",
    )
    locale: Locale | None = Field(
        None,
        description="The language to ask sites for, as a BCP 47 tag (e.g. 'de-DE', 'fr', 'ja-JP'): the browser "
        "sends it as Accept-Language and reports it as navigator.language and Intl's default. Default: en-US",
    )
    timezone: TimeZone | None = Field(
        None,
        description="The time zone the page's clock is in, an IANA name (e.g. 'Europe/Berlin', 'America/New_York'): "
        "dates and times a page writes with its scripts come out as there. Default: the sandbox's (UTC)",
    )
    geolocation: Geolocation | None = Field(
        None,
        description="Where the browser says it is when a page asks (navigator.geolocation, allowed without a "
        "prompt): {latitude, longitude, accuracy?} — for a store locator or a site that asks for a location",
    )
    skipTlsVerification: bool = Field(
        False,
        description="Open https:// pages whose certificate the browser does not trust (self-signed, expired, "
        "issued for another host) instead of failing — for a dev server or an intranet site you trust. The "
        "connection is still encrypted but no longer proves who is on the other end. Default: false",
    )
    userAgent: str | None = Field(
        None,
        min_length=1,
        max_length=512,
        pattern=r"^[\x20-\x7e]+$",
        description="The User-Agent the browser sends and reports (navigator.userAgent) instead of its own — for a "
        "site that serves another version to another browser. With mobile, replaces the phone's",
    )
    httpAuth: HttpAuth | None = Field(
        None,
        description="A username and password for a site behind HTTP authentication (Basic, Digest, NTLM), given only "
        "when that site asks and only to it; never logged, listed or returned",
    )
    proxy: Proxy | None = Field(
        None,
        description="Send every request through this proxy {server, username?, password?, bypass?} instead of "
        "straight out (the sandbox's network mode still applies: it must be able to reach the proxy)",
    )
    headers: RequestHeaders | None = Field(
        None,
        repr=False,
        description="HTTP headers to send with every request to the page's own site (e.g. {'Authorization': "
        "'Bearer …', 'Cookie': 'session=…'}; a Cookie joins the browser's own cookies) — never to another site, "
        "nor along a redirect (pass the address it ends at). Never logged, listed or returned",
    )
    headersOrigin: Origin | None = Field(
        None,
        description="The one site the headers go to, scheme://host[:port]. scrape: the url's own by default; a "
        "browser session: required with headers",
    )
    blockAds: bool = Field(
        False,
        description="Do not load ads or trackers: requests EasyList and EasyPrivacy block (the lists uBlock Origin "
        "starts with) are never made — pages load faster, and third parties see less. The page asked for itself "
        "is always loaded. Default: false",
    )
    blockResources: list[BlockedResource] | None = Field(
        None,
        min_length=1,
        max_length=len(BLOCKABLE_RESOURCES),
        description="Kinds of resource never loaded: image, media (audio, video), font — a faster, lighter load "
        "when only the text matters (image links stay in the page). Default: all are loaded",
    )

    blockCookieBanners: bool = Field(
        False,
        description="Refuse cookie-consent popups: DuckDuckGo's autoconsent rules for hundreds of consent managers "
        "(and popups found by their wording) click the refusal and hide the popup, so it neither covers the page "
        "nor ends up in its text. Default: false",
    )

    @model_validator(mode="after")
    def _origin_with_headers(self) -> ContextOptions:
        if self.headersOrigin is not None and not self.headers:
            raise ValueError("headersOrigin names the site the headers go to: give headers too, or leave it out")
        return self

    @field_validator("blockResources")
    @classmethod
    def _each_kind_once(cls, kinds: list[str] | None) -> list[str] | None:
        return None if kinds is None else sorted(set(kinds), key=BLOCKABLE_RESOURCES.index)

    def context_only(self) -> ContextOptions:
        """These fields alone, out of a model that adds others (scrape's, a session's)."""
        return ContextOptions.model_validate(self.model_dump(include=set(ContextOptions.model_fields)))

    def changed(self) -> list[str]:
        """The fields given something other than their default."""
        return [name for name, field in ContextOptions.model_fields.items() if getattr(self, name) != field.default]


class _SessionAction(Params):
    action: Literal["list", "create", "close"] = "list"
    sessionId: str | None = Field(None, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")


class SessionsParams(ContextOptions, _SessionAction):
    """mobile, locale, skipTlsVerification, userAgent, httpAuth, headers…: for action 'create' only (how the new session
    opens pages)."""

    @model_validator(mode="after")
    def _auth_names_its_site(self) -> SessionsParams:
        if self.httpAuth is not None and self.httpAuth.origin is None:
            raise ValueError("httpAuth.origin is required for a session: the one site the credentials are for")
        if self.headers and self.headersOrigin is None:
            raise ValueError("headersOrigin is required for a session's headers: the one site they are sent to")
        return self


class SessionInfo(Result):
    sessionId: str
    tabCount: int
    isDefault: bool
    profileId: str | None = Field(None, description="The login profile the session was opened from")
    mobile: bool = Field(False, description="Its pages are shown as a phone shows them")
    locale: str | None = Field(None, description="The language it asks sites for, when not the default")
    timezone: str | None = Field(None, description="The time zone its pages' clock is in, when not the default")
    geolocation: Geolocation | None = Field(None, description="Where it says it is, when a page asks")
    skipTlsVerification: bool = Field(False, description="It opens https:// pages whose certificate is not trusted")
    userAgent: str | None = Field(None, description="The User-Agent it sends, when not the browser's own")
    httpAuthOrigin: str | None = Field(None, description="The site it has HTTP credentials for (never the credentials)")
    proxyServer: str | None = Field(None, description="The proxy it goes through (never its credentials)")
    headersOrigin: str | None = Field(None, description="The site it sends headers to (never their values)")
    headerNames: list[str] | None = Field(None, description="The names of the headers it sends there")
    blockAds: bool = Field(False, description="It loads no ads or trackers")
    blockResources: list[BlockedResource] | None = Field(None, description="The kinds of resource it never loads")
    blockedRequests: int = Field(0, description="Requests it did not make (blockAds, blockResources) so far")
    blockCookieBanners: bool = Field(False, description="It refuses cookie-consent popups")
    cookieBanners: list[str] = Field(
        default_factory=list, description="The consent managers whose popup it refused so far (e.g. 'onetrust')"
    )


class SessionsResult(Result):
    sessions: list[SessionInfo]
    sessionId: str | None = Field(None, description="The session the action created or closed")
    browserContexts: int = Field(
        0, description="Contexts open in the browser: the sessions' and any scrape in progress (0: not started)"
    )
    browserPages: int = Field(0, description="Pages open in those contexts")


class HandleDialogParams(TabParams):
    accept: bool = True
    promptText: str | None = Field(None, max_length=10_000)


class HandleDialogResult(Result):
    tabId: str
    handled: DialogInfo


class EvaluateParams(TabParams):
    expression: str = Field(min_length=1, max_length=100_000, description="JavaScript expression or function body")
    timeoutMs: int = Field(DEFAULT_ACTION_TIMEOUT_MS, ge=100, le=MAX_BROWSER_TIMEOUT_MS)


class EvaluateResult(Result):
    tabId: str
    value: Any = Field(None, description="JSON-serialisable result")
    type: str


class ConsoleParams(TabParams):
    limit: int = Field(50, ge=1, le=500)
    clear: bool = Field(False, description="Forget the returned entries")


class ConsoleMessage(Result):
    type: str
    text: str
    location: str | None = None
    time: str


class FailedRequest(Result):
    url: str
    method: str
    failure: str
    status: int | None = None
    time: str


class ConsoleResult(Result):
    tabId: str
    messages: list[ConsoleMessage]
    failedRequests: list[FailedRequest]
