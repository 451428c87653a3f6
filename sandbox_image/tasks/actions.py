"""The browser as a template sees it: the browser operations themselves, called directly (seed 000 §8.4).

No RPC or MCP in between: each method runs a sandbox_image/browser operation through the browser
service's `perform` (tab lock, live page, Playwright errors translated), on an explicit tab of the
run's session — never the active tab — with budgets inside the run's deadline. A failure comes out as
ActionError naming the operation (create_tab, navigate, wait_for_stable, get_page_info,
get_page_content, get_markdown, close_tab, check_selectors, fill, submit, verify), which becomes the step's
failedStep.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Awaitable
from fnmatch import fnmatchcase
from typing import TypeVar

from pydantic import Field

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.base import Result
from rpc.models.browser import (
    MAX_TABS_PER_SESSION,
    ActionResult,
    ClickParams,
    GotoParams,
    GotoResult,
    PageContentParams,
    PageContentResult,
    PageInfoParams,
    PageInfoResult,
    PressKeyParams,
    StabilityResult,
    TabParams,
    TypeParams,
    WaitForStableParams,
)
from rpc.models.scrape import BrowserScrapeParams, BrowserScrapeResult
from rpc.models.templates import LoginField, LoginSubmit, LoginSuccess
from sandbox_image.browser import content, interaction, navigation, page_info, stability
from sandbox_image.browser.interaction import finish
from sandbox_image.browser.locate import Target, act, check_syntax
from sandbox_image.browser.service import BrowserService, Operation, P, R
from sandbox_image.browser.sessions import Session
from sandbox_image.browser.tab import Tab
from sandbox_image.browser.timeouts import Budget
from sandbox_image.browser.urls import redact
from sandbox_image.tasks.executor import ActionError, settle
from sandbox_image.tasks.runs import Run

T = TypeVar("T")

STABLE_TIMEOUT_MS = 10_000  # seed 001 §5.2; a page that never settles is read anyway (stable=false)
ACTION_TIMEOUT_MS = 10_000
VERIFY_POLL_S = 0.2


async def _scrape_tab(tab: Tab, params: BrowserScrapeParams, budget: Budget) -> BrowserScrapeResult:
    """browser.scrape's operation, its engine imported on first use (in a worker thread: lxml, the extractors
    and the markdown converter load only in a sandbox that reads markdown; sandbox_image.scrape)."""
    module = await asyncio.to_thread(importlib.import_module, "sandbox_image.scrape.current_tab")
    result: BrowserScrapeResult = await module.scrape_tab(tab, params, budget)
    return result


class LabelParams(TabParams):
    """An element found by its label or accessible name (in-agent only, never on the wire)."""

    label: str
    text: str = Field("", repr=False)
    timeoutMs: int = ACTION_TIMEOUT_MS


async def _fill_by_label(tab: Tab, params: LabelParams, budget: Budget) -> ActionResult:
    page = tab.check()
    target = Target(page.get_by_label(params.label), f"the field labelled {params.label!r}", tab.refs.epoch)
    mark = tab.mark()
    await act(tab, target, "type into", budget, lambda ms: target.locator.fill(params.text, timeout=ms))
    return await finish(tab, mark, budget)


async def _click_button(tab: Tab, params: LabelParams, budget: Budget) -> ActionResult:
    page = tab.check()
    target = Target(page.get_by_role("button", name=params.label), f"the button {params.label!r}", tab.refs.epoch)
    mark = tab.mark()
    await act(tab, target, "click", budget, lambda ms: target.locator.click(timeout=ms))
    return await finish(tab, mark, budget)


class Unmet(Result):
    conditions: list[str]


async def _unmet(tab: Tab, success: LoginSuccess) -> Unmet:
    """The success conditions that do not hold on the tab's page right now."""
    page = tab.check()
    unmet: list[str] = []
    if success.urlPattern is not None and not fnmatchcase(tab.url, success.urlPattern):
        unmet.append("urlPattern")
    if success.textPresent is not None and await tab.guard(page.get_by_text(success.textPresent).count()) == 0:
        unmet.append("textPresent")
    if success.elementPresent is not None:
        element = page.locator(f"css={success.elementPresent}")
        if await tab.guard(element.count()) == 0 or not await tab.guard(element.first.is_visible()):
            unmet.append("elementPresent")
    return Unmet(conditions=unmet)


class RunBrowser:
    """Browser operations on the run's session (the ToolContext of seed 000 §8.4)."""

    def __init__(self, service: BrowserService, session: Session, run: Run) -> None:
        self.service = service
        self.session = session
        self.run = run

    async def _do(self, action: str, aw: Awaitable[T]) -> T:
        try:
            return await aw
        except BoxwrightError as exc:
            raise ActionError(action, exc) from None

    async def _perform(self, action: str, tab: Tab, operation: Operation[P, R], params: P) -> R:
        assert self.run.deadline is not None
        return await self._do(action, self.service.perform(action, tab, operation, params, self.run.deadline))

    def tabs_left(self) -> int:
        return MAX_TABS_PER_SESSION - len(self.session.tabs)

    # -- tabs --------------------------------------------------------------------------------
    async def open_tab(self, *, activate: bool = False) -> Tab:
        return await self._do("create_tab", self.session.open_tab(activate=activate))

    async def close_tab(self, tab: Tab) -> None:
        """Close a tab the run opened; never fails, and finishes even if the step is being cancelled."""
        if not tab.closed:
            await settle(self.session.close_tab(tab))

    # -- reading pages -----------------------------------------------------------------------
    async def navigate(self, tab: Tab, url: str, timeout_ms: int) -> GotoResult:
        """Load `url`; an HTTP error status (4xx/5xx) counts as a failed navigation."""
        params = GotoParams(url=url, waitUntil="load", timeoutMs=timeout_ms)
        result: GotoResult = await self._perform("navigate", tab, navigation.goto, params)
        if result.status is not None and result.status >= 400:
            raise ActionError(
                "navigate",
                BoxwrightError(
                    ErrorCode.NAVIGATION_FAILED,
                    f"{redact(url)} answered HTTP {result.status}",
                    hint="check the URL; the server answered with an error page",
                    details={"tabId": tab.id, "httpStatus": result.status},
                ),
            )
        return result

    async def wait_for_stable(self, tab: Tab, timeout_ms: int = STABLE_TIMEOUT_MS) -> StabilityResult:
        params = WaitForStableParams(timeoutMs=timeout_ms, quietMs=stability.AFTER_ACTION_QUIET_MS)
        return await self._perform("wait_for_stable", tab, stability.wait_for_stable, params)

    async def page_info(self, tab: Tab, max_elements: int) -> PageInfoResult:
        params = PageInfoParams(maxElements=max_elements, visibleOnly=False)
        return await self._perform("get_page_info", tab, page_info.page_info, params)

    async def page_content(self, tab: Tab, max_length: int) -> PageContentResult:
        params = PageContentParams(maxLength=max_length)
        return await self._perform("get_page_content", tab, content.page_content, params)

    async def markdown(self, tab: Tab, max_chars: int) -> BrowserScrapeResult:
        """The tab's main content as markdown, by the scrape engine (browser_scrape's operation)."""
        params = BrowserScrapeParams(format="markdown", maxChars=max_chars)
        return await self._perform("get_markdown", tab, _scrape_tab, params)

    # -- forms -------------------------------------------------------------------------------
    async def check_selectors(self, tab: Tab, selectors: list[tuple[str, str]]) -> None:
        """Every (field, CSS selector) of the inputs parsed by the browser before the page is loaded."""
        await self._do("check_selectors", check_syntax(tab, selectors))

    async def fill(self, tab: Tab, field: LoginField, timeout_ms: int = ACTION_TIMEOUT_MS) -> ActionResult:
        if field.selector is not None:
            params = TypeParams(selector=field.selector, text=field.value, clear=True, timeoutMs=timeout_ms)
            return await self._perform("fill", tab, interaction.type_text, params)
        assert field.label is not None
        by_label = LabelParams(label=field.label, text=field.value, timeoutMs=timeout_ms)
        return await self._perform("fill", tab, _fill_by_label, by_label)

    async def submit(self, tab: Tab, submit: LoginSubmit | None, timeout_ms: int = ACTION_TIMEOUT_MS) -> ActionResult:
        """Click the submit button, or press Enter in the focused (last filled) field."""
        if submit is None:
            enter = PressKeyParams(key="Enter", timeoutMs=timeout_ms)
            return await self._perform("submit", tab, interaction.press_key, enter)
        if submit.selector is not None:
            click = ClickParams(selector=submit.selector, timeoutMs=timeout_ms)
            return await self._perform("submit", tab, interaction.click, click)
        assert submit.text is not None
        return await self._perform("submit", tab, _click_button, LabelParams(label=submit.text, timeoutMs=timeout_ms))

    async def verify(self, tab: Tab, success: LoginSuccess, timeout_ms: int) -> None:
        """Wait until every success condition holds; ActionError("verify") naming the unmet ones if not."""
        assert self.run.deadline is not None
        budget = Budget.of(self.run.deadline, timeout_ms)

        async def check(t: Tab, _params: TabParams, _budget: Budget) -> Unmet:
            return await _unmet(t, success)

        while True:
            unmet = (await self._perform("verify", tab, check, TabParams())).conditions
            if not unmet:
                return
            if budget.seconds() < VERIFY_POLL_S:
                break
            await asyncio.sleep(VERIFY_POLL_S)
        code = ErrorCode.EXECUTION_ERROR if unmet == ["urlPattern"] else ErrorCode.ELEMENT_NOT_FOUND
        raise ActionError(
            "verify",
            BoxwrightError(
                code,
                f"the login was not confirmed within {budget.total_ms} ms: {', '.join(unmet)} not met "
                f"(now at {redact(tab.url)})",
                hint="check the credentials, or the success condition (urlPattern, textPresent, elementPresent)",
                details={"unmet": unmet, "url": redact(tab.url)},
            ),
        )
