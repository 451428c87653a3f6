"""Element refs against the real Chromium: a login by refs and by CSS, ref stability and staleness,
refs inside iframes, and the caps of a 5,000-link page."""

from __future__ import annotations

import re
import time

import pytest

from rpc.errors import ErrorCode
from tests.unit.browser_harness import BrowserDriver, Site

pytestmark = pytest.mark.chromium  # launches the host's Chromium


def ref_of(elements: str, pattern: str) -> str:
    """The ref on the first snapshot line matching `pattern`."""
    for line in elements.splitlines():
        if re.search(pattern, line):
            return line.split("]", 1)[0].lstrip("[")
    raise AssertionError(f"no element line matches {pattern!r} in:\n{elements}")


async def test_login_by_refs(browser: BrowserDriver, site: Site, sid: str) -> None:
    await browser.call("browser.goto", sessionId=sid, url=site.url("/login"))
    snap = await browser.call("browser.snapshot", sessionId=sid)
    assert snap["title"] == "Login" and "Sign in" in snap["text"]
    elements = snap["elements"]
    assert re.search(r'^\[ref_\d+\] checkbox "Remember me" \[checked\]$', elements, re.M)
    assert re.search(r'^\[ref_\d+\] button "Help" \[disabled\]$', elements, re.M)
    assert re.search(r'^\[ref_\d+\] combobox "Language" value="English"$', elements, re.M)

    email, password = ref_of(elements, r'textbox "Email"'), ref_of(elements, r'textbox "Password"')
    await browser.call("browser.type", sessionId=sid, selector=email, text="ada@example.org")
    await browser.call("browser.type", sessionId=sid, selector=password, text="hunter2")
    picked = await browser.call(
        "browser.select_option", sessionId=sid, selector=ref_of(elements, "combobox"), values=["Français"]
    )
    assert picked["selected"] == ["fr"]
    again = await browser.call("browser.snapshot", sessionId=sid)
    assert f'[{email}] textbox "Email" value="ada@example.org"' in again["elements"]

    clicked = await browser.call("browser.click", sessionId=sid, selector=ref_of(elements, r'button "Sign in"'))
    assert clicked["navigated"] is True and clicked["title"] == "Welcome"
    after = await browser.call("browser.snapshot", sessionId=sid)
    assert "Welcome ada@example.org" in after["text"] and "lang=fr" in after["text"]


async def test_login_by_css_with_submit(browser: BrowserDriver, site: Site, sid: str) -> None:
    await browser.call("browser.goto", sessionId=sid, url=site.url("/login"))
    await browser.call("browser.type", sessionId=sid, selector="#email", text="bob@example.org")
    typed = await browser.call(
        "browser.type", sessionId=sid, selector="input[name=password]", text="hunter2", submit=True
    )
    assert typed["navigated"] is True and typed["title"] == "Welcome"
    content = await browser.call("browser.page_content", sessionId=sid)
    assert content["sections"][0]["heading"] == "Welcome bob@example.org"


async def test_type_appends_without_clear(browser: BrowserDriver, site: Site, sid: str) -> None:
    await browser.call("browser.goto", sessionId=sid, url=site.url("/login"))
    await browser.call("browser.type", sessionId=sid, selector="#email", text="ab")
    await browser.call("browser.type", sessionId=sid, selector="#email", text="cd", clear=False)
    value = await browser.call("browser.evaluate", sessionId=sid, expression="document.querySelector('#email').value")
    assert value == {"tabId": value["tabId"], "value": "abcd", "type": "string"}


async def test_css_selector_errors(browser: BrowserDriver, site: Site, sid: str) -> None:
    await browser.call("browser.goto", sessionId=sid, url=site.url("/login"))
    started = time.monotonic()
    missing = await browser.error("browser.click", sessionId=sid, selector="#nope", timeoutMs=600)
    assert missing.code is ErrorCode.ELEMENT_NOT_FOUND and 0.5 < time.monotonic() - started < 3
    several = await browser.error("browser.click", sessionId=sid, selector="button")
    assert several.code is ErrorCode.INVALID_PARAMETER and "matches 2 elements" in several.message
    assert "ref" in several.hint
    bad = await browser.error("browser.click", sessionId=sid, selector="a[")
    assert bad.code is ErrorCode.INVALID_PARAMETER and "not a valid CSS selector" in bad.message
    chained = await browser.error("browser.click", sessionId=sid, selector="main >> aria-ref=e1")
    assert chained.code is ErrorCode.INVALID_PARAMETER
    disabled = await browser.error("browser.click", sessionId=sid, selector="button[disabled]", timeoutMs=500)
    assert disabled.code is ErrorCode.EXECUTION_ERROR and "not enabled" in disabled.message
    assert "Call log" not in disabled.message and "\n" not in disabled.message
    not_a_field = await browser.error("browser.type", sessionId=sid, selector="#submit", text="x")
    assert not_a_field.code is ErrorCode.INVALID_PARAMETER
    no_option = await browser.error(
        "browser.select_option", sessionId=sid, selector="select", values=["Nope"], timeoutMs=500
    )
    assert no_option.code is ErrorCode.INVALID_PARAMETER and "by value or label" in no_option.message


async def test_a_missing_option_is_said_at_once_a_late_one_is_waited_for(
    browser: BrowserDriver, site: Site, sid: str
) -> None:
    """Playwright waits for an option until the action's timeout (10 s by default): a value no option has
    is refused within a moment, naming the options there are; one a script is about to add is still taken."""
    await browser.call("browser.goto", sessionId=sid, url=site.url("/login"))
    started = time.monotonic()
    missing = await browser.error("browser.select_option", sessionId=sid, selector="select", values=["Deutsch"])
    assert missing.code is ErrorCode.INVALID_PARAMETER and time.monotonic() - started < 3
    assert missing.details["options"] == ["English", "Français"] and "English" in (missing.hint or "")
    await browser.call(
        "browser.evaluate",
        sessionId=sid,
        expression="setTimeout(() => document.querySelector('select').add(new Option('Deutsch', 'de')), 500)",
    )
    late = await browser.call("browser.select_option", sessionId=sid, selector="select", values=["Deutsch"])
    assert late["selected"] == ["de"]


async def test_refs_are_stable_and_go_stale(browser: BrowserDriver, site: Site, sid: str) -> None:
    await browser.call("browser.goto", sessionId=sid, url=site.url("/removable"))
    first = await browser.call("browser.snapshot", sessionId=sid)
    second = await browser.call("browser.snapshot", sessionId=sid)
    assert first["elements"] == second["elements"]  # same elements, same refs
    info = await browser.call("browser.page_info", sessionId=sid)
    assert {e["ref"] for e in info["elements"]} == set(re.findall(r"ref_\d+", first["elements"]))

    victim = ref_of(first["elements"], r'button "Victim"')
    await browser.call("browser.click", sessionId=sid, selector=ref_of(first["elements"], "Remove it"))
    gone = await browser.error("browser.click", sessionId=sid, selector=victim)
    assert gone.code is ErrorCode.STALE_REF and "no longer on the page" in gone.message

    plain = ref_of(first["elements"], r'button "Plain"')
    await browser.call("browser.goto", sessionId=sid, url=site.url("/removable"))  # same page, new document
    stale = await browser.error("browser.click", sessionId=sid, selector=plain)
    assert stale.code is ErrorCode.STALE_REF and "navigated" in stale.message
    third = await browser.call("browser.snapshot", sessionId=sid)
    assert plain not in third["elements"]  # new document, new refs: numbers are never reused

    unknown = await browser.error("browser.click", sessionId=sid, selector="ref_99999")
    assert unknown.code is ErrorCode.ELEMENT_NOT_FOUND and "snapshot" in unknown.hint


async def test_ref_never_acts_on_another_element_after_navigation(browser: BrowserDriver, site: Site, sid: str) -> None:
    """Playwright numbers elements afresh per document; an old ref must not hit the new page's twin."""
    await browser.call("browser.goto", sessionId=sid, url=site.url("/removable"))
    old = await browser.call("browser.snapshot", sessionId=sid)
    await browser.call("browser.goto", sessionId=sid, url=site.url("/dialogs"))
    await browser.call("browser.snapshot", sessionId=sid)  # the new document now has its own e1, e2…
    for ref in re.findall(r"ref_\d+", old["elements"]):
        error = await browser.error("browser.click", sessionId=sid, selector=ref)
        assert error.code is ErrorCode.STALE_REF
    result = await browser.call(
        "browser.evaluate", sessionId=sid, expression="document.getElementById('r').textContent"
    )
    assert result["value"] == "none"  # nothing was clicked


async def test_refs_inside_iframes(browser: BrowserDriver, site: Site, sid: str) -> None:
    await browser.call("browser.goto", sessionId=sid, url=site.url("/frames"))
    snap = await browser.call("browser.snapshot", sessionId=sid)
    button = ref_of(snap["elements"], r'button "Inside button"')
    field = ref_of(snap["elements"], r'textbox "Inner field"')
    await browser.call("browser.type", sessionId=sid, selector=field, text="in a frame")
    await browser.call("browser.click", sessionId=sid, selector=button)
    after = await browser.call("browser.snapshot", sessionId=sid)
    assert 'button "Clicked inside"' in after["elements"]
    assert after["text"].startswith("Outer\n\nouter") and after["text"].endswith("Clicked inside")
    assert f'[{field}] textbox "Inner field" value="in a frame"' in after["elements"]


async def test_five_thousand_links_respect_the_caps(browser: BrowserDriver, site: Site, sid: str) -> None:
    await browser.call("browser.goto", sessionId=sid, url=site.url("/many"))
    started = time.monotonic()
    snap = await browser.call("browser.snapshot", sessionId=sid, maxElements=100, maxTextLen=2000)
    elapsed = time.monotonic() - started
    assert snap["elementCount"] == 5000 and snap["truncated"] is True
    assert len(snap["elements"].splitlines()) == 100 and len(snap["text"]) == 2000
    assert elapsed < 8, f"snapshot of 5,000 links took {elapsed:.1f} s"
    last = snap["elements"].splitlines()[-1]
    assert last.endswith('link "Link number 99" href="/p/99"')
    # The refs beyond the cap are live too: a later, larger snapshot shows the same numbering.
    bigger = await browser.call("browser.snapshot", sessionId=sid, maxElements=200, maxTextLen=10)
    assert bigger["elements"].splitlines()[:100] == snap["elements"].splitlines()
    info = await browser.call("browser.page_info", sessionId=sid, visibleOnly=False, maxElements=10)
    assert info["totalElements"] == 5000 and info["truncated"] and len(info["elements"]) == 10
    assert info["page"]["type"] == "listing"
