"""browser.wait_for_stable: wait until the DOM and the network have both been quiet for quietMs.

DOM quiet is measured by a MutationObserver installed for the duration of the call (in the page's
world: a hostile page can only fool its own stability answer) and polled from here; network quiet
comes from the tab's request events. At the timeout the answer is stable=false, not an error.
Between probes it sleeps until the quiet window could next be complete (a static page: one probe at
the start, one when quietMs has passed), not in fixed small steps: every probe is a round trip to
the page, and a batch of pages pays for them on every page.
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
# After a step a program takes on a page (a template run's step, a scrape action): quiet this long counts as
# settled — shorter than a first load's wait, since the page is already there.
AFTER_ACTION_QUIET_MS = 300
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


def _next_probe_s(
    dom_quiet_ms: float | None, ready: bool, pending: int, network_quiet_s: float, quiet_s: float
) -> float:
    """How long until the page could first count as stable, if nothing moves meanwhile (at least POLL_S)."""
    if dom_quiet_ms is None or not ready or pending:  # mid-navigation, still loading, requests open: look again soon
        return POLL_S
    dom_left = quiet_s - dom_quiet_ms / 1000.0
    return max(POLL_S, dom_left, quiet_s - network_quiet_s)


async def wait_for_stable(tab: Tab, params: WaitForStableParams, budget: Budget) -> StabilityResult:
    key = f"__boxwright_stable_{secrets.token_hex(6)}"
    quiet_s = params.quietMs / 1000.0
    dom_quiet, ready_state = False, "unknown"
    try:
        while True:
            probe = await _probe(tab, key)
            dom_quiet_ms: float | None = None
            if probe is not None:
                dom_quiet_ms = float(probe.get("quietMs", 0))
                dom_quiet = dom_quiet_ms >= params.quietMs
                ready_state = str(probe.get("readyState", "unknown"))[:20]
            pending = tab.pending_requests()
            network_quiet_s = time.monotonic() - tab.last_network_activity
            network_quiet = pending == 0 and network_quiet_s >= quiet_s
            ready = ready_state in ("interactive", "complete")
            stable = dom_quiet and network_quiet and ready
            left = budget.seconds()
            if stable or left < POLL_S:
                break
            await asyncio.sleep(min(_next_probe_s(dom_quiet_ms, ready, pending, network_quiet_s, quiet_s), left))
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
