"""Actions on elements and the page: click, type, press_key, hover, select_option, scroll."""

from __future__ import annotations

import asyncio
import contextlib
import time

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.browser import (
    ActionResult,
    ClickParams,
    HoverParams,
    PressKeyParams,
    ScrollParams,
    ScrollResult,
    SelectOptionParams,
    SelectOptionResult,
    TypeParams,
)
from sandbox_image.browser.errors import PlaywrightError, clean_message, execution_error
from sandbox_image.browser.locate import Target, act, locate
from sandbox_image.browser.tab import NavigationMark, Tab
from sandbox_image.browser.timeouts import Budget

# After an action that navigated, wait at most this long for the new document's DOM, so the next
# snapshot reads the new page rather than a blank one.
NAVIGATION_SETTLE_MS = 5_000
# Options of a <select> that may still be arriving (filled by a script) are waited for this long at most;
# after that a value no option has is a wrong value, said at once rather than at the action's timeout.
OPTIONS_WAIT_S = 1.5
_MISSING_OPTIONS = """(el, values) => {
  if (el.tagName !== 'SELECT') return null;
  const options = [...el.options];
  const has = v => options.some(o => o.value === v || o.label === v || o.textContent.trim() === v);
  return {missing: values.filter(v => !has(v)), offered: options.slice(0, 20).map(o => o.label || o.value)};
}"""

_SCROLL_BY = """([dx, dy]) => {
  window.scrollBy({left: dx ?? 0, top: dy ?? 0, behavior: "instant"});
}"""
_SCROLL_STATE = """() => {
  const root = document.scrollingElement || document.documentElement;
  return {x: window.scrollX, y: window.scrollY, height: root ? root.scrollHeight : 0,
          viewWidth: window.innerWidth, viewHeight: window.innerHeight};
}"""


async def finish(tab: Tab, mark: NavigationMark, budget: Budget) -> ActionResult:
    """The common tail of an action: did it navigate (then let the new DOM arrive), where are we now."""
    navigated = tab.navigated_since(mark)
    if navigated and tab.page is not None:
        # A slow page is fine: the action itself succeeded, and the caller can wait_for_stable.
        with contextlib.suppress(PlaywrightError):
            timeout = min(budget.ms(), NAVIGATION_SETTLE_MS)
            await tab.guard(tab.page.wait_for_load_state("domcontentloaded", timeout=timeout))
    return ActionResult(tabId=tab.id, url=tab.url, title=await tab.title(), navigated=navigated)


# `target`: the element found another way than params.selector (scrape's actions find one by its text or
# label); params.selector then only names it in messages.


async def click(tab: Tab, params: ClickParams, budget: Budget, target: Target | None = None) -> ActionResult:
    target = target or await locate(tab, params.selector)
    mark = tab.mark()
    if params.doubleClick:
        await act(
            tab, target, "double-click", budget, lambda ms: target.locator.dblclick(button=params.button, timeout=ms)
        )
    else:
        await act(tab, target, "click", budget, lambda ms: target.locator.click(button=params.button, timeout=ms))
    return await finish(tab, mark, budget)


async def type_text(tab: Tab, params: TypeParams, budget: Budget, target: Target | None = None) -> ActionResult:
    target = target or await locate(tab, params.selector)
    mark = tab.mark()
    if params.clear:
        await act(tab, target, "type into", budget, lambda ms: target.locator.fill(params.text, timeout=ms))
    else:
        await act(
            tab, target, "type into", budget, lambda ms: target.locator.press_sequentially(params.text, timeout=ms)
        )
    if params.submit:
        await act(tab, target, "submit", budget, lambda ms: target.locator.press("Enter", timeout=ms))
    return await finish(tab, mark, budget)


async def press_key(tab: Tab, params: PressKeyParams, budget: Budget) -> ActionResult:
    if params.selector:
        target = await locate(tab, params.selector)
        mark = tab.mark()
        await act(
            tab, target, f"press {params.key} on", budget, lambda ms: target.locator.press(params.key, timeout=ms)
        )
        return await finish(tab, mark, budget)
    page = tab.check()
    mark = tab.mark()
    try:
        await tab.guard(page.keyboard.press(params.key))
    except PlaywrightError as exc:
        if "Unknown key" in str(exc):
            raise BoxwrightError(
                ErrorCode.INVALID_PARAMETER,
                clean_message(exc),
                hint="use key names like 'Enter', 'Escape', 'ArrowDown', 'Control+A'",
                details={"key": params.key},
            ) from None
        raise execution_error(f"press {params.key}", exc) from None
    return await finish(tab, mark, budget)


async def hover(tab: Tab, params: HoverParams, budget: Budget, target: Target | None = None) -> ActionResult:
    target = target or await locate(tab, params.selector)
    mark = tab.mark()
    await act(tab, target, "hover", budget, lambda ms: target.locator.hover(timeout=ms))
    return await finish(tab, mark, budget)


async def select_option(
    tab: Tab, params: SelectOptionParams, budget: Budget, target: Target | None = None
) -> SelectOptionResult:
    target = target or await locate(tab, params.selector)
    await _options_there(tab, target, params, budget)
    mark = tab.mark()
    try:
        selected = await act(
            tab,
            target,
            "select an option of",
            budget,
            lambda ms: target.locator.select_option(params.values, timeout=ms),
        )
    except BoxwrightError as exc:
        # Playwright keeps waiting for options that never appear: that is a wrong value, not a slow page.
        if exc.details.get("reason") == "did not find some options":
            raise BoxwrightError(
                ErrorCode.INVALID_PARAMETER,
                f"no option of {target.selector} matches {params.values!r} by value or label",
                hint="read the options in browser_snapshot or browser_page_info and pass their values or labels",
                details={"selector": target.selector, "values": params.values},
            ) from None
        raise
    result = await finish(tab, mark, budget)
    return SelectOptionResult(**result.model_dump(), selected=selected)


async def _options_there(tab: Tab, target: Target, params: SelectOptionParams, budget: Budget) -> None:
    """INVALID_PARAMETER, with the options there are, when the <select> has no option for a value (by value
    or label) within OPTIONS_WAIT_S — Playwright would wait for one until the action's timeout."""
    until = time.monotonic() + min(OPTIONS_WAIT_S, budget.seconds() / 2)
    while True:
        try:
            found = await tab.guard(target.locator.evaluate(_MISSING_OPTIONS, params.values, timeout=budget.ms()))
        except PlaywrightError:
            return  # the action itself reports what is wrong with the element
        if not found or not found["missing"] or time.monotonic() >= until:
            break
        await asyncio.sleep(0.1)
    if found and found["missing"]:
        raise BoxwrightError(
            ErrorCode.INVALID_PARAMETER,
            f"no option of {target.selector} matches {found['missing']!r} by value or label",
            hint=f"pass one of its options' values or labels, e.g. {found['offered'][:5]!r}",
            details={"selector": target.selector, "values": params.values, "options": found["offered"]},
        )


async def scroll_position(tab: Tab) -> tuple[int, int]:
    """Where the page is scrolled to (x, y)."""
    try:
        state = await tab.guard(tab.check().evaluate(_SCROLL_STATE))
        return int(state["x"]), int(state["y"])
    except (PlaywrightError, KeyError, TypeError, ValueError) as exc:
        raise execution_error("scroll", exc) from None


async def scroll(tab: Tab, params: ScrollParams, budget: Budget) -> ScrollResult:
    """Scroll an element into view, or the page by `amount` (a viewport) in `direction`."""
    if params.selector:
        target = await locate(tab, params.selector)
        await act(tab, target, "scroll to", budget, lambda ms: target.locator.scroll_into_view_if_needed(timeout=ms))
    page = tab.check()
    try:
        if not params.selector:
            state = await tab.guard(page.evaluate(_SCROLL_STATE))
            vertical = params.direction in ("up", "down")
            amount = params.amount or int(state["viewHeight"] if vertical else state["viewWidth"])
            sign = -1 if params.direction in ("up", "left") else 1
            delta = [0, sign * amount] if vertical else [sign * amount, 0]
            await tab.guard(page.evaluate(_SCROLL_BY, delta))
        state = await tab.guard(page.evaluate(_SCROLL_STATE))
        x, y = int(state["x"]), int(state["y"])
        bottom = y + int(state["viewHeight"]) >= int(state["height"]) - 1
    except (PlaywrightError, KeyError, TypeError, ValueError) as exc:  # the page's own scripts may interfere
        raise execution_error("scroll", exc) from None
    return ScrollResult(
        tabId=tab.id, url=tab.url, title=await tab.title(), scrollX=x, scrollY=y, atTop=y <= 0, atBottom=bottom
    )
