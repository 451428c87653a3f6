"""The one Chromium of a sandbox, driven through Playwright.

Launched on the first browser call, or in the background at agent start when
the browser_prelaunch setting is on (then with a spare context and page ready for the first session:
sandbox_image.browser.spare). A launch runs as a task of its own that callers await through
`shield`: a caller giving up (its deadline) never leaves a half-launched browser behind, and
concurrent first calls share one launch. When the browser process dies, the sessions are told (their
tabs answer PAGE_CRASHED once) and the next call launches a new one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rpc.errors import BoxwrightError, ErrorCode, out_of_processes, process_limit
from rpc.models.browser import ContextOptions
from sandbox_image.browser import blocking, headers
from sandbox_image.browser.background import quietly
from sandbox_image.browser.blocking import Blocked
from sandbox_image.browser.errors import clean_message
from sandbox_image.browser.launch import DRIVER_ENV, LAUNCH_ARGS, LAUNCH_TIMEOUT_MS, MOBILE_DEVICE, context_options
from sandbox_image.browser.spare import Spare
from sandbox_image.config import SandboxSettings

if TYPE_CHECKING:  # Playwright itself is imported on the first launch (the agent starts ~7 MiB lighter)
    from playwright.async_api import Browser, BrowserContext, Page, Playwright

log = logging.getLogger("boxwright.agent.browser")


class Engine:
    def __init__(self, settings: SandboxSettings) -> None:
        self.settings = settings
        self.ad_filter = blocking.AdFilter(settings.filter_lists)
        self.on_disconnect: Callable[[], None] = lambda: None
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._launching: asyncio.Task[Browser] | None = None
        self._closing = False
        self.spare = Spare()

    @property
    def playwright(self) -> Playwright | None:
        """The driver, once the browser was launched (for a request client of its own: browser.headers)."""
        return self._playwright

    @property
    def connected(self) -> bool:
        return self._browser is not None and self._browser.is_connected()

    async def browser(self) -> Browser:
        """The running browser, launching it if there is none (or the last one died)."""
        if self._browser is not None and self._browser.is_connected():
            return self._browser
        if self._closing:
            raise BoxwrightError(ErrorCode.EXECUTION_ERROR, "the browser is shutting down with the agent")
        if self._launching is None or self._launching.done():
            self._launching = asyncio.get_running_loop().create_task(self._launch())
        return await asyncio.shield(self._launching)

    def open_counts(self) -> tuple[int, int]:
        """Contexts and pages open in the browser right now (what a leak would leave behind)."""
        if self._browser is None or not self._browser.is_connected():
            return 0, 0
        contexts = [c for c in self._browser.contexts if not self.spare.is_spare(c)]
        return len(contexts), sum(len(c.pages) for c in contexts)

    def prelaunch(self) -> None:
        """Start launching now, in the background, then open the spare context and page; failures are
        logged and retried on first use."""
        if self._launching is None:
            self._launching = asyncio.get_running_loop().create_task(self._launch())
            self._launching.add_done_callback(lambda t: t.cancelled() or t.exception())
        self.spare.open(self._open_spare)

    async def _open_spare(self) -> tuple[BrowserContext, Page]:
        context = await (await self.browser()).new_context(**context_options(None))
        try:
            return context, await context.new_page()
        except BaseException:
            await quietly(context.close())
            raise

    async def new_context(
        self, storage_state: dict[str, Any] | None, options: ContextOptions
    ) -> tuple[BrowserContext, Page | None, Blocked | None]:
        """A new context for a session, launching the browser if need be; with its first page already
        open when it is the spare (a plain session takes it; one with a login profile or options of its own
        — a phone, a language, certificates not checked — closes it); with the counter of the requests it
        does not make when the options block some (blocking.install)."""
        if storage_state is None and not options.changed():
            taken = await self.spare.take()
            if taken is not None:
                return *taken, None
        else:
            self.spare.discard()
        browser = await self.browser()
        device = self._playwright.devices[MOBILE_DEVICE] if options.mobile and self._playwright is not None else None
        context = await browser.new_context(**context_options(storage_state, options, device))
        try:
            # The headers' route first: Playwright runs the last one installed first, so the blocks decide
            # before a request is made with the headers.
            await headers.install(context, options, self._playwright)
            if not blocking.blocks(options):
                return context, None, None
            return context, None, await blocking.install(context, options, self.ad_filter)
        except BaseException:
            await quietly(context.close())
            raise

    async def _launch(self) -> Browser:
        started = time.monotonic()
        for attempt in (1, 2):
            try:
                if self._playwright is None:
                    self._playwright = await _start_driver()
                browser = await self._playwright.chromium.launch(
                    executable_path=self.settings.chromium,
                    args=list(LAUNCH_ARGS),
                    headless=True,
                    timeout=LAUNCH_TIMEOUT_MS,
                )
                break
            except Exception as exc:  # PlaywrightError, or the driver failing to start at all
                # The driver itself may be gone (it died with the browser): start a new one once.
                await self._stop_driver()
                if attempt == 2:
                    log.error("cannot launch Chromium (%s): %s", self.settings.chromium, clean_message(exc))
                    if out_of_processes(exc) or "[Errno 11]" in str(exc) or "Resource temporarily" in str(exc):
                        # The driver (Node) or Chromium could not be forked: the sandbox's pids limit.
                        raise process_limit("the browser could not be started") from None
                    raise BoxwrightError(
                        ErrorCode.EXECUTION_ERROR,
                        "the browser could not be started",
                        hint="the sandbox image may be broken; recreate the sandbox",
                        details={"cause": clean_message(exc)},
                    ) from None
        browser.on("disconnected", self._on_disconnected)
        self._browser = browser
        log.info("Chromium %s launched in %d ms", browser.version, (time.monotonic() - started) * 1000)
        return browser

    def _on_disconnected(self, browser: Browser) -> None:
        if browser is not self._browser:
            return
        self._browser = None
        self.spare.discard()
        if not self._closing:
            log.warning("the browser disconnected (its process died); the next browser call launches a new one")
            self.on_disconnect()

    async def _stop_driver(self) -> None:
        playwright, self._playwright = self._playwright, None
        if playwright is not None:
            await quietly(playwright.stop())

    async def close(self) -> None:
        """Agent shutdown: close the browser (all contexts and pages) and stop the driver."""
        self._closing = True
        if self._launching is not None and not self._launching.done():
            self._launching.cancel()  # stopping the driver below takes a half-launched browser with it
        browser, self._browser = self._browser, None
        if browser is not None:
            await quietly(browser.close())
        await self._stop_driver()


async def _start_driver() -> Playwright:
    """Playwright's driver (imported only now), started with DRIVER_ENV: it copies the agent's environment
    when it starts, so those variables are set for that moment only."""
    from playwright.async_api import async_playwright

    added = {name: value for name, value in DRIVER_ENV.items() if name not in os.environ}
    os.environ.update(added)
    try:
        return await async_playwright().start()
    finally:
        for name in added:
            os.environ.pop(name, None)
