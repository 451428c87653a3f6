"""scrape.page: open a page in a browser context of its own, wait for it, answer in one format.

Each call gets a fresh, isolated context (own cookies, storage and cache) that is closed when the
call ends — also when it fails, times out or is cancelled — so nothing carries from one scrape to
the next and nothing is left open. A login profile's state comes in as `storageState` (the host
owns the profiles); the context starts from it and is closed all the same — after, with
`exportState`, its storageState is read for the host to save back to the profile.

Time: the call's budget is timeoutMs + waitFor + the wait actions' milliseconds. Loading gets what is
left minus a reserve for reading the page; then either the fixed wait (waitFor > 0) or the smart wait
(network quiet and DOM stable for SETTLE_QUIET_MS, at most SMART_WAIT_MAX_S and never into the
reserve); then the caller's actions (actions.py), the page settling after each; then the one format
asked for. Dialogs the page opens are dismissed.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import functools
import itertools
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Literal

from rpc import methods
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.browser import WaitForStableParams
from rpc.models.profiles import StorageState
from rpc.models.scrape import SCREENSHOT_FORMATS, ScrapePageParams, ScrapePageResult
from sandbox_image.browser.background import quietly, spawn
from sandbox_image.browser.consent import CONSENT_WAIT_MAX_S
from sandbox_image.browser.errors import PlaywrightError, PlaywrightTimeoutError, execution_error
from sandbox_image.browser.service import BrowserService
from sandbox_image.browser.sessions import Session
from sandbox_image.browser.stability import AFTER_ACTION_QUIET_MS, wait_for_stable
from sandbox_image.browser.state import export_state
from sandbox_image.browser.tab import Tab
from sandbox_image.browser.timeouts import Budget
from sandbox_image.browser.urls import redact
from sandbox_image.dispatcher import Dispatcher
from sandbox_image.scrape import actions, current_tab, loading, output, reading, tags
from sandbox_image.scrape.readers import READERS

log = logging.getLogger("boxwright.agent.scrape")

SETTLE_QUIET_MS = 500
SMART_WAIT_MAX_S = 10.0
# Before a full-page screenshot: at most this long scrolling the page through, then this long for what that
# loaded (network quiet and DOM stable, as the smart wait).
LAZY_SCROLL_MAX_S = 3.0
LAZY_SETTLE_MAX_S = 3.0
# Kept back from loading and waiting for reading the page: this long, or this share of a small budget.
READ_RESERVE_S = 8.0
READ_RESERVE_SHARE = 0.3


def _read_reserve(params: ScrapePageParams) -> float:
    return min(READ_RESERVE_S, READ_RESERVE_SHARE * params.timeoutMs / 1000)


def _as_a_scrape(exc: BoxwrightError, params: ScrapePageParams, budget: Budget) -> BoxwrightError:
    """A tab's error as the scrape's caller sees it: they have no tab (a crash is the page's, and scraping
    again is what to do), and the timeout they gave is the call's, part of which is kept for reading."""
    url = redact(params.url)
    if exc.code is ErrorCode.PAGE_CRASHED:
        return BoxwrightError(
            ErrorCode.PAGE_CRASHED,
            f"the page {url} crashed while it was loaded or read (a renderer out of memory, or a fault)",
            hint="scrape it again; a page that crashes each time may still be seen with format 'screenshot', "
            "or read with blockResources ['media', 'font'] and without its ads (blockAds)",
            details={"url": url},
        )
    if exc.code is ErrorCode.NAVIGATION_TIMEOUT and "loadMs" not in exc.details:
        load_ms = int(exc.details.get("timeoutMs", 0))
        if load_ms < budget.total_ms:
            return BoxwrightError(
                exc.code,
                f"{url} did not load within {load_ms} ms (the call's timeoutMs is {budget.total_ms} ms, "
                "the rest kept for reading the page)",
                hint=exc.hint,
                details={**exc.details, "timeoutMs": budget.total_ms, "loadMs": load_ms},
            )
    return exc


async def _with_state(result: ScrapePageResult, session: Session, *, indexed_db: bool) -> ScrapePageResult:
    """The result with the state the page left, for the host's login profile — or without it when it is too
    large to keep (a site filled its storage): the page was read, only the profile is not updated."""
    try:
        state, _ = await export_state(session, indexed_db=indexed_db)
    except BoxwrightError as exc:
        if exc.code is not ErrorCode.PAYLOAD_TOO_LARGE:
            raise
        log.warning("scrape: the profile is not updated: %s", exc.message)
        return result
    return result.model_copy(update={"storageState": StorageState.model_validate(state)})


async def _shielded(coro: Coroutine[Any, Any, Any]) -> None:
    """Run cleanup to its end even if the caller is cancelled meanwhile (the task goes on)."""
    await asyncio.shield(spawn(quietly(coro)))


@dataclass
class _Progress:
    loaded: bool = False  # the page's document arrived: a timeout after this is not the site's


class ScrapeService:
    def __init__(self, browser: BrowserService) -> None:
        self.browser = browser
        self._ids = itertools.count(1)
        self.scrape_tab = browser.tab_handler(methods.BROWSER_SCRAPE, current_tab.scrape_tab)

    async def scrape(self, params: ScrapePageParams, deadline: Deadline) -> ScrapePageResult:
        budget = Budget.of(deadline, params.timeoutMs + params.waits_ms)
        # Not registered with the session manager: invisible to browser_sessions, outside its limit, and
        # gone with this call.
        session = Session(
            f"scrape_{next(self._ids)}",
            self.browser.engine,
            storage_state=params.storageState,
            options=params.context_only(),
        )
        progress = _Progress()
        try:
            async with budget.timeout():
                tab = await session.open_tab(activate=True)
                tab.dismiss_dialogs = True
                async with tab.lock:
                    await tab.ensure_page()
                    result = await self._scrape(tab, params, budget, progress)
                    if params.blockAds or params.blockResources:
                        result = result.model_copy(update={"blocked": session.blocked_requests})
                    if session.consent is not None:
                        result = result.model_copy(update={"cookieBanners": list(session.consent.refused)})
                    if params.exportState:  # what the page left (refreshed cookies), for the host's login profile
                        result = await _with_state(result, session, indexed_db=params.indexedDb)
                    return result
        except (PlaywrightTimeoutError, TimeoutError):
            if not progress.loaded:  # the page never loaded (Playwright's own timer ran late on a busy machine)
                raise loading.timed_out(params.url, budget.total_ms) from None
            raise BoxwrightError(
                ErrorCode.OPERATION_TIMEOUT,
                f"scraping {redact(params.url)} did not finish within {budget.total_ms} ms",
                details={"url": redact(params.url), "timeoutMs": budget.total_ms},
            ) from None
        except BoxwrightError as exc:
            raise _as_a_scrape(exc, params, budget) from None
        except PlaywrightError as exc:
            if not self.browser.engine.connected:
                raise BoxwrightError(
                    ErrorCode.PAGE_CRASHED, "the browser died during the scrape; the next call starts a new one"
                ) from None
            if "Target crashed" in str(exc):  # the renderer died (out of memory): as browser calls say it
                raise BoxwrightError(
                    ErrorCode.PAGE_CRASHED,
                    f"the page crashed while {redact(params.url)} was being read (the sandbox may be short of memory)",
                    hint="call scrape again; if it keeps crashing, the page needs more memory than the sandbox has",
                    details={"url": redact(params.url)},
                ) from None
            raise execution_error(f"scraping {redact(params.url)}", exc) from None
        finally:
            await _shielded(session.close())

    async def _scrape(
        self, tab: Tab, params: ScrapePageParams, budget: Budget, progress: _Progress
    ) -> ScrapePageResult:
        load_ms = (budget.remaining() - _read_reserve(params) - params.waits_ms / 1000) * 1000
        fmt = params.format
        selectors = tags.fields_of(params)
        if selectors:  # the browser's verdict on them, before anything is loaded
            await tab.guard(tags.check(tab.check(), selectors))
        frame = loading.MainFrame(tab.check())
        try:
            loaded = await loading.load(tab, params.url, fmt, load_ms, frame, want_html=fmt in ("markdown", "html"))
            progress.loaded = True
            return await self._read(tab, params, budget, loaded, frame)
        finally:
            frame.detach()

    async def _read(
        self, tab: Tab, params: ScrapePageParams, budget: Budget, loaded: loading.Loaded, frame: loading.MainFrame
    ) -> ScrapePageResult:
        """Wait as asked, then answer in the one format (the page has loaded)."""
        fmt, reserve = params.format, _read_reserve(params)
        if loaded.file is not None:
            if params.actions:
                raise loading.no_page_to_act_on(loaded.url or tab.url, loaded.content_type)
            return await self._read_file(params, budget, loaded)
        if fmt not in SCREENSHOT_FORMATS and not (loaded.is_html or loaded.is_text):
            raise loading.unsupported(tab.url, loaded.content_type, fmt)

        wait: Literal["fixed", "settled", "unsettled"]
        if params.waitFor > 0:
            await asyncio.sleep(max(0.0, min(params.waitFor / 1000, budget.remaining() - reserve)))
            wait = "fixed"
        else:
            bound = min(SMART_WAIT_MAX_S, budget.remaining() - reserve)
            settled = await self._smart_wait(tab, bound)
            wait = "settled" if settled else "unsettled"
        consent = tab.session.consent
        if consent is not None and await consent.settle(min(CONSENT_WAIT_MAX_S, budget.remaining() - reserve)):
            await self._smart_wait(tab, min(SMART_WAIT_MAX_S, budget.remaining() - reserve))  # after the popup went
        done = None
        if params.actions:
            settle = functools.partial(self._smart_wait, quiet_ms=AFTER_ACTION_QUIET_MS)
            before = tab.url
            runner = actions.Actions(tab, budget, reserve, settle)
            done = await runner.run(params.actions)
            if runner.frame is not None:  # an action opened a window, and the actions went on in it: it is read
                tab, frame = runner.tab, runner.frame
            moved = [index for index, action in enumerate(done) if action.navigated]
            if moved:  # the page read is another document than the one loaded; or the browser's error page
                last = moved[-1]
                sent_by = f"action {last} ({actions.describe(params.actions[last])})"
                loading.on_error_page(tab, done[last - 1].url if last else before, fmt, frame, sent_by)
                loaded = await loading.reloaded(tab, frame, loaded)
        if fmt == "fullscreenshot":
            # What loads on sight (lazy images) loads before the capture: scroll the page through, then
            # wait for the network and the DOM once more. Within what the wait above left.
            spare = budget.remaining() - reserve
            with contextlib.suppress(PlaywrightError):
                if await output.scroll_through(tab, budget_s=min(LAZY_SCROLL_MAX_S, spare / 2)):
                    await self._smart_wait(tab, min(LAZY_SETTLE_MAX_S, budget.remaining() - reserve))
        rereads = 0
        while True:
            try:
                result = await self._answer(tab, params, budget, loaded, frame, wait)
                return result if done is None else result.model_copy(update={"actions": done})
            except PlaywrightError as exc:
                if not reading.navigated(exc):
                    raise
                if rereads == reading.NAVIGATION_REREADS:
                    raise BoxwrightError(
                        ErrorCode.EXECUTION_ERROR,
                        f"{redact(tab.url)} kept going on to other documents while it was read ({rereads + 1} times)",
                        hint="scrape the address it ends on, or give waitFor so it can finish redirecting first",
                        details={"url": redact(tab.url), "reads": rereads + 1},
                    ) from None
            # The page went on to another document while it was being read: read that one once it has
            # loaded and settled. The server's HTML was the first document's, so it no longer counts.
            rereads += 1
            await self._after_navigation(tab, min(SMART_WAIT_MAX_S, budget.remaining() - reserve))
            loaded = dataclasses.replace(loaded, response_html=None)

    async def _after_navigation(self, tab: Tab, bound_s: float) -> None:
        """Wait, within `bound_s`, for the document the page went on to: loaded, then settled."""
        if bound_s <= 0:
            return
        started = asyncio.get_running_loop().time()
        with contextlib.suppress(PlaywrightError, PlaywrightTimeoutError):
            await tab.guard(tab.check().wait_for_load_state("load", timeout=bound_s * 1000))
        with contextlib.suppress(PlaywrightError):
            await self._smart_wait(tab, bound_s - (asyncio.get_running_loop().time() - started))

    async def _answer(
        self,
        tab: Tab,
        params: ScrapePageParams,
        budget: Budget,
        loaded: loading.Loaded,
        frame: loading.MainFrame,
        wait: Literal["fixed", "settled", "unsettled"],
    ) -> ScrapePageResult:
        """The page as it is now, in the one format asked for."""
        fmt = params.format
        loading.on_error_page(tab, params.url, fmt, frame)

        result: dict[str, Any]
        if fmt in SCREENSHOT_FORMATS:
            html = await tab.guard(tab.check().content())
            meta, _ = await asyncio.to_thread(reading.read_document, html, tab.url, fmt, params)
            shot = await output.screenshot(tab, full_page=fmt == "fullscreenshot", timeout_ms=budget.remaining() * 1000)
            result = dict(
                screenshot=base64.b64encode(shot.png).decode("ascii"),
                width=shot.width,
                height=shot.height,
                truncated=shot.truncated,
            )
            title, metadata = meta.title, reading.metadata_of(meta)
        else:
            await reading.check_size(tab)
            frames_s = await reading.frames_budget(tab, params, budget.remaining()) if loaded.is_html else None
            read = await reading.read_text(
                tab,
                fmt,
                params,
                is_html=loaded.is_html,
                frames_s=frames_s,
                response_html=loaded.response_html,
                whole=params.wholeText,
            )
            result, title, metadata = read.fields, read.title, read.metadata
        return ScrapePageResult(
            url=tab.url,
            title=title or await tab.title(),
            status=loaded.status,
            format=fmt,
            contentType=loaded.content_type,
            metadata=metadata,
            wait=wait,
            elapsedMs=budget.elapsed_ms(),
            **result,
        )

    async def _read_file(self, params: ScrapePageParams, budget: Budget, loaded: loading.Loaded) -> ScrapePageResult:
        """A PDF, a feed or a sitemap as text: nothing to wait for, nothing rendered; parsed in a child process
        (child.py) by its reader."""
        url = loaded.url or params.url
        assert loaded.file is not None and loaded.reader is not None
        file = await READERS[loaded.reader](loaded.file, url, loaded.content_type, budget.remaining())
        fields = await asyncio.to_thread(
            lambda: file.fields(params.format, params.offset, params.maxChars, whole=params.wholeText)
        )
        return ScrapePageResult(
            url=file.url,
            title=file.title,
            status=loaded.status,
            format=params.format,
            contentType=file.content_type,
            metadata=file.metadata,
            wait="settled",
            elapsedMs=budget.elapsed_ms(),
            **fields,
        )

    async def _smart_wait(self, tab: Tab, bound_s: float, quiet_ms: int = SETTLE_QUIET_MS) -> bool:
        """Network quiet and DOM stable for `quiet_ms`, within `bound_s`; False when it never was."""
        if bound_s <= 0:
            return False
        bound = Budget(Deadline.after(bound_s).at)
        params = WaitForStableParams(quietMs=quiet_ms, timeoutMs=max(100, int(bound_s * 1000)))
        return (await wait_for_stable(tab, params, bound)).stable


def register(dispatcher: Dispatcher, browser: BrowserService) -> ScrapeService:
    service = ScrapeService(browser)
    dispatcher.register(methods.SCRAPE_PAGE, service.scrape)
    dispatcher.register(methods.BROWSER_SCRAPE, service.scrape_tab)
    return service
