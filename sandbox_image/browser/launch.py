"""How the sandbox's Chromium is launched (which one, and whether early, are SandboxSettings)."""

from __future__ import annotations

from playwright.async_api import ViewportSize

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
