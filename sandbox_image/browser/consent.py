"""blockCookieBanners: cookie-consent popups answered with a refusal, for a scrape's context and a browser
session's alike, by DuckDuckGo's autoconsent (vendored in ./autoconsent, MPL-2.0).

Its content script runs at the start of every document of the context, in every frame (an init script);
it talks to this module through one binding, `autoconsentSendMessage`, as its Playwright build expects:
`init` is answered with the configuration (opt out, hide known popups at once) and the rules, `eval`
with the value of the rule's snippet evaluated in that frame, and the rest are reports — which consent
manager was found, whether the refusal worked, and how far the main frame's script has got — kept in
the context's `Consent` record. `scrape`, once the page has settled, gives the script its second look
at the page when it has had one only, and when it found a consent manager waits until the popup is
dealt with (Consent.settle, within CONSENT_WAIT_MAX_S), then lets the page settle again.

The script and the binding live in the page's main world (as window.autoconsent*), where a page's own
scripts could see them; a site that looks for them learns that a consent manager is automated, no more.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox_image.browser.background import quietly, spawn

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Frame

log = logging.getLogger("boxwright.agent.browser")

ASSETS = Path(__file__).parent / "autoconsent"
CONSENT_WAIT_MAX_S = 4.0  # how long a scrape waits for a consent popup to be dealt with
SECOND_LOOK_S = 1.5  # how long it waits for the script's second look at a page that showed it none

# autoconsent's configuration (its docs/api.md): refuse, hide the known popups while that runs, and find
# unknown ones by their wording too; no logs in the page's console.
CONFIG: dict[str, Any] = {
    "enabled": True,
    "autoAction": "optOut",
    "disabledCmps": [],
    "enablePrehide": True,
    "enableCosmeticRules": True,
    "enableGeneratedRules": True,
    "enableHeuristicDetection": True,
    "heuristicMode": "reject",
    "detectRetries": 20,
    "isMainWorld": True,
    "prehideTimeout": 2000,
    "logs": {
        name: False for name in ("lifecycle", "rulesteps", "detectionsteps", "evals", "errors", "messages", "waits")
    },
}
# Where the main frame's script stops: nothing found, or the popup dealt with (or not).
THROUGH = frozenset({"nothingDetected", "optOutSucceeded", "optOutFailed", "done"})


@dataclass
class Consent:
    """What the context's consent script did."""

    refused: list[str] = field(default_factory=list)  # consent managers whose popup was refused, in order
    main_state: str = "loading"  # the main frame's script's lifecycle (autoconsent's LifecycleState)
    attempts: int = 0  # how often the main frame's script has looked for a consent manager
    detected: bool = False  # it found one in the main frame
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def settle(self, bound_s: float) -> bool:
        """For a page that has loaded and settled, within `bound_s`: a second look for a consent manager when the
        script has taken one only (it looks again 0.5 s after the first, then on each change to the page), and
        when it found one, until the popup is dealt with. Whether a popup was dealt with meanwhile: the page
        has changed since it settled."""
        loop = asyncio.get_running_loop()
        until = loop.time() + bound_s
        if self.main_state in THROUGH:  # all done while the page settled
            return False
        looked = await self._until(
            lambda: self.detected or self.main_state in THROUGH or self.attempts >= 2, min(SECOND_LOOK_S, bound_s)
        )
        if looked and self.detected:
            await self._until(lambda: self.main_state in THROUGH, until - loop.time())
        return self.detected

    async def _until(self, done: Callable[[], bool], bound_s: float) -> bool:
        loop = asyncio.get_running_loop()
        until = loop.time() + bound_s
        while not done():
            left = until - loop.time()
            if left <= 0:
                return False
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), left)
        return True


@cache
def _assets() -> tuple[str, dict[str, Any]]:
    """The content script and the rules (read once per agent, ~0.4 MB)."""
    script = (ASSETS / "autoconsent.playwright.js").read_text(encoding="utf-8")
    rules = {"autoconsent": [], "compact": json.loads((ASSETS / "compact-rules.json").read_text(encoding="utf-8"))}
    return script, rules


async def install(context: BrowserContext) -> Consent:
    """The consent script in every document of `context` from now on, and the record of what it does."""
    script, rules = await asyncio.to_thread(_assets)
    consent = Consent()

    async def on_message(source: dict[str, Any], message: Any) -> None:
        if not isinstance(message, dict):
            return
        frame: Frame = source["frame"]
        kind = message.get("type")
        if kind == "init":
            _reply(frame, {"type": "initResp", "config": CONFIG, "rules": rules})
        elif kind == "eval":
            spawn(_evaluate(frame, message))
        elif kind == "optOutResult" and message.get("result") and message.get("cmp"):
            if message["cmp"] not in consent.refused:
                consent.refused.append(str(message["cmp"]))
        elif kind == "report" and message.get("mainFrame") and isinstance(message.get("state"), dict):
            state = message["state"]
            consent.main_state = str(state.get("lifecycle", consent.main_state))
            consent.attempts = int(state.get("findCmpAttempts") or 0)
            consent.detected = consent.detected or bool(state.get("detectedCmps"))
            consent.changed.set()

    await context.expose_binding("autoconsentSendMessage", on_message)
    # Web pages only: not the blank page every tab starts on, nor a data: or file: document.
    await context.add_init_script(script=f"if (/^https?:$/.test(location.protocol)) {{\n{script}\n}}")
    return consent


async def _evaluate(frame: Frame, message: dict[str, Any]) -> None:
    """A rule's snippet (autoconsent's own, from its rules) in the frame's main world; false if it throws."""
    try:
        result = await frame.evaluate(str(message.get("code", "false")))
    except Exception:  # the frame went away, or the snippet failed on this page
        result = False
    _reply(frame, {"type": "evalResp", "id": message.get("id"), "result": result})


def _reply(frame: Frame, message: dict[str, Any]) -> None:
    """Hand `message` to the frame's script, without holding up the binding call that asked for it."""
    deliver = "m => window.autoconsentReceiveMessage && window.autoconsentReceiveMessage(m)"
    spawn(quietly(frame.evaluate(deliver, message)))
