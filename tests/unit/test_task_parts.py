"""The run machinery without a browser: a scripted template through the real TaskService (queue, long-poll,
cancel, deadline, retry, crash), the 50 % rule, the sliding window, inline results and artifact chunks."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.tasks import (
    MAX_ARTIFACT_INLINE_BYTES,
    MAX_CONCURRENT_RUNS,
    ResultSummary,
    TaskArtifactReadParams,
    TaskCancelParams,
    TaskStartParams,
    TaskStatus,
    TaskStatusParams,
)
from rpc.models.templates import BatchExtractInputs, TemplateOutput
from rpc.templates import BATCH_EXTRACT_PAGES, MULTI_TAB_COMPARE, TemplateSpec
from sandbox_image.browser import BrowserService
from sandbox_image.config import SandboxSettings
from sandbox_image.tasks.artifacts import json_artifact
from sandbox_image.tasks.context import RunContext
from sandbox_image.tasks.executor import ActionError
from sandbox_image.tasks.service import TaskService
from sandbox_image.tasks.templates.base import RETRY_ON, Template
from sandbox_image.tasks.verdict import decide
from sandbox_image.tasks.window import sliding_window

DEADLINE = Deadline.after(3600)
URL = "https://example.com/"


class Out(TemplateOutput):
    items: list[dict[str, Any]]


Script = Callable[[int, int], Awaitable[str]]  # (step index, attempt) -> value


def scripted(script: Script, steps: int = 3) -> Template:
    """A template whose steps run `script`, one at a time, in order."""

    def plan(_inputs: Any) -> list[str]:
        return [f"s{i}" for i in range(steps)]

    async def execute(ctx: RunContext[Any]) -> None:
        for step in ctx.run.steps:
            attempts = 0

            async def body(index: int = step.index) -> str:
                nonlocal attempts
                attempts += 1
                return await script(index, attempts)

            value = await ctx.executor.execute(step, body, retry_on=RETRY_ON)
            if value is not None:
                ctx.values[step.index] = value

    def output(ctx: RunContext[Any]) -> Out:
        steps = ctx.run.steps
        items = [{"step": s.name, "status": s.status, "errorCode": s.error.code.value if s.error else None}
                 for s in steps if s.status != "pending"]  # fmt: skip
        return Out(
            summary=ResultSummary(
                total=len(steps),
                succeeded=sum(s.status == "succeeded" for s in steps),
                failed=sum(s.status == "failed" for s in steps),
                skipped=sum(s.status == "skipped" for s in steps),
            ),
            items=items,
        )

    return Template(spec=BATCH_EXTRACT_PAGES, plan=plan, execute=execute, output=output)


def service_with(template: Template) -> TaskService:
    # No tab is ever opened here, so no Chromium is launched.
    browser = BrowserService(SandboxSettings(chromium="/nonexistent/chromium"))
    return TaskService(browser, templates={"batch_extract_pages": template})


async def start(service: TaskService, **params: Any) -> TaskStatus:
    return await service.start(
        TaskStartParams(templateId="batch_extract_pages", inputs={"urls": [URL]}, **params), DEADLINE
    )


async def wait_end(service: TaskService, run_id: str) -> TaskStatus:
    status = await service.status(TaskStatusParams(runId=run_id), DEADLINE)
    while status.status in ("queued", "running"):
        params = TaskStatusParams(runId=run_id, waitMs=5000, afterVersion=status.version, includeSteps=True)
        status = await service.status(params, DEADLINE)
    return await service.status(TaskStatusParams(runId=run_id, includeSteps=True), DEADLINE)


async def test_sixth_run_waits_and_a_queued_cancel_ends_it_at_once() -> None:
    gate = asyncio.Event()

    async def script(_index: int, _attempt: int) -> str:
        await gate.wait()
        return "ok"

    service = service_with(scripted(script, steps=1))
    running = [await start(service) for _ in range(MAX_CONCURRENT_RUNS)]
    sixth = await start(service)
    seventh = await start(service)
    await asyncio.sleep(0.05)
    states = [(await service.status(TaskStatusParams(runId=r.runId), DEADLINE)).status for r in running]
    assert states == ["running"] * MAX_CONCURRENT_RUNS
    assert (await service.status(TaskStatusParams(runId=sixth.runId), DEADLINE)).status == "queued"

    canceled = await service.cancel(TaskCancelParams(runId=seventh.runId), DEADLINE)
    assert canceled.cancelRequested and canceled.currentStatus == "canceled"
    ended = await wait_end(service, seventh.runId)
    assert ended.steps is not None and [s.status for s in ended.steps] == ["skipped"]
    assert ended.metrics.elapsedMs == 0 and ended.error is not None and ended.error.errorCode == "RUN_CANCELED"
    # The sixth starts as soon as one of the five ends.
    gate.set()
    assert (await wait_end(service, sixth.runId)).status == "succeeded"
    for r in running:
        assert (await wait_end(service, r.runId)).status == "succeeded"
    # Sessions the runs created are closed again.
    assert service.browser.sessions.sessions == {}


async def test_long_poll_cancel_between_steps_and_retry() -> None:
    gates = [asyncio.Event() for _ in range(4)]

    async def script(index: int, attempt: int) -> str:
        if index == 1 and attempt == 1:
            raise ActionError("navigate", BoxwrightError(ErrorCode.NAVIGATION_TIMEOUT, "slow"))
        await gates[index].wait()
        return f"v{index}"

    service = service_with(scripted(script, steps=4))
    run = await start(service, runId="run_poll")
    first = await service.status(TaskStatusParams(runId="run_poll", includeSteps=True), DEADLINE)
    while first.steps is None or first.steps[0].status != "running":  # queued → running → step 0 running
        params = TaskStatusParams(runId="run_poll", waitMs=5000, afterVersion=first.version, includeSteps=True)
        first = await service.status(params, DEADLINE)
    waiter = asyncio.create_task(
        service.status(TaskStatusParams(runId="run_poll", waitMs=10_000, afterVersion=first.version), DEADLINE)
    )
    await asyncio.sleep(0.05)
    assert not waiter.done()  # nothing changed yet: the long-poll waits
    gates[0].set()
    changed = await waiter
    assert changed.version > first.version and changed.progress.doneSteps >= 1
    # Step 1 failed once with NAVIGATION_TIMEOUT and is being retried; cancel while it runs.
    await asyncio.sleep(0.05)
    cancel = await service.cancel(TaskCancelParams(runId=run.runId), DEADLINE)
    assert cancel.cancelRequested and cancel.currentStatus == "running"
    gates[1].set()  # the current step finishes…
    ended = await wait_end(service, run.runId)
    assert ended.status == "canceled"
    assert ended.steps is not None
    assert [(s.status, s.attempts) for s in ended.steps] == [("succeeded", 1), ("succeeded", 2), ("skipped", 0),
                                                            ("skipped", 0)]  # fmt: skip
    assert ended.result is not None and ended.result.summary.skipped == 2  # …and the partial result is readable


async def test_deadline_and_crash() -> None:
    async def slow(index: int, _attempt: int) -> str:
        await asyncio.sleep(0.2 if index == 0 else 30)
        return "ok"

    service = service_with(scripted(slow, steps=3))
    run = await start(service, runTimeoutMs=1000)
    ended = await wait_end(service, run.runId)
    assert ended.status == "failed" and ended.error is not None and ended.error.errorCode == "RUN_TIMEOUT"
    assert ended.steps is not None
    assert [(s.status, s.errorCode) for s in ended.steps] == [("succeeded", None), ("failed", "RUN_TIMEOUT"),
                                                             ("failed", "RUN_TIMEOUT")]  # fmt: skip
    assert ended.metrics.elapsedMs < 5000

    async def broken(_index: int, _attempt: int) -> str:
        raise KeyError("a bug")

    service = service_with(scripted(broken, steps=2))
    ended = await wait_end(service, (await start(service)).runId)
    assert ended.status == "failed" and ended.error is not None
    assert ended.error.errorCode == "STEP_EXECUTION_FAILED"
    assert ended.error.details["stepErrorCode"] == "INTERNAL_ERROR" and "a bug" not in ended.error.error


async def test_large_results_are_inlined_short_and_read_in_chunks() -> None:
    big = "x" * 40_000

    async def script(index: int, _attempt: int) -> str:
        return big

    template = scripted(script, steps=40)
    base_output = template.output

    def output(ctx: RunContext[Any]) -> TemplateOutput:
        out = base_output(ctx)
        assert isinstance(out, Out)
        for item in out.items:
            item["content"] = big  # ~1.6 MB in all: the heavy field dropped first when inlining
        return out

    service = service_with(Template(spec=template.spec, plan=template.plan, execute=template.execute, output=output))
    ended = await wait_end(service, (await start(service)).runId)
    assert ended.result is not None and ended.result.truncated and ended.artifacts
    inline = ended.result.model_dump_json()
    assert len(inline) <= MAX_ARTIFACT_INLINE_BYTES and len(ended.result.items) == 40
    assert all("content" not in item for item in ended.result.items)
    artifact = ended.artifacts[0]
    assert ended.result.artifactId == artifact.artifactId and artifact.size > 1_048_576
    data, offset, chunks = b"", 0, 0
    while True:
        params = TaskArtifactReadParams(runId=ended.runId, artifactId=artifact.artifactId, offset=offset)
        chunk = await service.artifact_read(params, DEADLINE)
        data += base64.b64decode(chunk.data)
        offset += chunk.bytesReturned or 0
        chunks += 1
        if chunk.complete:
            break
    assert chunks == 2 and len(data) == artifact.size
    assert [i["content"] for i in json.loads(data)["items"]] == [big] * 40
    with pytest.raises(BoxwrightError) as past:
        await service.artifact_read(params.model_copy(update={"offset": artifact.size + 1}), DEADLINE)
    assert past.value.code is ErrorCode.INVALID_PARAMETER
    with pytest.raises(BoxwrightError) as missing:
        await service.artifact_read(params.model_copy(update={"artifactId": "art_nope"}), DEADLINE)
    assert missing.value.code is ErrorCode.ARTIFACT_NOT_FOUND


def test_inline_result_keeps_leading_items_when_even_light_items_do_not_fit() -> None:
    from sandbox_image.tasks.artifacts import inline_result

    items = [{"url": f"https://example.com/{i}", "title": "t" * 500, "success": True} for i in range(1000)]
    full = {"summary": {"total": 1000, "succeeded": 1000, "failed": 0}, "items": items}
    result = inline_result(full, "art_1")
    assert result.truncated and 0 < len(result.items) < 1000
    assert result.items == items[: len(result.items)]
    assert getattr(result, "itemsOmitted") == 1000 - len(result.items)  # noqa: B009
    assert len(result.model_dump_json()) <= MAX_ARTIFACT_INLINE_BYTES
    assert json_artifact("r.json", full).read(0, 10).bytesReturned == 10


@pytest.mark.parametrize(
    ("spec", "counts", "canceled", "expected"),
    [
        (BATCH_EXTRACT_PAGES, (12, 12), False, "succeeded"),
        (BATCH_EXTRACT_PAGES, (12, 8), False, "partial_success"),
        (BATCH_EXTRACT_PAGES, (12, 6), False, "partial_success"),  # exactly 50 %
        (BATCH_EXTRACT_PAGES, (12, 5), False, "failed"),
        (BATCH_EXTRACT_PAGES, (12, 12), True, "canceled"),
        (MULTI_TAB_COMPARE, (3, 2), False, "partial_success"),
    ],
)
def test_the_fifty_percent_rule(spec: TemplateSpec, counts: tuple[int, int], canceled: bool, expected: str) -> None:
    total, ok = counts
    summary = ResultSummary(total=total, succeeded=ok, failed=total - ok)
    assert decide(spec, summary, canceled=canceled) == expected
    atomic = TemplateSpec("x", "1.0.0", "x", "x", BatchExtractInputs, Out, {}, supports_partial_success=False)
    if ok < total and not canceled:
        assert decide(atomic, summary, canceled=False) == "failed"  # login_keep_session: never partial


async def test_sliding_window_order_and_size() -> None:
    started: list[int] = []
    active = peak = 0

    async def work(index: int) -> None:
        nonlocal active, peak
        started.append(index)
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01 * (index % 3))
        active -= 1

    await sliding_window(10, 3, work, lambda: True)
    assert started == list(range(10)) and peak == 3
    started.clear()
    await sliding_window(10, 2, work, lambda: len(started) < 4)
    assert started == [0, 1, 2, 3]


def test_a_cancel_after_every_step_ended_is_not_taken() -> None:
    """A cancel landing after the last step ended (the result being put together) turned a run that did
    everything into `canceled`; there is nothing left to cancel then."""
    from sandbox_image.tasks.runs import Run

    run = Run("run_x", BATCH_EXTRACT_PAGES, None, 60_000, "local", "s", True, ["a", "b"])
    run.begin()
    run.steps[0].status = "succeeded"
    run.steps[1].status = "running"
    assert run.request_cancel() and run.cancel_requested  # a step is still going: taken
    late = Run("run_y", BATCH_EXTRACT_PAGES, None, 60_000, "local", "s", True, ["a", "b"])
    late.begin()
    late.steps[0].status, late.steps[1].status = "succeeded", "failed"
    assert not late.request_cancel() and not late.cancel_requested


def test_inline_result_bounds_what_a_template_adds_beside_its_items() -> None:
    """multi_tab_compare's comparison was never cut: a 3.8 MB "inline" result made get_task_run answer
    PAYLOAD_TOO_LARGE for ever. The bound holds whatever the result's shape."""
    from sandbox_image.tasks.artifacts import inline_result

    summary = {"total": 3, "succeeded": 3, "failed": 0, "skipped": 0}
    items = [{"url": f"http://127.0.0.1/{i}", "success": True, "content": "c" * 1000} for i in range(3)]
    pages = [{"url": f"http://127.0.0.1/{i}", "headings": ["h" * 20_000] * 200} for i in range(3)]
    huge = inline_result({"summary": summary, "items": items, "comparison": {"pages": pages}}, "art_1")
    assert huge.truncated and huge.artifactId == "art_1" and len(huge.model_dump_json()) <= MAX_ARTIFACT_INLINE_BYTES
    kept = huge.model_dump()["comparison"]["pages"]  # shortened, not dropped, while that fits
    assert len(kept) == 3 and len(kept[0]["headings"]) == 20 and len(kept[0]["headings"][0]) == 501
    assert [i["url"] for i in huge.items] == [i["url"] for i in items] and "content" not in huge.items[0]

    wide = [{"url": f"u{i}", "values": [f"{i}-{j}" * 50 for j in range(20)]} for i in range(5000)]
    dropped = inline_result({"summary": summary, "items": items, "comparison": {"pages": [wide] * 20}}, "art_2")
    assert dropped.model_dump()["fieldsOmitted"] == ["comparison"] and "comparison" not in dropped.model_dump()
    assert len(dropped.model_dump_json()) <= MAX_ARTIFACT_INLINE_BYTES and len(dropped.items) == 3

    small = {"summary": summary, "items": items, "comparison": {"sameTitle": True}}
    assert inline_result(small, "art_3").model_dump(exclude_none=True) == {
        **small,
        "truncated": False,
        "artifactId": "art_3",
    }


@pytest.mark.parametrize(
    ("cell", "written"),
    [
        ('=HYPERLINK("http://x","y")', '\'=HYPERLINK("http://x","y")'),
        ("+1+1", "'+1+1"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("Plain title", "Plain title"),
        ("a=b", "a=b"),
        (42, "42"),
        (None, ""),
    ],
)
def test_a_csv_cell_a_spreadsheet_would_run_is_quoted(cell: object, written: str) -> None:
    import csv
    import io

    from sandbox_image.tasks.artifacts import csv_artifact

    artifact = csv_artifact("items.csv", ["title"], [[cell]])
    rows = list(csv.reader(io.StringIO(artifact.data.decode())))
    assert rows == [["title"], [written]]


def test_a_comparison_value_is_cut_at_its_source() -> None:
    from rpc.models.browser import ContentSection
    from sandbox_image.tasks.comparison import MAX_VALUE_CHARS, compare, page_facts

    sections = [ContentSection(heading="H" * 100_000, text="price $5")]
    facts = [page_facts(f"http://127.0.0.1/{i}", "t", sections) for i in range(2)]
    assert len(facts[0].headings[0]) == MAX_VALUE_CHARS
    assert compare(facts).sharedHeadings == ["H" * MAX_VALUE_CHARS]


async def test_finished_runs_artifacts_are_held_in_bounded_memory() -> None:
    """A finished run was kept an hour with its artifacts (a batch of big pages: a 40 MB result.json), so a
    few such runs in a long-lived sandbox ran it out of memory. Past the bytes cap the oldest go, but none
    before the host has had time to copy them — and without waiting for another call."""
    from sandbox_image.tasks.runs import Outcome, Run, RunRegistry

    registry = RunRegistry(max_finished_bytes=100, min_keep_s=0.2)

    def finished(run_id: str, size: int) -> Run:
        run = Run(run_id, BATCH_EXTRACT_PAGES, None, 60_000, "local", "s", True, [])
        registry.add(run)
        run.finish(Outcome("succeeded", None, None, [json_artifact("result.json", "x" * size)]))
        registry.evict()
        return run

    finished("run_old", 60)
    await asyncio.sleep(0.3)
    finished("run_new", 60)  # 120 bytes held: the old one goes, it was copied long ago
    assert [r.id for r in registry.all()] == ["run_new"]
    finished("run_newer", 60)  # over again, but run_new is too new to go yet
    assert [r.id for r in registry.all()] == ["run_new", "run_newer"]
    await asyncio.sleep(1.5)  # the registry looks again by itself, no call needed
    assert registry.find("run_new") is None and registry.find("run_newer") is not None
