"""How the sandbox browser is launched, read from the environment."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

from playwright.async_api import ViewportSize

log = logging.getLogger("boxwright.agent.browser")

DEFAULT_CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium floods a closed network with connection attempts;
# --no-sandbox because the container (all capabilities dropped) cannot create Chromium's own sandbox.
LAUNCH_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
VIEWPORT: ViewportSize = {"width": 1280, "height": 720}
LAUNCH_TIMEOUT_MS = 60_000

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


@dataclass(frozen=True)
class BrowserSettings:
    executable: str = DEFAULT_CHROMIUM
    # Lazy by default. Measured in the sandbox image: an idle prelaunched Chromium adds ~165 MB to every
    # sandbox (70 → 236 MB), browsing or not; launching lazily costs the first browser call ~0.7 s once
    # (first goto ~1.0 s lazy vs ~0.4 s prelaunched; later ones ~0.07 s).
    prelaunch: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> BrowserSettings:
        env = os.environ if env is None else env
        raw = env.get("BOXWRIGHT_BROWSER_PRELAUNCH", "").strip().lower()
        if raw not in _TRUE | _FALSE:
            log.warning("BOXWRIGHT_BROWSER_PRELAUNCH=%r is not a boolean; launching lazily", raw[:20])
        return cls(executable=env.get("BOXWRIGHT_CHROMIUM") or DEFAULT_CHROMIUM, prelaunch=raw in _TRUE)
