"""browser.evaluate: run a JavaScript expression (or function body) in the page, return JSON.

Whether the caller may run scripts at all is decided on the host (trust level), not here.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.browser import EvaluateParams, EvaluateResult
from sandbox_image.browser.background import quietly, spawn
from sandbox_image.browser.errors import PlaywrightError, clean_message
from sandbox_image.browser.tab import Tab
from sandbox_image.browser.timeouts import Budget

if TYPE_CHECKING:
    from playwright.async_api import JSHandle

MAX_RESULT_BYTES = 1_000_000
# How long a timed-out call waits to hear that the script was stopped (it takes milliseconds) before it
# answers anyway; the stop goes on in the background.
STOP_WAIT_S = 0.2
_TYPE_OF = """v => v === null ? "null" : Array.isArray(v) ? "array"
  : v instanceof Date ? "date" : v instanceof RegExp ? "regexp" : v instanceof Map ? "map" : v instanceof Set ? "set"
  : (typeof Node === "function" && v instanceof Node) ? "node" : (typeof Window === "function" && v instanceof Window)
  ? "window" : typeof v"""
_NOT_JSON = {
    "function": "a function",
    "symbol": "a symbol",
    "node": "a DOM node (return e.g. its textContent or outerHTML)",
    "window": "a Window",
    "map": "a Map (return Object.fromEntries(map))",
    "set": "a Set (return Array.from(set))",
    "regexp": "a RegExp (return its source)",
}


def _wrappings(expression: str, error: str) -> list[str]:
    """What to try when the text is not a plain expression: `return …` (a function body) or top-level await."""
    body = f"async () => {{\n{expression}\n}}"
    if "Illegal return statement" in error:
        return [body]
    if "await is only valid" in error:
        return [f"async () => (\n{expression}\n)", body]
    return []


def _not_serialisable(what: str) -> BoxwrightError:
    return BoxwrightError(
        ErrorCode.EXECUTION_ERROR,
        f"the expression returned {what}, which is not JSON-serialisable",
        hint="return plain data: strings, numbers, booleans, null, arrays and plain objects",
        details={"returned": what},
    )


async def _evaluate_handle(tab: Tab, expression: str) -> JSHandle:
    page = tab.check()
    try:
        return await tab.guard(page.evaluate_handle(expression))
    except PlaywrightError as exc:
        retries = _wrappings(expression, clean_message(exc))
        if not retries:
            raise
        error = exc
    for wrapped in retries:  # syntax errors are found before anything runs: no double side effects
        try:
            return await tab.guard(page.evaluate_handle(wrapped))
        except PlaywrightError as exc:
            if "SyntaxError" not in clean_message(exc):
                raise
            error = exc
    raise error


async def evaluate(tab: Tab, params: EvaluateParams, budget: Budget) -> EvaluateResult:
    try:
        async with asyncio.timeout(budget.seconds()):
            handle = await _evaluate_handle(tab, params.expression)
            try:
                kind: str = await tab.guard(handle.evaluate(_TYPE_OF))
                if kind in _NOT_JSON:
                    raise _not_serialisable(_NOT_JSON[kind])
                value: Any = None if kind == "undefined" else await tab.guard(handle.json_value())
            finally:
                spawn(quietly(handle.dispose()))
    except TimeoutError:
        stopped = tab.devtools is not None and await tab.devtools.stop_script(STOP_WAIT_S)
        raise BoxwrightError(
            ErrorCode.OPERATION_TIMEOUT,
            f"the script did not finish within {budget.total_ms} ms"
            + ("; it was stopped and the tab can be used again" if stopped else ""),
            hint="give it a longer timeoutMs, or make it return sooner (a promise that never settles waits as long)"
            if stopped
            else "a script that never returns keeps the page busy: close the tab (browser_tabs close)",
            details={"tabId": tab.id, "scriptStopped": stopped},
        ) from None
    except PlaywrightError as exc:
        message = clean_message(exc)
        if "Execution context was destroyed" in message:
            message = "the page navigated while the script ran"
        raise BoxwrightError(
            ErrorCode.EXECUTION_ERROR, f"the script failed: {message}", details={"jsError": message}
        ) from None
    if isinstance(value, datetime):
        value = value.isoformat()
    try:
        size = len(json.dumps(value, allow_nan=False))
    except (ValueError, TypeError):  # NaN/Infinity, or a circular structure
        raise _not_serialisable("a value with NaN, Infinity or a circular reference") from None
    if size > MAX_RESULT_BYTES:
        raise BoxwrightError(
            ErrorCode.EXECUTION_ERROR,
            f"the result is {size} bytes of JSON (at most {MAX_RESULT_BYTES})",
            hint="return less data, or write it to a file with code_run",
            details={"sizeBytes": size},
        )
    return EvaluateResult(tabId=tab.id, value=value, type=kind)
