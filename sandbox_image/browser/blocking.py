"""The requests a context never makes: ads and trackers (`blockAds`) and whole kinds of resource
(`blockResources`), for a scrape's context and a browser session's alike; through cosmetic.py the ad
elements left in its pages, hidden (`blockAds`); and through consent.py the cookie-consent popups it
refuses (`blockCookieBanners`).

Every request of such a context passes one Playwright route (the context's, so popups and frames are
covered; service workers are blocked in it by launch.context_options, so none fetches past the route).
A blocked request fails as an extension's would (net::ERR_BLOCKED_BY_CLIENT). The page asked for itself —
a tab's main-frame navigation — is never blocked: a caller who names a URL gets that URL.

Ads and trackers are matched by Brave's adblock-rust engine (the `adblock` package) over EasyList and
EasyPrivacy as Debian's uBlock Origin ships them (Dockerfile.sandbox copies the two lists and serializes
the engine at image build). The engine is loaded once per agent, on the first context that asks:
measured in docs/benchmarks.md (scrape_blocking), it costs that agent ~50 MiB, and each
request a few hundred microseconds.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.browser import ContextOptions
from sandbox_image.browser import consent, cosmetic
from sandbox_image.browser.background import quietly
from sandbox_image.browser.consent import Consent

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Request, Route

log = logging.getLogger("boxwright.agent.browser")

ENGINE_FILE = "engine.dat"  # the engine serialized at image build (serialize, from Dockerfile.sandbox)

# Playwright's resource types (Chromium's, lower-cased) as adblock-rust names them; others pass as they are.
_REQUEST_TYPES = {
    "document": "sub_frame",  # a main-frame document is never checked
    "fetch": "xhr",
    "eventsource": "other",
    "texttrack": "other",
    "manifest": "web_manifest",
    "cspviolationreport": "csp_report",
}


@dataclass
class Blocked:
    """How many requests a context did not make, and what its consent script did (blockCookieBanners)."""

    count: int = 0
    consent: Consent | None = None


class AdFilter:
    """EasyList and EasyPrivacy as one engine, loaded on first use and kept for the agent's life."""

    def __init__(self, directory: str) -> None:
        self.directory = Path(directory)
        self._engine: Any = None
        self._lock = asyncio.Lock()

    async def engine(self) -> Any:
        async with self._lock:
            if self._engine is None:
                self._engine = await asyncio.to_thread(load_engine, self.directory)
        return self._engine


def load_engine(directory: Path) -> Any:
    """The serialized engine when the image has one, else one built from the lists' text (a dev machine)."""
    import adblock  # a native library, loaded only by an agent that blocks ads

    engine_file = directory / ENGINE_FILE
    try:
        if engine_file.is_file():
            engine = adblock.Engine(adblock.FilterSet())
            engine.deserialize_from_file(str(engine_file))
            return engine
        lists = sorted(directory.glob("*.txt"))
        if not lists:
            raise FileNotFoundError(f"no filter lists in {directory}")
        filters = adblock.FilterSet()
        for path in lists:
            filters.add_filter_list(path.read_text(encoding="utf-8", errors="replace"))
        return adblock.Engine(filters)
    except (OSError, ValueError, adblock.AdblockException) as exc:  # missing, unreadable, of another version
        log.error("ad filter not available (%s): %s", directory, exc)
        raise BoxwrightError(
            ErrorCode.EXECUTION_ERROR,
            "this sandbox has no ad and tracker filter lists",
            hint="rebuild the sandbox image (boxwright image build) and recreate the sandbox, or leave blockAds off",
            details={"cause": str(exc)},
        ) from None


def blocks(options: ContextOptions) -> bool:
    return options.blockAds or bool(options.blockResources) or options.blockCookieBanners


async def install(context: BrowserContext, options: ContextOptions, ad_filter: AdFilter) -> Blocked:
    """Route every request of `context` past the options' blocks, and start refusing consent popups when
    asked; the record of what was held back."""
    blocked = Blocked()
    if options.blockCookieBanners:
        blocked.consent = await consent.install(context)
    if not (options.blockAds or options.blockResources):
        return blocked
    kinds = frozenset(options.blockResources or ())
    engine = await ad_filter.engine() if options.blockAds else None
    if engine is not None:  # and what the ads would have filled, hidden
        await cosmetic.install(context, engine)

    async def handle(route: Route, request: Request) -> None:
        if _blocked(request, kinds, engine):
            blocked.count += 1
            await quietly(route.abort("blockedbyclient"))
        else:
            await quietly(route.fallback())

    await context.route("**/*", handle)
    return blocked


def _blocked(request: Request, kinds: frozenset[str], engine: Any) -> bool:
    kind = request.resource_type
    if kind == "document" and _main_frame(request):
        return False
    if kind in kinds:
        return True
    url = request.url
    if engine is None or not url.startswith(("http://", "https://")):
        return False
    return bool(engine.check_network_urls(url, _source_of(request), _REQUEST_TYPES.get(kind, kind)).matched)


def _main_frame(request: Request) -> bool:
    try:
        return request.frame.parent_frame is None
    except Exception:  # a service worker's request has no frame (none are let run in a blocking context)
        return False


def _source_of(request: Request) -> str:
    """The document the request is made for: a frame's own document is its parent's request."""
    try:
        frame = request.frame
        if request.resource_type == "document" and frame.parent_frame is not None:
            frame = frame.parent_frame
        return frame.url
    except Exception:
        return ""


def serialize(directory: Path) -> Path:
    """Build the engine from the lists in `directory` and write it beside them (image build: loading it is
    ~4x faster and ~30 MiB lighter than parsing the lists in every sandbox)."""
    engine = load_engine(directory)
    target = directory / ENGINE_FILE
    engine.serialize_to_file(str(target))
    return target
