"""How the sandbox's Chromium is launched (which one, and whether early, are SandboxSettings).

Every flag beyond Playwright's own was measured one by one in the sandbox image (docs/benchmarks.md,
"Browser memory per sandbox"); Chromium's own sandbox is off either way (--no-sandbox: the container has
no capability to create it), and site isolation stays on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rpc.errors import invalid_parameter
from rpc.models.browser import ContextOptions, Proxy

if TYPE_CHECKING:
    from playwright.async_api import ProxySettings, ViewportSize

# Features Playwright (1.65, chromiumSwitches in its driver) disables and enables itself. Chromium honours
# only the last --disable-features and --enable-features switch, so ours repeat Playwright's lists:
# tests/unit/test_browser_launch.py fails when an upgraded Playwright's lists are no longer covered.
PLAYWRIGHT_DISABLED_FEATURES = (
    "AvoidUnnecessaryBeforeUnloadCheckSync",
    "DestroyProfileOnBrowserClose",
    "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable",
    "LensOverlay",
    "MediaRouter",
    "PaintHolding",
    "ThirdPartyStoragePartitioning",
    "AvoidCorsURLLoaderRestartOnRedirect",
    "TcpPortRandomizationWin",
    "OptimizationHints",
    "NetworkTimeServiceQuerying",
    "AimEnabled",
    "PreconnectToSearch",
    "msForceBrowserSignIn",
    "msEdgeUpdateLaunchServicesPreferredVersion",
)
PLAYWRIGHT_ENABLED_FEATURES = ("CDPScreenshotNewSurface", "SkipListAccountsWithoutGaiaCookies")

# Less memory per browsing sandbox (one about:blank tab, measured in the image):
LOW_MEMORY_DISABLED_FEATURES = (
    # The omnibox popup's WebUI, preloaded in a renderer of its own (~40 MiB) that a headless browser
    # without an address bar never shows.
    "WebUIOmniboxPopup",
    "WebUIOmniboxAimPopup",
    "WebUIOmniboxFullPopup",
    # An idle spare renderer kept ready for the next new site (~8 MiB); a new site's renderer starts on
    # demand instead.
    "SpareRendererForSitePerProcess",
)
# The network service inside the browser process instead of a process of its own (~17 MiB). Out of
# process it is sandboxed only when Chromium's sandbox is on, which it cannot be here.
LOW_MEMORY_ENABLED_FEATURES = ("NetworkServiceInProcess2",)

# Without the background-networking flags Chromium floods a closed network with connection attempts;
# --no-sandbox because the container (all capabilities dropped) cannot create Chromium's own sandbox.
# --allow-insecure-localhost: a certificate Chromium cannot verify is accepted on the sandbox's own
# loopback (127.0.0.1, localhost) only, where a dev server's or test server's self-signed one is the
# rule and nothing outside the sandbox can sit in between; every other address keeps full checks.
LAUNCH_ARGS = (
    "--no-sandbox",
    "--allow-insecure-localhost",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-features=" + ",".join(PLAYWRIGHT_DISABLED_FEATURES + LOW_MEMORY_DISABLED_FEATURES),
    "--enable-features=" + ",".join(PLAYWRIGHT_ENABLED_FEATURES + LOW_MEMORY_ENABLED_FEATURES),
)
# Playwright's driver (Node.js), which only relays the protocol: a 2 MiB young generation instead of up to
# 16 MiB (~10 MiB less; 1 MiB saves no more and costs more driver CPU on big pages) and two malloc arenas
# instead of one per thread (~3 MiB less). Set for the driver alone, when the agent starts it; a variable
# already set in the agent's environment wins.
DRIVER_ENV = {"NODE_OPTIONS": "--max-semi-space-size=2", "MALLOC_ARENA_MAX": "2"}

VIEWPORT: ViewportSize = {"width": 1280, "height": 720}
LAUNCH_TIMEOUT_MS = 60_000


# scrape's `mobile`: Playwright's own descriptor of a phone running Chrome (its viewport, user agent, touch,
# isMobile), at one device pixel per CSS pixel so that a screenshot is the size of the layout.
MOBILE_DEVICE = "Pixel 7"


# The language every context asks for and reports unless told otherwise (scrape's `locale`). Set rather than
# left to the browser: the headless shell reports en-US to scripts but sends no Accept-Language at all, which
# no desktop browser does.
DEFAULT_LOCALE = "en-US"


def context_options(
    storage_state: dict[str, Any] | None,
    options: ContextOptions | None = None,
    device: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Every context's options: a login profile's storageState (never logged), and what a scrape or a session
    asked for — a phone (`device`, Playwright's `devices[MOBILE_DEVICE]`), a language (DEFAULT_LOCALE
    otherwise), certificates not checked, a site's HTTP credentials (never logged either), no service
    workers where requests are routed (browser.blocking, browser.headers)."""
    options = options or ContextOptions()
    made = {"accept_downloads": False, "viewport": VIEWPORT, "storage_state": storage_state}
    if device is not None:
        made.update({k: v for k, v in device.items() if k != "default_browser_type"}, device_scale_factor=1)
    made["locale"] = options.locale or DEFAULT_LOCALE
    if options.timezone is not None:
        made["timezone_id"] = options.timezone
    if options.geolocation is not None:  # and allowed, as a visitor who said yes to the prompt
        made["geolocation"] = options.geolocation.model_dump()
        made["permissions"] = ["geolocation"]
    if options.skipTlsVerification:
        made["ignore_https_errors"] = True
    if options.userAgent is not None:  # the caller's, over the browser's own and a phone's
        made["user_agent"] = options.userAgent
    if options.blockAds or options.blockResources or options.headers:  # a service worker's fetches bypass routes
        made["service_workers"] = "block"
    if options.proxy is not None:  # its password never logged either
        made["proxy"] = proxy_settings(options.proxy)
    if options.headers and options.headersOrigin is None:  # without one they would have nowhere to go
        raise invalid_parameter("headersOrigin", "required: the one site the headers are sent to")
    if options.httpAuth is not None:  # answered only when that origin asks (Playwright's default "unauthorized")
        auth = options.httpAuth
        if auth.origin is None:  # without one Playwright would answer any site that asks
            raise invalid_parameter("httpAuth.origin", "required: the one site the credentials are for")
        made["http_credentials"] = {"username": auth.username, "password": auth.password, "origin": auth.origin}
    return made


def proxy_settings(proxy: Proxy) -> ProxySettings:
    """Playwright's form of a context's proxy (the request clients made beside it take it too)."""
    settings: ProxySettings = {"server": proxy.server}
    if proxy.bypass is not None:
        settings["bypass"] = proxy.bypass
    if proxy.username is not None and proxy.password is not None:
        settings["username"], settings["password"] = proxy.username, proxy.password
    return settings
