"""Selectors → Playwright locators, and Playwright failures on them → the right error code.

`ref_N` resolves through the tab's registry to Playwright's `aria-ref=…` (its isolated world, out of
the page's reach); anything else is CSS, forced through Playwright's css engine so that no other
selector engine (xpath=, text=, aria-ref=…) can be reached by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from rpc.errors import BoxwrightError, ErrorCode, invalid_parameter
from sandbox_image.browser.errors import (
    PlaywrightError,
    PlaywrightTimeoutError,
    blocking_reason,
    clean_message,
    execution_error,
)
from sandbox_image.browser.refs import parse_ref
from sandbox_image.browser.tab import Tab
from sandbox_image.browser.timeouts import Budget

if TYPE_CHECKING:
    from playwright.async_api import Locator

T = TypeVar("T")

_MATCH_COUNT = re.compile(r"resolved to (\d+) elements")
_BAD_SELECTOR = ("while parsing css selector", "is not a valid selector", "Unexpected token", "Unsupported token")
_WRONG_KIND = (
    "Element is not an <input>",
    "Element is not a <select>",
    "Not a checkbox or radio button",
    "Element is not a <textarea>",
    "Cannot type text into input[type=",
    "Unknown key",
)
MULTIPLE_HINT = "use a ref from browser_snapshot or a more specific CSS selector"
HINT_CSS = "give a CSS selector as document.querySelector takes it, e.g. '#password', 'input[name=email]'"


@dataclass(frozen=True)
class Target:
    locator: Locator
    selector: str
    epoch: int
    description: str | None = None  # for refs: what the ref was issued for

    @property
    def is_ref(self) -> bool:
        return self.description is not None


def _stale(target: Target, why: str) -> BoxwrightError:
    return BoxwrightError(
        ErrorCode.STALE_REF,
        f"{target.selector} ({target.description}) is stale: {why}",
        details={"selector": target.selector},
    )


def _gone(target: Target) -> BoxwrightError:
    return _stale(target, "the element is no longer on the page (removed, hidden or changed)")


async def locate(tab: Tab, selector: str) -> Target:
    """A locator for `selector`; a ref is checked to still name its element before anything acts on it."""
    page = tab.check()
    selector = selector.strip()
    n = parse_ref(selector)
    if n is None:
        if ">>" in selector:
            raise BoxwrightError(
                ErrorCode.INVALID_PARAMETER,
                "selector must be a ref (ref_12) or a plain CSS selector; '>>' chains are not supported",
                details={"selector": selector},
            )
        return Target(page.locator(f"css={selector}"), selector, tab.refs.epoch)
    pw_ref, description = tab.refs.lookup(n)
    target = Target(page.locator(f"aria-ref={pw_ref}"), f"ref_{n}", tab.refs.epoch, description)
    if await _count(tab, target) == 0:
        raise _gone(target)
    if tab.refs.epoch != target.epoch:
        raise _stale(target, "the page navigated since that snapshot")
    return target


def _unparsable(message: str) -> bool:
    return any(marker in message for marker in _BAD_SELECTOR)


async def check_syntax(tab: Tab, selectors: Sequence[tuple[str, str]]) -> None:
    """INVALID_PARAMETER naming the field of the first (field, selector) the browser cannot parse, asked of
    the tab as it is (a blank page will do): a job checks its selectors before it visits a site, instead of
    finding a typo in the last one after acting on the page. Refs are left to their step (a new tab has none)."""
    for field, selector in selectors:
        if parse_ref(selector.strip()) is not None:
            continue
        try:
            target = await locate(tab, selector)
            await tab.guard(target.locator.count())
        except BoxwrightError as exc:
            if exc.code is not ErrorCode.INVALID_PARAMETER:
                raise
            raise invalid_parameter(field, f"{selector[:200]!r}: {exc.message}", hint=HINT_CSS) from None
        except PlaywrightError as exc:
            message = clean_message(exc)
            if not _unparsable(message):
                raise
            raise invalid_parameter(
                field, f"{selector[:200]!r} is not a valid CSS selector: {message[:300]}", hint=HINT_CSS
            ) from None


async def _count(tab: Tab, target: Target) -> int:
    try:
        return await tab.guard(target.locator.count())
    except PlaywrightError as exc:
        if "Invalid frame" in str(exc):  # the ref's iframe is gone
            return 0
        raise


async def explain_timeout(tab: Tab, target: Target, verb: str, budget: Budget, exc: BaseException) -> BoxwrightError:
    """An action timed out: was the element missing, gone, ambiguous, or there but not actionable?"""
    if target.is_ref and tab.refs.epoch != target.epoch:
        return _stale(target, "the page navigated")
    count = await _count(tab, target)
    if count == 0:
        if target.is_ref:
            return _gone(target)
        return BoxwrightError(
            ErrorCode.ELEMENT_NOT_FOUND,
            f"no element matches {target.selector!r} (waited {budget.total_ms} ms)",
            details={"selector": target.selector, "timeoutMs": budget.total_ms},
        )
    if count > 1:
        return _ambiguous(target.selector, count)
    reason = blocking_reason(exc) or "it did not become ready"
    return BoxwrightError(
        ErrorCode.EXECUTION_ERROR,
        f"could not {verb} {target.selector} within {budget.total_ms} ms: {reason}",
        hint="check the element's state in browser_snapshot (disabled? hidden? covered by a dialog?) or wait first",
        details={"selector": target.selector, "reason": reason, "timeoutMs": budget.total_ms},
    )


def _ambiguous(selector: str, count: int) -> BoxwrightError:
    return BoxwrightError(
        ErrorCode.INVALID_PARAMETER,
        f"{selector!r} matches {count} elements; an action needs exactly one",
        hint=MULTIPLE_HINT,
        details={"selector": selector, "matches": count},
    )


def explain_error(target: Target, verb: str, exc: BaseException) -> BoxwrightError:
    message = clean_message(exc)
    if "strict mode violation" in message:
        match = _MATCH_COUNT.search(message)
        return _ambiguous(target.selector, int(match.group(1)) if match else 2)
    if _unparsable(message):
        return BoxwrightError(
            ErrorCode.INVALID_PARAMETER,
            f"{target.selector!r} is not a valid CSS selector",
            hint="pass a ref from browser_snapshot (ref_12) or a valid CSS selector",
            details={"selector": target.selector, "cause": message},
        )
    if any(marker in message for marker in _WRONG_KIND):
        return BoxwrightError(
            ErrorCode.INVALID_PARAMETER,
            f"cannot {verb} {target.selector}: {message}",
            details={"selector": target.selector},
        )
    return execution_error(f"{verb} {target.selector}", exc, selector=target.selector)


async def act(tab: Tab, target: Target, verb: str, budget: Budget, action: Callable[[float], Awaitable[T]]) -> T:
    """Run `action(timeout_ms)` on a located target, translating Playwright's failures."""
    try:
        return await tab.guard(action(budget.ms()))
    except PlaywrightTimeoutError as exc:
        raise await explain_timeout(tab, target, verb, budget, exc) from None
    except PlaywrightError as exc:
        raise explain_error(target, verb, exc) from None
