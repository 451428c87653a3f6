"""browser.wait_for_stable: wait until the DOM and the network have both been quiet for quietMs.

DOM quiet is measured by a MutationObserver installed for the duration of the call (in the page's
world: a hostile page can only fool its own stability answer) and polled from here; network quiet
comes from the tab's request events. At the timeout the answer is stable=false, not an error.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any

from rpc.models.browser import StabilityResult, WaitForStableParams
from sandbox_image.browser.background import quietly, spawn
from sandbox_image.browser.errors import PlaywrightError
from sandbox_image.browser.tab import Tab
from sandbox_image.browser.timeouts import Budget

POLL_S = 0.05
PROBE_TIMEOUT_S = 1.0
_PROBE = """key => {
  let state = window[key];
  if (!state) {
    state = {last: performance.now()};
    state.observer = new MutationObserver(() => { state.last = performance.now(); });
    state.observer.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
    Object.defineProperty(window, key, {value: state, configurable: true});
  }
  return {quietMs: performance.now() - state.last, readyState: document.readyState};
}"""
_REMOVE = """key => { const state = window[key]; if (state) { state.observer.disconnect(); delete window[key]; } }"""


async def _probe(tab: Tab, key: str) -> dict[str, Any] | None:
    """Milliseconds since the last DOM mutation and document.readyState; None mid-navigation."""
    page = tab.check()
    try:
        result = await tab.guard(asyncio.wait_for(page.evaluate(_PROBE, key), PROBE_TIMEOUT_S))
    except (PlaywrightError, TimeoutError):  # execution context replaced by a navigation, or busy
        return None
    return result if isinstance(result, dict) else None


async def wait_for_stable(tab: Tab, params: WaitForStableParams, budget: Budget) -> StabilityResult:
    key = f"__boxwright_stable_{secrets.token_hex(6)}"
    quiet_s = params.quietMs / 1000.0
    dom_quiet, ready_state = False, "unknown"
    try:
        while True:
            probe = await _probe(tab, key)
            if probe is not None:
                dom_quiet = float(probe.get("quietMs", 0)) >= params.quietMs
                ready_state = str(probe.get("readyState", "unknown"))[:20]
            pending = tab.pending_requests()
            network_quiet = pending == 0 and time.monotonic() - tab.last_network_activity >= quiet_s
            stable = dom_quiet and network_quiet and ready_state in ("interactive", "complete")
            if stable or budget.seconds() < POLL_S:
                break
            await asyncio.sleep(POLL_S)
    finally:
        if tab.page is not None and not tab.dialogs:
            spawn(quietly(tab.page.evaluate(_REMOVE, key)))
    return StabilityResult(
        tabId=tab.id,
        stable=stable,
        domStable=dom_quiet,
        networkPending=pending,
        loadState=ready_state,
        elapsedMs=budget.elapsed_ms(),
    )
