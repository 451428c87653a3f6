"""The scrape engine (scrape.page, and browser.scrape: the page a tab shows, read the same way).
`register` serves both without loading the engine: lxml, the extractors and the markdown converter
(~10 MiB of the agent's memory, measured in the image) are imported on the first call, so a sandbox that
never scrapes never pays for them (issue 12, density).
"""

from __future__ import annotations

import asyncio
import importlib
from typing import TYPE_CHECKING

from rpc import methods
from rpc.deadline import Deadline
from rpc.models.scrape import BrowserScrapeParams, BrowserScrapeResult, ScrapePageParams, ScrapePageResult
from sandbox_image.dispatcher import Dispatcher

if TYPE_CHECKING:
    from sandbox_image.browser.service import BrowserService
    from sandbox_image.scrape.service import ScrapeService

ENGINE = "sandbox_image.scrape.service"


def register(dispatcher: Dispatcher, browser: BrowserService) -> None:
    """Serve scrape.page and browser.scrape; the engine is imported (in a worker thread, so the event loop
    keeps serving) and built on the first call of either, once."""
    service: ScrapeService | None = None
    loading = asyncio.Lock()

    async def engine() -> ScrapeService:
        nonlocal service
        if service is None:
            async with loading:
                if service is None:
                    module = await asyncio.to_thread(importlib.import_module, ENGINE)
                    service = module.ScrapeService(browser)
        assert service is not None
        return service

    async def scrape(params: ScrapePageParams, deadline: Deadline) -> ScrapePageResult:
        return await (await engine()).scrape(params, deadline)

    async def scrape_tab(params: BrowserScrapeParams, deadline: Deadline) -> BrowserScrapeResult:
        return await (await engine()).scrape_tab(params, deadline)

    dispatcher.register(methods.SCRAPE_PAGE, scrape)
    dispatcher.register(methods.BROWSER_SCRAPE, scrape_tab)
