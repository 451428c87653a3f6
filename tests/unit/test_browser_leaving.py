"""Which document a dialog seen during goto belongs to (sandbox_image.browser.leaving), as pure logic.

Under load Playwright reports an alert the page being left opened just before the commit after the new
document's framenavigated, and goto blamed it (DIALOG_PENDING with the old page's message, CI). The browser
tests in test_browser_pages drive the same path for real; the order that fails cannot be forced there."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

from sandbox_image.browser.leaving import Leaving, Twins

OLD = "data:text/html,<title>Nagging</title>"
NEW = "data:text/html,<title>Hello</title>"


async def test_twins_pair_in_order_by_type_and_message() -> None:
    twins = Twins()
    twins.chromium_saw(("alert", "again"), OLD)
    first = twins.playwright_saw(("alert", "again"))
    second = twins.playwright_saw(("alert", "welcome"))  # its twin is not in yet
    assert first.done() and first.result() == OLD and not second.done()
    twins.chromium_saw(("alert", "welcome"), NEW)
    assert second.result() == NEW and not twins.unclaimed and not twins.owed


async def test_one_twin_missed_at_the_start_does_not_shift_the_others() -> None:
    twins = Twins()
    twins.chromium_saw(("alert", "welcome"), NEW)  # the Playwright dialog of an earlier 'again' came before we watched
    assert twins.playwright_saw(("confirm", "welcome")).done() is False  # another type is another dialog
    assert twins.playwright_saw(("alert", "welcome")).result() == NEW


class FakeTab:
    """What Leaving asks of a Tab: the dialogs it holds, and dropping one."""

    def __init__(self, dialogs: list[object]) -> None:
        self.dialogs = [SimpleNamespace(dialog=d) for d in dialogs]
        self.dropped: list[object] = []
        self.document_dialogs = 1

    def drop_dialog(self, dialog: object) -> None:
        self.dropped.append(dialog)
        self.dialogs = [p for p in self.dialogs if p.dialog is not dialog]


def leaving_after_commit(tab: FakeTab) -> Leaving:
    leaving = Leaving(cast(Any, tab), cast(Any, SimpleNamespace(url=OLD)), NEW)
    leaving.twins = Twins()
    leaving.committed, leaving.committed_url = True, NEW
    return leaving


async def test_a_dialog_of_the_page_left_reported_after_the_commit_is_dropped_not_blamed() -> None:
    stale, welcome = SimpleNamespace(type="alert", message="again"), SimpleNamespace(type="alert", message="welcome")
    tab = FakeTab([stale, welcome])
    leaving = leaving_after_commit(tab)
    assert leaving.twins is not None
    leaving.twins.chromium_saw(("alert", "again"), OLD)  # Chromium's order: the old page's alert, the commit
    leaving._on_dialog(cast(Any, stale))
    await asyncio.wait(leaving.deciding)
    assert tab.dropped == [stale] and not leaving.new_dialog.is_set()
    leaving._on_dialog(cast(Any, welcome))
    leaving.twins.chromium_saw(("alert", "welcome"), NEW)
    await asyncio.wait(leaving.deciding)
    assert leaving.new_dialog.is_set() and tab.dropped == [stale]


class FakePage:
    """A page that answers a script at once, or never (a dialog holds it)."""

    def __init__(self, held: bool) -> None:
        self.url = OLD
        self.held = held
        self.asked = 0

    async def evaluate(self, _expression: str) -> int:
        self.asked += 1
        if self.held:
            await asyncio.Event().wait()
        return 0

    @property
    def main_frame(self) -> FakePage:
        return self

    @property
    def frames(self) -> list[FakePage]:
        return [self]


def leaving_without_twins(tab: FakeTab, page: FakePage) -> Leaving:
    leaving = Leaving(cast(Any, tab), cast(Any, page), NEW)
    leaving.committed, leaving.committed_url = True, NEW
    return leaving


async def test_without_a_twin_a_dialog_that_holds_the_page_is_the_new_pages(monkeypatch: Any) -> None:
    monkeypatch.setattr("sandbox_image.browser.leaving.TWIN_S", 0.05)
    monkeypatch.setattr("sandbox_image.browser.leaving.HELD_S", 0.05)
    dialog = SimpleNamespace(type="alert", message="again")
    tab = FakeTab([dialog])
    leaving = leaving_after_commit(tab)  # Chromium's twin never comes
    leaving.page = cast(Any, FakePage(held=True))
    leaving._on_dialog(cast(Any, dialog))
    await asyncio.wait(leaving.deciding)
    assert leaving.new_dialog.is_set() and not tab.dropped
    # No DevTools session at all (the page began alerting only during goto): the page is asked the same way.
    tab, page = FakeTab([dialog]), FakePage(held=True)
    leaving = leaving_without_twins(tab, page)
    leaving._on_dialog(cast(Any, dialog))
    await asyncio.wait(leaving.deciding)
    assert leaving.new_dialog.is_set() and not tab.dropped and page.asked == 1


async def test_without_a_twin_a_dialog_of_a_page_that_still_runs_scripts_is_dropped() -> None:
    """Under load the DevTools session may not open in time (Page.enable waits for a renderer that a page
    alerting in a loop keeps busy): a dialog after the commit while the new page runs scripts freely is
    the page left's, closed by Chromium with it (CI: DIALOG_PENDING 'again' for the slow page gone to)."""
    dialog = SimpleNamespace(type="alert", message="again")
    tab, page = FakeTab([dialog]), FakePage(held=False)
    leaving = leaving_without_twins(tab, page)
    leaving._on_dialog(cast(Any, dialog))
    await asyncio.wait(leaving.deciding)
    assert tab.dropped == [dialog] and not leaving.new_dialog.is_set() and page.asked == 1


async def test_a_page_left_that_never_showed_a_dialog_is_not_asked_about() -> None:
    dialog = SimpleNamespace(type="alert", message="welcome")
    tab, page = FakeTab([dialog]), FakePage(held=False)
    tab.document_dialogs = 0
    leaving = leaving_without_twins(tab, page)
    leaving._on_dialog(cast(Any, dialog))
    assert leaving.new_dialog.is_set() and not leaving.deciding and page.asked == 0


async def test_reloading_the_same_address_keeps_its_dialogs_the_callers() -> None:
    dialog = SimpleNamespace(type="alert", message="again")
    tab = FakeTab([dialog])
    leaving = Leaving(cast(Any, tab), cast(Any, SimpleNamespace(url=OLD)), OLD)
    leaving.twins = Twins()
    leaving.committed, leaving.committed_url = True, OLD
    leaving.twins.chromium_saw(("alert", "again"), OLD)
    leaving._on_dialog(cast(Any, dialog))
    await asyncio.wait(leaving.deciding)
    assert leaving.new_dialog.is_set() and not tab.dropped
