"""scrape's actions: what a visitor does on the page before it is read — click, write, press, scroll, wait,
hover, select, script — done by the browser tools' own operations (sandbox_image/browser/interaction.py), on an
element found by CSS selector or as a reader finds it: by the text it shows (a button, a link), or a field
by its label or placeholder — what a caller who has read the page's markdown knows of it. Those are
Playwright's own getByText (whole text, visible elements) and getByLabel / getByPlaceholder.

Each action gets at most ACTION_TIMEOUT_S of what the call has left before its reading reserve, and the
page settles after it (network quiet and DOM stable for stability.AFTER_ACTION_QUIET_MS, at most
SETTLE_MAX_S), so the next one sees what the last one brought. `repeat` clicks a "Load more" button again
while it is shown, or scrolls an endless list again while the page still moves. An `optional` action whose
element is not shown is skipped at once (times 0) rather than waited for. A failure names the action:
`details.action` is its index.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.browser import (
    ClickParams,
    EvaluateParams,
    HoverParams,
    PressKeyParams,
    ScrollParams,
    SelectOptionParams,
    TypeParams,
)
from rpc.models.scrape import (
    MAX_CLICK_ALL,
    ActionDone,
    ClickAction,
    HoverAction,
    PressAction,
    ScrapeAction,
    ScriptAction,
    ScrollAction,
    SelectAction,
    WaitAction,
    WriteAction,
)
from sandbox_image.browser import interaction, scripting
from sandbox_image.browser.errors import PlaywrightError, PlaywrightTimeoutError
from sandbox_image.browser.locate import Target
from sandbox_image.browser.tab import Tab
from sandbox_image.browser.timeouts import Budget
from sandbox_image.browser.urls import redact
from sandbox_image.scrape import loading

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Locator, Page, Response

ACTION_TIMEOUT_S = 10.0
SETTLE_MAX_S = 5.0  # after an action: at most this long for the page to settle
# The budget's end this close: no action is started (it could not finish), the call says which was next.
MIN_ACTION_S = 0.3
HINT = (
    "check the selector against the page (scrape it with format html and onlyMainContent false to see its markup), "
    "add a wait action for an element that comes late, or mark the action optional"
)
COVERED_HINT = (
    "something covers the element (a popup, a cookie banner, a sticky header): click that away first with an "
    "optional action before this one, or pass blockCookieBanners"
)
DISABLED_HINT = "the element is disabled: an earlier action may have to enable it (fill in the form's fields first)"
AMBIGUOUS_HINT = (
    "name one element: a selector with an id, a :nth-of-type() or a parent's class, or a longer text; to click "
    "each of them, give the click all: true"
)
TIME_HINT = "raise timeoutMs: the actions, each page settling after them, run within it"

Settle = Callable[[Tab, float], Awaitable[bool]]


def _named(action: ScrapeAction) -> str | None:
    """The element as the action names it, for messages: its CSS selector, or `text 'Load more'`, `label 'Email'`
    (None: the action names none)."""
    selector = getattr(action, "selector", None)
    if selector is not None:
        return str(selector)
    if isinstance(action, (ClickAction, HoverAction, WaitAction)) and action.text is not None:
        return f"text {action.text!r}"
    if isinstance(action, (WriteAction, SelectAction)) and action.label is not None:
        return f"label {action.label!r}"
    return None


def describe(action: ScrapeAction) -> str:
    named = _named(action)
    shown = repr(named) if getattr(action, "selector", None) is not None else named
    if isinstance(action, ScriptAction):
        return "script"
    if isinstance(action, PressAction):
        return f"press {action.key}" + (f" on {shown}" if shown else "")
    if isinstance(action, WaitAction):
        return f"wait {action.milliseconds} ms" if action.milliseconds else f"wait for {shown}"
    if isinstance(action, ScrollAction) and not shown:
        return f"scroll {action.direction}"
    return f"{action.type} {shown}"


def _target(tab: Tab, action: ScrapeAction) -> Target | None:
    """The action's element when it is not named by a CSS selector; None: the operation locates it itself."""
    page, named = tab.check(), _named(action)
    if isinstance(action, (ClickAction, HoverAction, WaitAction)) and action.text is not None:
        locator = page.get_by_text(action.text, exact=True).filter(visible=True)
    elif isinstance(action, (WriteAction, SelectAction)) and action.label is not None:
        label = action.label
        locator = page.get_by_label(label, exact=True).or_(page.get_by_placeholder(label, exact=True))
    else:
        return None
    assert named is not None
    return Target(locator, named, tab.refs.epoch)


def _locator(tab: Tab, action: ScrapeAction) -> Locator:
    target = _target(tab, action)
    return target.locator if target is not None else tab.check().locator(f"css={_named(action)}")


async def _shown(tab: Tab, action: ScrapeAction) -> bool:
    """Some element the action names is on the page and visible now (no waiting)."""
    locator = _locator(tab, action)
    try:
        return await tab.guard(locator.filter(visible=True).count()) > 0
    except PlaywrightError:  # the document went away meanwhile: not shown
        return False


class Actions:
    """The call's actions, done in order on its tab within `budget` less `reserve_s` (kept for reading).

    A window an action opens (a link with target=_blank, window.open) is where a visitor goes on reading: the
    actions go on in it, and it is the page read (`tab` and `frame` are then its, with its first document's
    answer — the status — taken from the context's responses)."""

    def __init__(self, tab: Tab, budget: Budget, reserve_s: float, settle: Settle) -> None:
        self.tab, self.budget, self.reserve_s, self.settle = tab, budget, reserve_s, settle
        self.frame: loading.MainFrame | None = None  # the opened window's, once the actions went on in it
        self.navigated = self.opened = False
        self.value: Any = None  # what the last script action returned
        self._popups: list[tuple[Page, loading.MainFrame]] = []
        self._watched: Page | None = None
        self._context: BrowserContext | None = None
        self._first: dict[str, Response] = {}  # documents' answers, by address (a window's first among them)

    def _left(self) -> float:
        return self.budget.remaining() - self.reserve_s

    def _step(self, index: int, action: ScrapeAction) -> Budget:
        left = self._left()
        if left < MIN_ACTION_S:
            raise BoxwrightError(
                ErrorCode.OPERATION_TIMEOUT,
                f"no time left for action {index} ({describe(action)}) within the call's {self.budget.total_ms} ms",
                hint=TIME_HINT,
                details={"action": index, "type": action.type, "timeoutMs": self.budget.total_ms},
            )
        return Budget(Deadline.after(min(ACTION_TIMEOUT_S, left)).at)

    async def _settled(self) -> None:
        await self.settle(self.tab, min(SETTLE_MAX_S, self._left()))

    async def run(self, actions: list[ScrapeAction]) -> list[ActionDone]:
        done = []
        self._context = self.tab.check().context
        self._context.on("response", self._on_response)
        try:
            self._watch(self.tab)
            for index, action in enumerate(actions):
                try:
                    times = await self._one(index, action)
                    await self._go_on_in_opened()
                except BoxwrightError as exc:
                    raise _in_action(exc, index, action, self.tab.url) from None
                done.append(
                    ActionDone(
                        type=action.type,
                        times=times,
                        navigated=self.navigated,
                        opened=self.opened,
                        url=self.tab.url,
                        value=self.value,
                    )
                )
        finally:
            self._watch(None)
            self._context.remove_listener("response", self._on_response)
            self._first.clear()
        return done

    def _on_response(self, response: Response) -> None:
        """Documents' answers by address: Playwright announces a window once it has navigated, so a MainFrame
        made then has missed its first document's, and that request has no frame to tell which it was."""
        if response.request.is_navigation_request():
            self._first[response.url] = response

    def _watch(self, tab: Tab | None) -> None:
        """Watch `tab`'s page for windows it opens (None: stop; the windows not gone on in, forgotten)."""
        if self._watched is not None:
            self._watched.remove_listener("popup", self._on_popup)
        for _page, frame in self._popups:
            frame.detach()
        self._popups.clear()
        self._watched = tab.check() if tab is not None else None
        if self._watched is not None:
            self._watched.on("popup", self._on_popup)

    def _on_popup(self, popup: Page) -> None:
        frame = loading.MainFrame(popup)  # its later documents' answers (a redirect's, a form's)
        frame.response = self._first.get(popup.url)
        self._popups.append((popup, frame))

    async def _go_on_in_opened(self) -> None:
        """The last window the action opened, once loaded: the page from now on. Not one that closed itself or
        never showed a web page (an about:blank an ad script opened), nor any when the action also sent the
        page itself on: the visitor reads where the link took them, and the window is a pop-under's."""
        if not self._popups:
            return
        *others, (popup, frame) = self._popups
        self._popups = []
        for _page, other in others:
            other.detach()
        if self.navigated:
            frame.detach()
            return
        tab = next((t for t in self.tab.session.tabs.values() if t.page is popup), None)
        if tab is None:  # the session had no room for it (closed at once)
            frame.detach()
            return
        wait_ms = max(100.0, min(ACTION_TIMEOUT_S, self._left()) * 1000)
        with contextlib.suppress(PlaywrightError, PlaywrightTimeoutError, BoxwrightError):  # closed meanwhile
            await tab.guard(popup.wait_for_load_state("load", timeout=wait_ms))
        if popup.is_closed() or not popup.url.startswith(("http://", "https://")):
            frame.detach()
            return
        tab.dismiss_dialogs = True
        self._watch(tab)
        self.tab, self.frame, self.navigated, self.opened = tab, frame, True, True
        await self._settled()

    async def _one(self, index: int, action: ScrapeAction) -> int:
        """Do it (again, for `repeat`); how many times it was done."""
        self.navigated = self.opened = False
        self.value = None
        if isinstance(action, WaitAction):
            return await self._wait(index, action)
        if isinstance(action, ScriptAction):
            return await self._script(index, action)
        if isinstance(action, ClickAction) and action.all:
            return await self._click_all(index, action)
        if action.optional and _named(action) is not None and not await _shown(self.tab, action):
            return 0
        times = 0
        for _ in range(getattr(action, "repeat", 1)):
            if times and isinstance(action, ClickAction) and not await _shown(self.tab, action):
                break  # the button went: the list is whole
            try:
                moved = await self._act(action, self._step(index, action))
            except BoxwrightError as exc:
                if action.optional and exc.code == ErrorCode.ELEMENT_NOT_FOUND:
                    break
                raise
            if not moved:
                break
            times += 1
            await self._settled()
            if self.navigated or self._popups:  # another document: what was to be repeated is not on it
                break
        return times

    async def _click_all(self, index: int, action: ClickAction) -> int:
        """Each element named that is shown, once, in page order (as many as there were at the start); the page
        settles once, after the last. None shown: ELEMENT_NOT_FOUND, as a click on one would be (optional: 0)."""
        locator = _locator(self.tab, action)
        named = _named(action) or ""
        count = min(await self.tab.guard(locator.count()), MAX_CLICK_ALL)
        times = 0
        for nth in range(count):
            element = Target(locator.nth(nth), named, self.tab.refs.epoch)
            if not await self.tab.guard(element.locator.is_visible()):
                continue
            budget = self._step(index, action)
            params = ClickParams(selector=named, timeoutMs=int(max(100, budget.ms())))
            result = await interaction.click(self.tab, params, budget, element)
            times += 1
            if result.navigated or self._popups:  # another document: the rest are not on it
                self.navigated = result.navigated
                break
        if not times:
            if action.optional:
                return 0
            raise BoxwrightError(
                ErrorCode.ELEMENT_NOT_FOUND, f"no shown element matches {named!r}", details={"selector": named}
            )
        await self._settled()
        return times

    async def _act(self, action: ScrapeAction, budget: Budget) -> bool:
        """One go of an action other than wait; False when it changed nothing (a scroll at the page's end)."""
        tab, ms = self.tab, int(max(100, budget.ms()))
        target, named = _target(tab, action), _named(action) or ""
        if isinstance(action, ScrollAction):
            scroll = ScrollParams(
                selector=action.selector, direction=action.direction, amount=action.amount, timeoutMs=ms
            )
            before = await interaction.scroll_position(tab)
            after = await interaction.scroll(tab, scroll, budget)
            return action.selector is not None or (after.scrollX, after.scrollY) != before
        if isinstance(action, ClickAction):
            result = await interaction.click(tab, ClickParams(selector=named, timeoutMs=ms), budget, target)
        elif isinstance(action, WriteAction):
            if action.keystrokes:  # emptied, then typed key by key
                await interaction.type_text(tab, TypeParams(selector=named, text="", timeoutMs=ms), budget, target)
            typing = TypeParams(
                selector=named, text=action.text, submit=action.submit, clear=not action.keystrokes, timeoutMs=ms
            )
            result = await interaction.type_text(tab, typing, budget, target)
        elif isinstance(action, PressAction):
            result = await interaction.press_key(tab, PressKeyParams(key=action.key, selector=action.selector), budget)
        elif isinstance(action, HoverAction):
            result = await interaction.hover(tab, HoverParams(selector=named, timeoutMs=ms), budget, target)
        else:
            assert isinstance(action, SelectAction)
            options = SelectOptionParams(selector=named, values=action.values, timeoutMs=ms)
            result = await interaction.select_option(tab, options, budget, target)
        self.navigated = self.navigated or result.navigated
        return True

    async def _script(self, index: int, action: ScriptAction) -> int:
        """The caller's script in the page (the host lets only local callers send one), once; the page settles
        after it, as after any action."""
        budget = self._step(index, action)
        mark = self.tab.mark()
        try:
            self.value = (await scripting.evaluate(self.tab, EvaluateParams(expression=action.script), budget)).value
        except BoxwrightError:
            if not self.tab.navigated_since(mark):
                raise
            # It sent the page on (location.href = …, a form submitted): done; its value went with the document.
        self.navigated = (await interaction.finish(self.tab, mark, budget)).navigated
        await self._settled()
        return 1

    async def _wait(self, index: int, action: WaitAction) -> int:
        budget = self._step(index, action)
        if action.milliseconds is not None:
            await asyncio.sleep(max(0.0, min(action.milliseconds / 1000, self._left())))
            return 1
        named = _named(action)
        try:
            shown = _locator(self.tab, action).first.wait_for(state="visible", timeout=budget.ms())
            await self.tab.guard(shown)
        except PlaywrightTimeoutError:
            if action.optional:
                return 0
            raise BoxwrightError(
                ErrorCode.ELEMENT_NOT_FOUND,
                f"no such element was shown within {budget.total_ms} ms",
                details={"selector": named, "timeoutMs": budget.total_ms},
            ) from None
        return 1


def _in_action(exc: BoxwrightError, index: int, action: ScrapeAction, page_url: str) -> BoxwrightError:
    """The operation's error, naming the action; hints that point at a browser tab's snapshot made fit."""
    if "action" in exc.details:  # named already (no time left for it)
        return exc
    hint = exc.hint
    if exc.details.get("matches"):
        hint = AMBIGUOUS_HINT
    elif exc.code == ErrorCode.OPERATION_TIMEOUT:
        hint = TIME_HINT
    elif "intercepts pointer events" in str(exc.details.get("reason", "")):
        hint = COVERED_HINT
    elif "not enabled" in str(exc.details.get("reason", "")):
        hint = DISABLED_HINT
    elif exc.code in (ErrorCode.ELEMENT_NOT_FOUND, ErrorCode.EXECUTION_ERROR) or "snapshot" in (hint or ""):
        hint = HINT
    details = {**exc.details, "action": index, "type": action.type, "pageUrl": redact(page_url)}
    return BoxwrightError(exc.code, f"action {index} ({describe(action)}): {exc.message}", hint=hint, details=details)
