"""batch_extract_pages (seed 001 §5): every URL in a tab of its own, a sliding window of them at a time.

Per URL: create tab → navigate → wait for stable → page info → page content (→ markdown, when asked:
the scrape engine on the tab, as browser_scrape) → close tab, one step;
NAVIGATION_TIMEOUT or PAGE_CRASHED gets one immediate retry in a fresh tab. Items keep input order.
"""

from __future__ import annotations

import time

from rpc.models.tasks import ResultSummary
from rpc.models.templates import (
    MAX_BATCH_CONCURRENCY,
    BatchExtractInputs,
    BatchExtractItem,
    BatchExtractOutput,
    TemplateOutput,
)
from rpc.templates import BATCH_EXTRACT_PAGES
from sandbox_image.browser.urls import redact
from sandbox_image.tasks.actions import RunBrowser
from sandbox_image.tasks.artifacts import Artifact, csv_artifact
from sandbox_image.tasks.context import RunContext
from sandbox_image.tasks.templates.base import RETRY_ON, Template, failed_item, result_json
from sandbox_image.tasks.window import sliding_window

CSV_COLUMNS = ["url", "success", "status", "httpStatus", "finalUrl", "title", "pageType", "elementCount",
               "contentLength", "errorCode", "failedStep", "error"]  # fmt: skip


def plan(inputs: BatchExtractInputs) -> list[str]:
    return [f"extract {redact(url)}" for url in inputs.urls]


async def extract_page(browser: RunBrowser, inputs: BatchExtractInputs, url: str) -> BatchExtractItem:
    started = time.monotonic()
    tab = await browser.open_tab()
    try:
        loaded = await browser.navigate(tab, url, inputs.navigationTimeoutMs)
        await browser.wait_for_stable(tab)
        item = BatchExtractItem(
            url=url, success=True, status="succeeded", finalUrl=loaded.url, httpStatus=loaded.status, title=loaded.title
        )
        if inputs.extract.pageInfo:
            info = await browser.page_info(tab, inputs.extract.maxElements)
            item.title = info.page.title or item.title
            item.pageType = info.page.type
            item.summary = info.page.summary
            item.elementCount = info.totalElements
            item.elements = info.elements
            item.intents = info.intents
        if inputs.extract.content:
            text = await browser.page_content(tab, inputs.extract.maxContentLength)
            item.title = item.title or text.title
            item.contentSections = len(text.sections)
            item.content = text.sections
            item.contentLength = text.totalLength
            item.contentTruncated = text.truncated
        if inputs.extract.markdown:
            read = await browser.markdown(tab, inputs.extract.maxContentLength)
            item.title = item.title or read.title
            item.markdown = read.markdown or ""
            item.markdownLength = read.totalChars if read.totalChars is not None else len(item.markdown)
            item.markdownTruncated = read.truncated
    finally:
        await browser.close_tab(tab)
    item.elapsedMs = int((time.monotonic() - started) * 1000)
    return item


async def execute(ctx: RunContext[BatchExtractInputs]) -> None:
    inputs = ctx.inputs
    window = min(inputs.concurrency, MAX_BATCH_CONCURRENCY, max(1, ctx.browser.tabs_left()))

    async def work(index: int) -> None:
        url = inputs.urls[index]
        step = ctx.run.steps[index]
        item = await ctx.executor.execute(step, lambda: extract_page(ctx.browser, inputs, url), retry_on=RETRY_ON)
        if item is not None:
            ctx.values[index] = item

    await sliding_window(len(inputs.urls), window, work, ctx.executor.may_start)


def output(ctx: RunContext[BatchExtractInputs]) -> BatchExtractOutput:
    items: list[BatchExtractItem] = []
    for index, url in enumerate(ctx.inputs.urls):
        step = ctx.run.steps[index]
        done: BatchExtractItem | None = ctx.values.get(index)
        if done is not None and step.status == "succeeded":
            items.append(done.model_copy(update={"attempts": step.attempts}))
        elif step.status in ("failed", "skipped"):
            items.append(failed_item(BatchExtractItem, url, step))
    return BatchExtractOutput(summary=summarize(items, len(ctx.inputs.urls)), items=items)


def summarize(items: list[BatchExtractItem], total: int) -> ResultSummary:
    return ResultSummary(
        total=total,
        succeeded=sum(1 for i in items if i.success),
        failed=sum(1 for i in items if i.status == "failed"),
        skipped=sum(1 for i in items if i.status == "skipped"),
    )


def artifacts(result: TemplateOutput) -> list[Artifact]:
    assert isinstance(result, BatchExtractOutput)
    rows = [
        [i.url, i.success, i.status, i.httpStatus, i.finalUrl, i.title, i.pageType, i.elementCount,
         i.contentLength, i.errorCode, i.failedStep, i.error]
        for i in result.items
    ]  # fmt: skip
    return [result_json(result), csv_artifact("items.csv", CSV_COLUMNS, rows)]


TEMPLATE = Template(spec=BATCH_EXTRACT_PAGES, plan=plan, execute=execute, output=output, artifacts=artifacts)
