"""The scrape engine (scrape.page). `register` serves the method without loading the engine: lxml, the
extractors and the markdown converter (~10 MiB of the agent's memory, measured in the image) are
imported on the first scrape, so a sandbox that never scrapes never pays for them (issue 12, density).
"""

from __future__ import annotations

import asyncio
import importlib
from typing import TYPE_CHECKING

from rpc import methods
from rpc.deadline import Deadline
from rpc.models.scrape import ScrapePageParams, ScrapePageResult
from sandbox_image.dispatcher import Dispatcher

if TYPE_CHECKING:
    from sandbox_image.browser.service import BrowserService
    from sandbox_image.scrape.service import ScrapeService

ENGINE = "sandbox_image.scrape.service"


def register(dispatcher: Dispatcher, browser: BrowserService) -> None:
    """Serve scrape.page; the engine is imported (in a worker thread, so the event loop keeps serving)
    and built on the first call, once."""
    service: ScrapeService | None = None
    loading = asyncio.Lock()

    async def scrape(params: ScrapePageParams, deadline: Deadline) -> ScrapePageResult:
        nonlocal service
        if service is None:
            async with loading:
                if service is None:
                    engine = await asyncio.to_thread(importlib.import_module, ENGINE)
                    service = engine.ScrapeService(browser)
        return await service.scrape(params, deadline)

    dispatcher.register(methods.SCRAPE_PAGE, scrape)
