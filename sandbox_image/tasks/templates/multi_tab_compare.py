"""multi_tab_compare: 2–10 URLs side by side in tabs of one session, read, then compared.

One step per URL (create tab → navigate → wait for stable → page info → page content; the tab stays
open beside the others until the comparison is made), then a "compare" step over the pages that
loaded. Partial success when at least half the pages load.
"""

from __future__ import annotations

from rpc.models.tasks import ResultSummary
from rpc.models.templates import CompareInputs, CompareItem, CompareOutput
from rpc.templates import MULTI_TAB_COMPARE
from sandbox_image.browser.tab import Tab
from sandbox_image.browser.urls import redact
from sandbox_image.tasks.comparison import compare, page_facts
from sandbox_image.tasks.context import RunContext
from sandbox_image.tasks.templates.base import RETRY_ON, Template, failed_item
from sandbox_image.tasks.window import sliding_window


def plan(inputs: CompareInputs) -> list[str]:
    return [f"open {redact(url)}" for url in inputs.urls] + ["compare"]


async def read_page(ctx: RunContext[CompareInputs], url: str, tabs: list[Tab]) -> CompareItem:
    browser, inputs = ctx.browser, ctx.inputs
    tab = await browser.open_tab()
    tabs.append(tab)
    try:
        loaded = await browser.navigate(tab, url, inputs.navigationTimeoutMs)
        await browser.wait_for_stable(tab)
        info = await browser.page_info(tab, inputs.maxElements)
        text = await browser.page_content(tab, inputs.maxContentLength)
    except BaseException:
        await browser.close_tab(tab)  # a retry gets a fresh tab; a failed page needs none
        raise
    facts = page_facts(url, info.page.title or text.title, text.sections)
    return CompareItem(
        url=url,
        success=True,
        status="succeeded",
        finalUrl=loaded.url,
        httpStatus=loaded.status,
        title=facts.title,
        pageType=info.page.type,
        summary=info.page.summary,
        elementCount=info.totalElements,
        elements=info.elements,
        content=text.sections,
        contentLength=text.totalLength,
        wordCount=facts.wordCount,
    )


async def execute(ctx: RunContext[CompareInputs]) -> None:
    urls = ctx.inputs.urls
    tabs: list[Tab] = []

    async def work(index: int) -> None:
        step = ctx.run.steps[index]
        item = await ctx.executor.execute(step, lambda: read_page(ctx, urls[index], tabs), retry_on=RETRY_ON)
        if item is not None:
            ctx.values[index] = item

    async def compare_pages() -> None:
        pages = [ctx.values[i] for i in sorted(ctx.values)]
        ctx.notes["comparison"] = compare([page_facts(p.url, p.title or "", p.content or []) for p in pages])

    try:
        await sliding_window(len(urls), len(urls), work, ctx.executor.may_start)
        if ctx.values:  # nothing to compare when no page loaded: the step stays pending, then skipped
            await ctx.executor.execute(ctx.run.steps[len(urls)], compare_pages)
    finally:
        for tab in tabs:
            await ctx.browser.close_tab(tab)


def output(ctx: RunContext[CompareInputs]) -> CompareOutput:
    items: list[CompareItem] = []
    for index, url in enumerate(ctx.inputs.urls):
        step = ctx.run.steps[index]
        done: CompareItem | None = ctx.values.get(index)
        if done is not None and step.status == "succeeded":
            items.append(done.model_copy(update={"attempts": step.attempts, "elapsedMs": step.elapsed_ms()}))
        elif step.status in ("failed", "skipped"):
            items.append(failed_item(CompareItem, url, step))
    summary = ResultSummary(
        total=len(ctx.inputs.urls),
        succeeded=sum(1 for i in items if i.success),
        failed=sum(1 for i in items if i.status == "failed"),
        skipped=sum(1 for i in items if i.status == "skipped"),
    )
    return CompareOutput(summary=summary, items=items, comparison=ctx.notes.get("comparison"))


TEMPLATE = Template(
    spec=MULTI_TAB_COMPARE,
    plan=plan,
    execute=execute,
    output=output,
    tabs_needed=lambda inputs: len(inputs.urls),
)
