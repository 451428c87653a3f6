"""browser.handle_dialog and browser.console: answering JS dialogs, reading what the page logged."""

from __future__ import annotations

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.browser import ConsoleParams, ConsoleResult, HandleDialogParams, HandleDialogResult
from sandbox_image.browser.background import quietly
from sandbox_image.browser.tab import Tab
from sandbox_image.browser.timeouts import Budget


async def handle_dialog(tab: Tab, params: HandleDialogParams, _budget: Budget) -> HandleDialogResult:
    """Accept or dismiss the oldest open dialog (prompt text only applies to prompts)."""
    tab.check(dialogs_ok=True)
    if not tab.dialogs:
        raise BoxwrightError(
            ErrorCode.EXECUTION_ERROR,
            f"no dialog is open on {tab.id}",
            hint="nothing to answer; dialogs show up as DIALOG_PENDING errors and in browser_page_info",
            details={"tabId": tab.id},
        )
    pending = tab.dialogs.popleft()
    tab.dialog_handled()
    # The dialog may already be gone (its page navigated); answering it is then a no-op.
    if params.accept:
        prompt = params.promptText if pending.info.type == "prompt" else None
        await quietly(pending.dialog.accept(prompt) if prompt is not None else pending.dialog.accept())
    else:
        await quietly(pending.dialog.dismiss())
    return HandleDialogResult(tabId=tab.id, handled=pending.info)


async def console(tab: Tab, params: ConsoleParams, _budget: Budget) -> ConsoleResult:
    """The most recent console messages and failed requests, oldest first; `clear` forgets those returned."""
    tab.check(dialogs_ok=True)
    messages = list(tab.console)[-params.limit :]
    failed = list(tab.failed_requests)[-params.limit :]
    if params.clear:
        for _ in messages:
            tab.console.pop()
        for _ in failed:
            tab.failed_requests.pop()
    return ConsoleResult(tabId=tab.id, messages=messages, failedRequests=failed)
