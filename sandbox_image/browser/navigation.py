"""browser.goto / back / forward, and the navigation errors they can end in."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.browser import GotoParams, GotoResult, HistoryParams, HistoryResult, WaitUntil, origin_of
from sandbox_image.browser.errors import (
    AUTH_ERROR,
    NET_ERROR,
    PROXY_ERRORS,
    PROXY_HINT,
    PlaywrightError,
    PlaywrightTimeoutError,
    clean_message,
    execution_error,
)
from sandbox_image.browser.leaving import Leaving
from sandbox_image.browser.tab import NavigationMark, Tab
from sandbox_image.browser.timeouts import Budget
from sandbox_image.browser.urls import check_url, redact

log = logging.getLogger("boxwright.agent.browser")

# A renderer that dies during a navigation (out of memory, a crash) aborts it (ERR_ABORTED) a moment before
# the page's crash event arrives: a probe this long tells that from an ordinary abort.
CRASH_PROBE_S = 2.0
# A failed navigation's error page commits a moment after the failure (Tab.error_page_since); the
# failure waits this long for it at most (a failure without one, e.g. ERR_ABORTED, does not wait).
ERROR_PAGE_S = 2.0
AUTH_HINT = (
    "the site asks for a username and password (HTTP authentication): open a session that has them — "
    "browser_sessions create with httpAuth {{username, password, origin: '{origin}'}} — then pass its sessionId"
)
UNTRUSTED_HINT = (
    "the site's certificate is not trusted (self-signed, expired, issued for another host): use its correct https:// "
    "address; if you trust the site (a dev server, an intranet), open a session that does not check certificates: "
    "browser_sessions create with skipTlsVerification: true, then pass its sessionId"
)


def _timeout(tab: Tab, url: str, wait_until: str, budget: Budget) -> BoxwrightError:
    return BoxwrightError(
        ErrorCode.NAVIGATION_TIMEOUT,
        f"{redact(url)} did not finish loading (waitUntil={wait_until}) within {budget.total_ms} ms",
        details={"tabId": tab.id, "url": redact(tab.url), "waitUntil": wait_until, "timeoutMs": budget.total_ms},
    )


async def navigation_failed(
    tab: Tab, url: str, exc: PlaywrightError, mark: NavigationMark, budget: Budget
) -> BoxwrightError:
    """A navigation error, as NAVIGATION_FAILED (network), PAGE_CRASHED or EXECUTION_ERROR."""
    message = clean_message(exc)
    if "Download is starting" in message:
        return BoxwrightError(
            ErrorCode.NAVIGATION_FAILED,
            f"{redact(url)} is a download, and downloads are disabled in the sandbox browser",
            hint="a PDF's text: the scrape tool reads it (format markdown, html or links); any file: fetch it with "
            "code_run (e.g. curl or python)",
            details={"tabId": tab.id},
        )
    match = NET_ERROR.search(message)
    if match is None:
        return execution_error(f"navigation to {redact(url)}", exc, tabId=tab.id)
    if match.group(1) == "ERR_ABORTED" and tab.page is not None:
        # Was it the renderer dying? A trivial script answers at once on a live page and fails
        # with "Target crashed" on a dead one (guard then reports PAGE_CRASHED).
        with contextlib.suppress(PlaywrightError, TimeoutError):
            await tab.guard(asyncio.wait_for(tab.page.evaluate("1"), CRASH_PROBE_S), dialogs_ok=True)
        tab.check(dialogs_ok=True)
    else:
        await tab.error_page_since(mark, min(ERROR_PAGE_S, budget.seconds()))
    hint = UNTRUSTED_HINT if match.group(1).startswith("ERR_CERT_") else None
    if match.group(1) == AUTH_ERROR:
        hint = AUTH_HINT.format(origin=origin_of(url))
    elif match.group(1) in PROXY_ERRORS:
        hint = PROXY_HINT
    return BoxwrightError(
        ErrorCode.NAVIGATION_FAILED,
        f"could not load {redact(url)}: {match.group(1)}",
        hint=hint,
        details={"tabId": tab.id, "netError": match.group(1)},
    )


async def open_url(tab: Tab, url: str, wait_until: WaitUntil, budget: Budget) -> int | None:
    """Navigate the tab; the HTTP status of the main document (None for about:/data:). Dialogs of the page it
    shows are answered first, as a user leaving the page would (see leaving)."""
    url = check_url(url)
    await tab.leave_if_stuck()
    page = tab.check(dialogs_ok=True)
    log.debug("goto %s in %s/%s", redact(url), tab.session.id, tab.id)
    mark = tab.mark()
    async with Leaving(tab, page, url) as leaving:
        try:
            response = await tab.guard(leaving.goto(url, wait_until, budget.ms()), dialogs_ok=True)
        except PlaywrightTimeoutError:
            raise _timeout(tab, url, wait_until, budget) from None
        except PlaywrightError as exc:
            raise await navigation_failed(tab, url, exc, mark, budget) from None
    return response.status if response is not None else None


async def goto(tab: Tab, params: GotoParams, budget: Budget) -> GotoResult:
    status = await open_url(tab, params.url, params.waitUntil, budget)
    return GotoResult(tabId=tab.id, url=tab.url, title=await tab.title(), status=status)


async def _history(tab: Tab, params: HistoryParams, budget: Budget, *, forward: bool) -> HistoryResult:
    page = tab.check()
    mark = tab.mark()
    move = page.go_forward if forward else page.go_back
    try:
        await tab.guard(move(timeout=budget.ms(), wait_until="load"))
    except PlaywrightTimeoutError:
        raise _timeout(tab, tab.url, "load", budget) from None
    except PlaywrightError as exc:
        raise await navigation_failed(tab, tab.url, exc, mark, budget) from None
    return HistoryResult(tabId=tab.id, url=tab.url, title=await tab.title(), navigated=tab.navigated_since(mark))


async def back(tab: Tab, params: HistoryParams, budget: Budget) -> HistoryResult:
    return await _history(tab, params, budget, forward=False)


async def forward(tab: Tab, params: HistoryParams, budget: Budget) -> HistoryResult:
    return await _history(tab, params, budget, forward=True)
