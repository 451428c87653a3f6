"""How the sandbox's Chromium is launched (which one, and whether early, are SandboxSettings)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


def context_options(storage_state: dict[str, Any] | None) -> dict[str, Any]:
    """Every session's context options; only a login profile's storageState (never logged) differs."""
    return {"accept_downloads": False, "viewport": VIEWPORT, "storage_state": storage_state}
