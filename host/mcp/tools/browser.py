"""Browser tools: one Chromium per sandbox, tabs, and element refs (sessions, which may come from a login
profile, and the live view are in host/mcp/tools/profiles)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from mcp.types import ToolAnnotations

from host.mcp.caller import require_local
from host.mcp.forward import forward_tool
from host.mcp.registry import Invocation, ToolOutput, ToolSpec
from host.mcp.results import image
from host.mcp.tools.scrape import read_summary
from host.sandboxes.manager import SandboxManager
from rpc import methods
from rpc.methods import Method, P, R
from rpc.models import browser as b


def _screenshot_present(out: ToolOutput) -> ToolOutput:
    """The PNG goes out as MCP image content; the structured result is the rest (ScreenshotInfo)."""
    shot = out.result
    assert isinstance(shot, b.ScreenshotResult)
    info = b.ScreenshotInfo.model_validate(shot.model_dump(exclude={"data"}))
    return replace(out, result=info, extra=[image(shot.data, shot.mimeType)])


def _local_only(inv: Invocation[Any]) -> None:
    require_local(inv.caller, "browser_evaluate")


def _page(r: b.TabResult) -> str:
    return f"{r.url} ({r.title})" if r.title else r.url


# A 401 page is shown like any other; what gets past it is not on it.
SIGN_IN_NOTE = (
    " — the site wants a sign-in: log in on the page, or for an HTTP password prompt open a session with "
    "browser_sessions create and httpAuth {username, password, origin}"
)


def _opened(_p: b.GotoParams, r: b.GotoResult) -> str:
    if not r.status:
        return _page(r)
    return f"{_page(r)} [{r.status}]" + (SIGN_IN_NOTE if r.status == 401 else "")


def _action(verb: str) -> Callable[[b.ElementParams | b.PressKeyParams, b.ActionResult], str]:
    def summary(p: b.ElementParams | b.PressKeyParams, r: b.ActionResult) -> str:
        target = p.selector or (p.key if isinstance(p, b.PressKeyParams) else "")
        nav = "; navigated, refs from before are stale" if r.navigated else ""
        return f"{verb} {target} on {r.tabId}{nav}"

    return summary


READ = ToolAnnotations(read_only_hint=True, open_world_hint=True)
ACT = ToolAnnotations(destructive_hint=False, open_world_hint=True)


def tools(manager: SandboxManager) -> list[ToolSpec[Any]]:
    def fwd(
        method: Method[P, R],
        description: str,
        summary: Callable[[P, R], str],
        annotations: ToolAnnotations,
        **kw: Any,
    ) -> ToolSpec[Any]:
        return forward_tool(manager, method, description=description, summary=summary, annotations=annotations, **kw)

    return [
        fwd(
            methods.BROWSER_GOTO,
            "Open a URL in the sandbox's browser (active tab, or tabId). Returns the final url, title and HTTP "
            "status. Refs from earlier snapshots of that tab become stale.",
            _opened,
            ACT,
        ),
        fwd(
            methods.BROWSER_SNAPSHOT,
            "Read the page: visible text plus interactive elements, one per line like "
            '`[ref_12] button "Sign in"`. Pass a ref as `selector` to click/type/hover/select. '
            "Use maxTextLen/maxElements to bound the size; `truncated` says when something was cut.",
            lambda p, r: f"{_page(r)}, {r.elementCount} elements" + (" (truncated)" if r.truncated else ""),
            READ,
        ),
        fwd(
            methods.BROWSER_CLICK,
            "Click an element by ref (from browser_snapshot) or CSS selector.",
            _action("clicked"),
            ACT,
        ),
        fwd(
            methods.BROWSER_TYPE,
            "Type text into an input by ref or CSS selector; clear=true replaces its content, submit=true "
            "presses Enter afterwards.",
            _action("typed into"),
            ACT,
        ),
        fwd(
            methods.BROWSER_PRESS_KEY,
            "Press a key or chord (e.g. 'Enter', 'Escape', 'Control+A'), optionally on a focused element.",
            _action("pressed"),
            ACT,
        ),
        fwd(
            methods.BROWSER_HOVER,
            "Move the mouse over an element (menus, tooltips).",
            _action("hovered"),
            ACT,
        ),
        fwd(
            methods.BROWSER_SELECT_OPTION,
            "Choose options of a <select> by value or label.",
            lambda p, r: f"selected {r.selected} on {r.tabId}",
            ACT,
        ),
        fwd(
            methods.BROWSER_SCROLL,
            "Scroll the page (direction/amount, default one screen down) or scroll an element into view.",
            lambda p, r: f"at {r.scrollX},{r.scrollY}" + (" (bottom)" if r.atBottom else ""),
            ACT,
        ),
        fwd(
            methods.BROWSER_SCREENSHOT,
            "Take a PNG screenshot of the viewport, the full page or one element; returned as image content.",
            lambda p, r: f"{r.width}x{r.height} PNG of {_page(r)}",
            READ,
            present=_screenshot_present,
            output=b.ScreenshotInfo,
        ),
        fwd(
            methods.BROWSER_WAIT_FOR_STABLE,
            "Wait until the page is quiet (no DOM changes and no pending requests for quietMs), up to timeoutMs.",
            lambda p, r: ("stable" if r.stable else "not stable") + f" after {r.elapsedMs} ms on {r.tabId}",
            READ,
        ),
        fwd(
            methods.BROWSER_PAGE_INFO,
            "Semantic overview of the page: type (login, search, form, article, listing…), summary, "
            "interactive elements with refs, landmark regions and what the page invites you to do.",
            lambda p, r: f"{r.page.type} page {r.page.url}, {r.totalElements} elements",
            READ,
        ),
        fwd(
            methods.BROWSER_PAGE_CONTENT,
            "The page's main text as sections split at headings, capped at maxLength. For the page as markdown "
            "(the main content chosen, with its tables, code and links), use browser_scrape.",
            lambda p, r: f"{_page(r)}, {len(r.sections)} sections" + (" (truncated)" if r.truncated else ""),
            READ,
        ),
        fwd(
            methods.BROWSER_SCRAPE,
            "Read the page this tab shows now as scrape reads a page — after your clicks, typing, 'load more' "
            "or login, without loading it again: markdown (default: the main content; onlyMainContent=false for "
            "the whole page), html or links (absolute, deduplicated, in page order), plus the page's metadata. "
            "Takes scrape's reading options: includeTags/excludeTags (CSS selectors), includeIframes, maxChars "
            "and offset (nextOffset reads on). No wait: call browser_wait_for_stable first if the page is still "
            "loading. The page is not changed.",
            lambda p, r: f"{_page(r)}: {read_summary(r.format, r)}",
            READ,
        ),
        fwd(
            methods.BROWSER_TABS,
            "List, open (new), close or select tabs. Other tools act on the active tab unless given a tabId.",
            lambda p, r: f"{p.action}: {len(r.tabs)} tabs, active {r.activeTabId}",
            ACT,
        ),
        fwd(
            methods.BROWSER_BACK,
            "Go back in the tab's history.",
            lambda p, r: _page(r) if r.navigated else "no earlier page",
            ACT,
        ),
        fwd(
            methods.BROWSER_FORWARD,
            "Go forward in the tab's history.",
            lambda p, r: _page(r) if r.navigated else "no later page",
            ACT,
        ),
        fwd(
            methods.BROWSER_HANDLE_DIALOG,
            "Accept or dismiss the JavaScript dialog (alert/confirm/prompt) open on a tab.",
            lambda p, r: f"{'accepted' if p.accept else 'dismissed'} {r.handled.type} on {r.tabId}",
            ACT,
        ),
        fwd(
            methods.BROWSER_EVALUATE,
            "Run JavaScript in the page and return its JSON result. Local (stdio) callers only.",
            lambda p, r: f"{r.type} result on {r.tabId}",
            ToolAnnotations(destructive_hint=True, open_world_hint=True),
            guard=_local_only,
        ),
        fwd(
            methods.BROWSER_CONSOLE,
            "Recent console messages and failed network requests of a tab.",
            lambda p, r: f"{len(r.messages)} messages, {len(r.failedRequests)} failed requests on {r.tabId}",
            READ,
        ),
    ]
