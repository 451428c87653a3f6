"""scrape (seed 004 §2.2.1): one page, one format, read by a sandbox's Chromium — so untrusted HTML is
parsed only inside a sandbox.

With `sandboxId` the page is read in that sandbox (a fresh browser context, closed afterwards). Without
one, the call gets a throw-away sandbox through the JobSandboxes seam, used for this one call and
removed when it ends — also on failure, timeout or cancellation; it counts in the caller's limits but is
never their default, and a server restarted after a crash removes it (JobSandboxes.sweep).
Used once, never returned to a pool: nothing (cookies, cache, service workers, processes) can carry from
one call to the next. It is claimed from the warm pool when there is one (a pooled sandbox has served no
one), else started for the call (figures in docs/benchmarks.md, "scrape").

`profileId` is validated by the model before anything happens. It names one of the caller's login
profiles (host.profiles; `master` by default, made empty on first use): the page's context starts from
the profile's latest snapshot, and the state the context ends with is saved back to the profile with
compare-and-set on the version read before (a login published meanwhile wins). Neither the state nor
a cookie value is ever part of the tool's answer.
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import anyio
from mcp.types import ToolAnnotations

from host import readings
from host.mcp.caller import require_local
from host.mcp.registry import Invocation, ToolOutput, ToolSpec
from host.mcp.results import image
from host.profiles import ProfileSessions
from host.readings import Readings
from host.sandboxes.jobs import JobSandboxes
from host.sandboxes.manager import SandboxManager
from rpc import methods
from rpc.deadline import LADDER
from rpc.errors import BoxwrightError
from rpc.models.scrape import (
    MAX_CONTENT_BYTES,
    MAX_FULL_PAGE_HEIGHT,
    MAX_LINKS,
    SCREENSHOT_FORMATS,
    PageText,
    ScrapeOutput,
    ScrapePageParams,
    ScrapePageResult,
    ScrapeRequest,
    ScriptAction,
)

# A job sandbox is removed within this much once the call ends (the container's stop and removal).
RELEASE_S = 15.0


def read_summary(fmt: str, r: PageText) -> str:
    """What a text format holds, in a few words (shared with browser_scrape)."""
    if fmt in ("markdown", "html"):
        text = r.markdown if fmt == "markdown" else r.html
        shown = len(text or "")
        part = f" of {r.totalChars}" if r.totalChars is not None and shown != r.totalChars else ""
        what = f"{fmt}, {shown} chars{part}" + (
            ", main content" if r.mainContent else ", whole page (fallback)" if r.fallback else ", whole page"
        )
    else:
        what = f"{len(r.links or [])} links"
    frames = f", {r.iframes} frame{'s' if r.iframes != 1 else ''} read in" if r.iframes is not None else ""
    cut = " (truncated)" if r.truncated else ""
    if r.nextOffset is not None:
        cut = f" (truncated; offset={r.nextOffset} reads on)"
    return f"{what}{frames}{cut}"


# A 401 page is returned like any HTTP error, but what it wants is not in it: say what gets past it.
SIGN_IN_NOTE = (
    " — the site wants a sign-in: httpAuth {username, password} answers an HTTP password prompt, "
    "headers {Authorization: 'Bearer …'} a site that takes a token, a profileId holding its login a sign-in page"
)


def _age(ms: int) -> str:
    return f"{ms} ms" if ms < 1000 else f"{ms / 1000:.0f} s"


def _moved(asked: str, final: str) -> bool:
    a, f = urlsplit(asked), urlsplit(final)
    return (a.scheme, a.netloc.lower(), a.path or "/", a.query) != (f.scheme, f.netloc.lower(), f.path or "/", f.query)


def _headers_note(r: ScrapePageResult, args: ScrapeRequest) -> str:
    """The page is at another address than asked: a redirect the headers did not go along (headers.py)."""
    if not args.headers or not _moved(str(args.url), r.url):
        return ""
    return (
        f" — the page moved to {r.url}; the headers went to {args.headersOrigin} but not along the move: if the "
        "page wants them, ask for its address"
    )


def _summary(r: ScrapePageResult) -> str:
    status = f" [{r.status}]" if r.status else ""
    if r.format in SCREENSHOT_FORMATS:
        what = f"{r.width}x{r.height} PNG" + (" (truncated)" if r.truncated else "")
    else:
        what = read_summary(r.format, r)
    if r.blocked:
        what += f", {r.blocked} requests blocked"
    if r.cookieBanners:
        what += f", cookie banner refused ({', '.join(r.cookieBanners)})"
    if r.actions:
        skipped = sum(1 for action in r.actions if action.times == 0)
        what += f", after {len(r.actions)} action{'s' if len(r.actions) != 1 else ''}" + (
            f" ({skipped} had nothing to act on)" if skipped else ""
        )
    reused = f" — reused: from a reading {_age(r.ageMs or 0)} ago, the page not loaded again" if r.reused else ""
    return f"scrape ok: {r.url}{status} ({r.title}): {what}{reused}" + (SIGN_IN_NOTE if r.status == 401 else "")


def _answer_of(whole: ScrapePageResult, args: ScrapeRequest) -> ScrapePageResult:
    """What the call asks of a whole reading: its part of a text, or the links as they are."""
    if whole.format in readings.TEXT_FORMATS:
        return readings.part_of(whole, args.offset, args.maxChars)
    return whole


def _present(r: ScrapePageResult, sandbox_id: str | None, args: ScrapeRequest) -> ToolOutput:
    """The PNG travels as MCP image content; the structured result is everything else."""
    shown = r.model_dump(exclude={"screenshot", "storageState"})  # the login state never leaves the host
    out = ToolOutput(ScrapeOutput.model_validate(shown), _summary(r) + _headers_note(r, args), sandbox_id)
    return replace(out, extra=[image(r.screenshot)]) if r.screenshot else out


DESCRIPTION = (
    "Read one web page in a sandboxed browser and return it in one format: markdown (default: the main "
    "content, navigation and boilerplate left out; onlyMainContent=false for the whole page), html, links "
    "(absolute, deduplicated, in page order), screenshot (the viewport) or fullscreenshot (the whole page, "
    f"at most {MAX_FULL_PAGE_HEIGHT} px), plus the final url, title, HTTP status and the page's metadata "
    "(description, language, canonical URL, published and modified dates, author, site name, lead image) as the "
    "page states them. waitFor>0 waits that many ms after load; "
    "otherwise it waits until the page settles. Runs in a throw-away sandbox removed afterwards, or in your "
    "sandbox with sandboxId (e.g. one serving the page on localhost). The sandbox's network mode applies. "
    "maxChars limits the markdown/html to that many characters; offset=nextOffset reads on from where an "
    f"answer was cut. Text is cut at {MAX_CONTENT_BYTES // 1024 // 1024} MiB and links at {MAX_LINKS} "
    "(truncated=true says so). maxAge=N (ms) answers from your own reading of the same arguments made at most "
    "N ms ago instead of loading the page again (reused=true). "
    "An HTTP error status still returns the page. A PDF comes back as its text, an RSS or Atom feed as its "
    "entries, an XML sitemap as the pages it lists (markdown, html or links). "
    "includeTags/excludeTags (CSS selectors, as document.querySelectorAll takes them) choose the content "
    "yourself or leave parts out. "
    "mobile=true reads it as a phone shows it (412×839, mobile user agent, touch). "
    "locale (e.g. 'de-DE') asks the site for that language; timezone (e.g. 'Europe/Berlin') sets the page's clock; "
    "geolocation {latitude, longitude} is where the browser says it is when the page asks. "
    "httpAuth {username, password} answers the site's HTTP password prompt (only that site's); "
    "headers {name: value} go with every request to the page's own site (an Authorization token, a Cookie), "
    "never to another site nor along a redirect; "
    "proxy {server, username, password, bypass} sends every request through that proxy; "
    "skipTlsVerification=true opens an https site whose certificate is not trusted (one you trust); "
    "userAgent replaces the browser's User-Agent. "
    "blockAds=true never loads ads or trackers (EasyList, EasyPrivacy); blockResources (image, media, font) "
    "never loads those kinds, for a faster load when only the text matters. "
    "blockCookieBanners=true refuses cookie-consent popups (DuckDuckGo's autoconsent rules) so they neither "
    "cover a screenshot nor end up in the text. "
    "actions (click, write, press, scroll, wait, hover, select, script; an element by CSS selector, by the text "
    "it shows, or a field by its label) are done on the page before it is read or captured, e.g. "
    '[{"type": "click", "text": "Load more", "repeat": 5}]; to act step by step, use a browser tab and '
    "browser_scrape. "
    "includeIframes=true also reads the page's visible frames in place (an embedded document; a frameset "
    "page's frames are always read)."
)


def tools(
    manager: SandboxManager, jobs: JobSandboxes, profiles: ProfileSessions, kept_readings: Readings
) -> list[ToolSpec[Any]]:
    async def scrape(inv: Invocation[ScrapeRequest]) -> ToolOutput:
        args = inv.args
        if any(isinstance(action, ScriptAction) for action in args.actions or ()):
            require_local(inv.caller, "a script action")
        # The owner check, before the profile or a kept reading is touched; a throw-away sandbox is not named.
        sandbox_id = manager.resolve(inv.caller, args.sandboxId).id if args.sandboxId is not None else None
        if args.format not in readings.KEPT_FORMATS:
            return _present(await read(inv, whole=False), sandbox_id, args)
        key = readings.key_of(inv.caller.owner, args)
        text = args.format in readings.TEXT_FORMATS
        if text and args.offset > 0:  # a next part of a text read a moment ago: from that reading, whatever its age
            kept = kept_readings.get(key)
        else:
            kept = kept_readings.get(key, args.maxAge) if args.maxAge > 0 else None
        if kept is not None:
            return _present(kept_readings.reused(kept, _answer_of(kept.result, args)), sandbox_id, args)
        whole = await read(inv, whole=text)
        if whole.nextOffset is not None:  # too large to send whole (rpc.paging.MAX_WHOLE_BYTES): as before
            return _present(await read(inv, whole=False), sandbox_id, args)
        kept_readings.keep(key, whole)
        return _present(_answer_of(whole, args), sandbox_id, args)

    async def read(inv: Invocation[ScrapeRequest], *, whole: bool) -> ScrapePageResult:
        """The page read in a sandbox (the caller's, or a throw-away one); with `whole`, all its text."""
        args = inv.args
        login = await profiles.snapshot(inv.caller, args.profileId)
        params = ScrapePageParams.model_validate(
            {
                **args.model_dump(exclude={"profileId", "sandboxId", "maxAge"}, exclude_unset=True),
                "storageState": login.state,
                "exportState": True,
                "indexedDb": manager.settings.include_indexed_db_in_snapshot,
                "wholeText": whole,
            }
        )

        async def saved(result: ScrapePageResult) -> ScrapePageResult:
            await profiles.save_back(
                inv.caller, args.profileId, result.storageState, base_version=login.version, what="scrape"
            )
            return result

        if args.sandboxId is not None:
            _, result = await manager.call(inv.caller, args.sandboxId, methods.SCRAPE_PAGE, params, rpc_deadline(inv))
            return await saved(result)
        jobs.check_room(inv.caller)
        rec = await jobs.acquire(
            inv.caller, f"scrape_{secrets.token_hex(6)}", deadline=inv.deadline.cap(manager.settings.startup_timeout)
        )
        try:
            _, result = await manager.call(inv.caller, rec.id, methods.SCRAPE_PAGE, params, rpc_deadline(inv))
        except BoxwrightError as exc:  # the sandbox named in details is gone by the time the caller reads it
            details = {k: v for k, v in exc.details.items() if k != "sandboxId"}
            raise BoxwrightError(exc.code, exc.message, hint=exc.hint, details=details) from exc
        finally:
            with anyio.CancelScope(shield=True):
                await jobs.release(rec)
        return await saved(result)

    def rpc_deadline(inv: Invocation[ScrapeRequest]) -> Any:
        """The RPC backstop inside the tool's deadline, minus the time a job sandbox takes to go away."""
        deadline = LADDER.rpc(inv.deadline)
        return deadline if inv.args.sandboxId is not None else deadline.child(RELEASE_S)

    def budget_s(args: ScrapeRequest) -> float:
        own = LADDER.tool_budget_s(methods.SCRAPE_PAGE, args)
        return own if args.sandboxId is not None else own + manager.settings.startup_timeout + RELEASE_S

    return [
        ToolSpec(
            name="scrape",
            title="Scrape a web page",
            description=DESCRIPTION,
            input=ScrapeRequest,
            output=ScrapeOutput,
            handler=scrape,
            budget_s=budget_s,
            annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
        )
    ]
