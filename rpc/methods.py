"""Every RPC method: its name and its params/result models. Both sides dispatch on this table."""

from __future__ import annotations

from rpc.method import Method
from rpc.method import P as P  # re-exported: callers type against the table's module
from rpc.method import R as R
from rpc.models import browser as b
from rpc.models import files as f
from rpc.models import profiles as pr
from rpc.models import tasks as t
from rpc.models.sandbox import (
    SandboxActivityParams,
    SandboxActivityResult,
    SandboxClaimParams,
    SandboxClaimResult,
    SandboxExtendParams,
    SandboxExtendResult,
    SandboxInfoParams,
    SandboxInfoResult,
)
from rpc.models.scrape import BrowserScrapeParams, BrowserScrapeResult, ScrapePageParams, ScrapePageResult
from rpc.runner_methods import CODE_RUN, PROCESS_KILL, PROCESS_LIST, PROCESS_OUTPUT
from rpc.runner_methods import RUNNER_METHODS as RUNNER_METHODS

SANDBOX_INFO = Method("sandbox.info", SandboxInfoParams, SandboxInfoResult, 5_000)
# Once, on a sandbox started for the warm pool, authenticated with the pool's token (host.sandboxes.pool).
SANDBOX_CLAIM = Method("sandbox.claim", SandboxClaimParams, SandboxClaimResult, 5_000)
# What keeps a sandbox busy though nobody called it lately (host.sandboxes.activity asks before idling it).
# A new expiry for the agent's own end (sandbox_image.lifetime), when the host extends a sandbox's TTL.
SANDBOX_EXTEND = Method("sandbox.extend", SandboxExtendParams, SandboxExtendResult, 5_000)
SANDBOX_ACTIVITY = Method("sandbox.activity", SandboxActivityParams, SandboxActivityResult, 5_000)
# code.run and process.* are the code runner's (rpc.runner_methods).
FILE_READ = Method("file.read", f.FileReadParams, f.FileReadResult)
FILE_WRITE = Method("file.write", f.FileWriteParams, f.FileWriteResult)
FILE_LIST = Method("file.list", f.FileListParams, f.FileListResult)
FILE_DELETE = Method("file.delete", f.FileDeleteParams, f.FileDeleteResult)

# Browser. Budgets come from each call's timeoutMs where it has one.
BROWSER_GOTO = Method("browser.goto", b.GotoParams, b.GotoResult)
BROWSER_BACK = Method("browser.back", b.HistoryParams, b.HistoryResult)
BROWSER_FORWARD = Method("browser.forward", b.HistoryParams, b.HistoryResult)
BROWSER_CLICK = Method("browser.click", b.ClickParams, b.ActionResult)
BROWSER_TYPE = Method("browser.type", b.TypeParams, b.ActionResult)
BROWSER_PRESS_KEY = Method("browser.press_key", b.PressKeyParams, b.ActionResult)
BROWSER_HOVER = Method("browser.hover", b.HoverParams, b.ActionResult)
BROWSER_SELECT_OPTION = Method("browser.select_option", b.SelectOptionParams, b.SelectOptionResult)
BROWSER_SCROLL = Method("browser.scroll", b.ScrollParams, b.ScrollResult)
BROWSER_SNAPSHOT = Method("browser.snapshot", b.SnapshotParams, b.SnapshotResult)
BROWSER_SCREENSHOT = Method("browser.screenshot", b.ScreenshotParams, b.ScreenshotResult)
BROWSER_WAIT_FOR_STABLE = Method("browser.wait_for_stable", b.WaitForStableParams, b.StabilityResult)
BROWSER_PAGE_INFO = Method("browser.page_info", b.PageInfoParams, b.PageInfoResult)
BROWSER_PAGE_CONTENT = Method("browser.page_content", b.PageContentParams, b.PageContentResult)
# The page a tab shows now, read as scrape reads a page (served by sandbox_image.scrape, on the tab's lock).
BROWSER_SCRAPE = Method("browser.scrape", BrowserScrapeParams, BrowserScrapeResult)
BROWSER_TABS = Method("browser.tabs", b.TabsParams, b.TabsResult)
BROWSER_SESSIONS = Method("browser.sessions", b.SessionsParams, b.SessionsResult, 15_000)
BROWSER_HANDLE_DIALOG = Method("browser.handle_dialog", b.HandleDialogParams, b.HandleDialogResult, 10_000)
BROWSER_EVALUATE = Method("browser.evaluate", b.EvaluateParams, b.EvaluateResult)
BROWSER_CONSOLE = Method("browser.console", b.ConsoleParams, b.ConsoleResult, 10_000)

# Login profiles (host/profiles): a session opened from a storageState, and its export. Not MCP tools:
# the state holds cookie values.
BROWSER_STATE_LOAD = Method("browser.state_load", pr.StateLoadParams, pr.StateLoadResult, 15_000)
BROWSER_STATE_EXPORT = Method("browser.state_export", pr.StateExportParams, pr.StateExportResult, 15_000)

PROFILES: tuple[Method, ...] = (BROWSER_STATE_LOAD, BROWSER_STATE_EXPORT)

BROWSER: tuple[Method, ...] = (
    BROWSER_GOTO,
    BROWSER_BACK,
    BROWSER_FORWARD,
    BROWSER_CLICK,
    BROWSER_TYPE,
    BROWSER_PRESS_KEY,
    BROWSER_HOVER,
    BROWSER_SELECT_OPTION,
    BROWSER_SCROLL,
    BROWSER_SNAPSHOT,
    BROWSER_SCREENSHOT,
    BROWSER_WAIT_FOR_STABLE,
    BROWSER_PAGE_INFO,
    BROWSER_PAGE_CONTENT,
    BROWSER_SCRAPE,
    BROWSER_TABS,
    BROWSER_SESSIONS,
    BROWSER_HANDLE_DIALOG,
    BROWSER_EVALUATE,
    BROWSER_CONSOLE,
)

# scrape (seed 004): one page, one format, in a browser context of its own. Its budget is timeoutMs + waitFor.
SCRAPE_PAGE = Method("scrape.page", ScrapePageParams, ScrapePageResult)

# Template runs (the host's RunManager drives them; seed 000). task.start returns at once; task.status
# long-polls (waitMs is added to its budget); artifacts move in chunks through task.artifact_read.
TASK_TEMPLATES = Method("task.templates", t.TaskTemplatesParams, t.ListTaskTemplatesResponse, 5_000)
TASK_START = Method("task.start", t.TaskStartParams, t.TaskStatus, 15_000)
TASK_STATUS = Method("task.status", t.TaskStatusParams, t.TaskStatus, 5_000)
TASK_CANCEL = Method("task.cancel", t.TaskCancelParams, t.CancelTaskRunResponse, 5_000)
TASK_LIST = Method("task.list", t.TaskListParams, t.TaskListResult, 5_000)
TASK_ARTIFACT_READ = Method("task.artifact_read", t.TaskArtifactReadParams, t.ArtifactChunk, 15_000)

TASKS: tuple[Method, ...] = (TASK_TEMPLATES, TASK_START, TASK_STATUS, TASK_CANCEL, TASK_LIST, TASK_ARTIFACT_READ)

ALL: tuple[Method, ...] = (
    SANDBOX_INFO,
    SANDBOX_CLAIM,
    SANDBOX_ACTIVITY,
    SANDBOX_EXTEND,
    CODE_RUN,
    PROCESS_LIST,
    PROCESS_OUTPUT,
    PROCESS_KILL,
    FILE_READ,
    FILE_WRITE,
    FILE_LIST,
    FILE_DELETE,
    *BROWSER,
    *PROFILES,
    *TASKS,
    SCRAPE_PAGE,
)
BY_NAME: dict[str, Method] = {m.name: m for m in ALL}
