"""A bounded wait for a rendered page to stop changing before it is read.

In-page and self-contained (a MutationObserver that resolves after `quiet_ms` without mutations,
or at `max_ms`), so it needs nothing from the browser package's tab bookkeeping; the scrape tool
may use its own network-aware smart wait instead and skip this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sandbox_image.browser.errors import PlaywrightError

if TYPE_CHECKING:
    from playwright.async_api import Page

_SETTLE = """([quietMs, maxMs]) => new Promise(resolve => {
  const started = performance.now();
  let last = started;
  const observer = new MutationObserver(() => { last = performance.now(); });
  observer.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  const tick = () => {
    const now = performance.now();
    if (now - last >= quietMs || now - started >= maxMs) {
      observer.disconnect();
      resolve(Math.round(now - started));
    } else {
      setTimeout(tick, 50);
    }
  };
  setTimeout(tick, 50);
})"""


async def settle(page: Page, *, quiet_ms: int = 300, max_ms: int = 3000) -> int:
    """Milliseconds waited until the DOM was quiet for `quiet_ms` (at most about `max_ms`)."""
    try:
        return int(await page.evaluate(_SETTLE, [quiet_ms, max_ms]))
    except PlaywrightError:  # navigated away or closed meanwhile: nothing left to wait for
        return 0
