"""browser.screenshot: viewport, full page or one element, as a base64 PNG."""

from __future__ import annotations

import base64
import struct

from rpc.errors import BoxwrightError, ErrorCode, FieldError, invalid_fields
from rpc.models.browser import MAX_FULL_PAGE_HEIGHT, ScreenshotParams, ScreenshotResult
from sandbox_image.browser.errors import PlaywrightError, PlaywrightTimeoutError, execution_error
from sandbox_image.browser.locate import act, locate
from sandbox_image.browser.tab import Tab
from sandbox_image.browser.timeouts import Budget

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PAGE_SIZE = """() => {
  const root = document.documentElement;
  return [root.clientWidth, Math.max(root.scrollHeight, document.body ? document.body.scrollHeight : 0)];
}"""


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from the IHDR chunk that follows the PNG signature."""
    if data[:8] != _PNG_SIGNATURE or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


async def screenshot(tab: Tab, params: ScreenshotParams, budget: Budget) -> ScreenshotResult:
    if params.selector and params.fullPage:
        raise invalid_fields(
            [FieldError(field=name, message="excludes the other") for name in ("selector", "fullPage")],
            "pass either selector (one element) or fullPage, not both",
        )
    cut_width: float | None = None  # a full page taller than MAX_FULL_PAGE_HEIGHT is cut
    if params.selector:
        target = await locate(tab, params.selector)
        data = await act(
            tab, target, "screenshot", budget, lambda ms: target.locator.screenshot(type="png", timeout=ms)
        )
    else:
        page = tab.check()
        try:
            if params.fullPage:
                # A very long page would make a PNG of tens of MB: cut it, and say so.
                width, full_height = await tab.guard(page.evaluate(_PAGE_SIZE))
                if full_height > MAX_FULL_PAGE_HEIGHT:
                    cut_width = width
            data = await tab.guard(
                page.screenshot(
                    type="png",
                    full_page=params.fullPage,
                    clip={"x": 0, "y": 0, "width": cut_width, "height": MAX_FULL_PAGE_HEIGHT} if cut_width else None,
                    timeout=budget.ms(),
                )
            )
        except PlaywrightTimeoutError:
            raise BoxwrightError(
                ErrorCode.OPERATION_TIMEOUT,
                f"the screenshot did not finish within {budget.total_ms} ms",
                details={"timeoutMs": budget.total_ms},
            ) from None
        except PlaywrightError as exc:
            raise execution_error("screenshot", exc) from None
    width, height = png_size(data)
    return ScreenshotResult(
        tabId=tab.id,
        url=tab.url,
        title=await tab.title(),
        width=width,
        height=height,
        sizeBytes=len(data),
        truncated=cut_width is not None,
        data=base64.b64encode(data).decode("ascii"),
    )
