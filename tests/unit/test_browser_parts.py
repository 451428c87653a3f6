"""The browser's pure parts, no Chromium needed: the aria snapshot parser, the ref registry, element lines,
URL checks and settings."""

from __future__ import annotations

import pytest

from rpc.errors import BoxwrightError, ErrorCode
from rpc.settings import SettingsError
from sandbox_image.browser import aria
from sandbox_image.browser.elements import build
from sandbox_image.browser.refs import MAX_LIVE_REFS, RefRegistry, parse_ref
from sandbox_image.browser.urls import check_url, redact
from sandbox_image.config import SandboxSettings

SNAPSHOT = """\
- generic [active] [ref=e1]:
  - banner [ref=e2]:
    - navigation "Main menu" [ref=e3]:
      - link "Home" [ref=e4] [cursor=pointer]:
        - /url: /
  - main [ref=e6]:
    - 'heading "Sign in: it''s now" [level=1] [ref=e7]'
    - 'textbox "Say \\"hi\\": here" [ref=e10]': "- leading dash"
    - textbox "Empty" [ref=e11]:
      - /placeholder: you@example.org
    - checkbox "Remember" [checked] [ref=e13]
    - checkbox "Partial" [checked=mixed] [disabled] [ref=e14]
    - combobox "Language" [ref=e15]:
      - option "One"
      - option "Two" [selected]
    - generic [ref=e16] [cursor=pointer]:
      - text: Clickable card
    - paragraph [ref=e17]: "Line\\none \\x01"
    - iframe [ref=e18]:
      - button "Inside" [ref=f1e2]
"""


def test_parser_reads_roles_names_attributes_and_values() -> None:
    roots = aria.parse(SNAPSHOT)
    nodes = {n.ref: n for n in roots[0].walk() if n.ref}
    assert nodes["e3"].role == "navigation" and nodes["e3"].name == "Main menu"
    assert nodes["e4"].props == {"url": "/"} and nodes["e4"].attrs == {"cursor": "pointer"}
    assert nodes["e7"].name == "Sign in: it's now" and nodes["e7"].attrs["level"] == "1"
    assert nodes["e10"].name == 'Say "hi": here' and nodes["e10"].value == "- leading dash"
    assert nodes["e11"].props["placeholder"] == "you@example.org"
    assert nodes["e14"].attrs == {"checked": "mixed", "disabled": ""}
    assert nodes["e16"].children == ["Clickable card"]
    assert nodes["e17"].value == "Line\none \x01"
    assert nodes["f1e2"].role == "button"  # iframe content nests under the iframe node


def test_parser_skips_what_it_cannot_read() -> None:
    roots = aria.parse('- button "unterminated [ref=e1]\nnot a node line\n- link "ok" [ref=e2]')
    assert [(n.role, n.ref) for n in roots] == [("link", "e2")]


def test_elements_lines_and_regions() -> None:
    registry = RefRegistry()
    model = build(aria.parse(SNAPSHOT), lambda pw, desc: registry.issue(registry.epoch, pw, desc))
    lines = [e.line() for e in model.elements]
    assert lines == [
        '[ref_1] link "Home" href="/"',
        '[ref_2] textbox "Say \\"hi\\": here" value="- leading dash"',
        '[ref_3] textbox "Empty" value=""',
        '[ref_4] checkbox "Remember" [checked]',
        '[ref_5] checkbox "Partial" [checked=mixed] [disabled]',
        '[ref_6] combobox "Language" value="Two"',
        '[ref_7] generic "Clickable card" [clickable]',
        '[ref_8] button "Inside"',
    ]
    assert model.elements[0].region is not None and model.elements[0].region.label == 'navigation "Main menu"'
    assert [(r.role, r.element_count) for r in model.regions] == [("banner", 0), ("navigation", 1), ("main", 7)]


def test_registry_binds_refs_to_their_epoch() -> None:
    registry = RefRegistry()
    first = registry.issue(0, "e5", 'button "A"')
    assert registry.issue(0, "e5", 'button "A"') == first == "ref_1"  # same element, same ref
    assert registry.lookup(1) == ("e5", 'button "A"')
    registry.advance()  # the page navigated
    with pytest.raises(BoxwrightError) as stale:
        registry.lookup(1)
    assert stale.value.code is ErrorCode.STALE_REF and "navigated" in stale.value.message
    assert registry.issue(1, "e5", 'link "B"') == "ref_2"  # a new document's e5 is another element
    late = registry.issue(0, "e9", "button")  # a snapshot that raced the navigation
    with pytest.raises(BoxwrightError) as raced:
        registry.lookup(int(late.removeprefix("ref_")))
    assert raced.value.code is ErrorCode.STALE_REF
    with pytest.raises(BoxwrightError) as unknown:
        registry.lookup(99)
    assert unknown.value.code is ErrorCode.ELEMENT_NOT_FOUND


def test_registry_forgets_the_oldest_refs_beyond_its_cap() -> None:
    registry = RefRegistry()
    for i in range(MAX_LIVE_REFS + 1):
        registry.issue(0, f"e{i}", "link")
    with pytest.raises(BoxwrightError) as evicted:
        registry.lookup(1)
    assert evicted.value.code is ErrorCode.STALE_REF
    assert registry.lookup(MAX_LIVE_REFS + 1)[0] == f"e{MAX_LIVE_REFS}"


@pytest.mark.parametrize(
    ("selector", "n"), [("ref_12", 12), (" [ref_3] ", 3), ("ref_x", None), ("#ref_1", None), ("e5", None)]
)
def test_parse_ref(selector: str, n: int | None) -> None:
    assert parse_ref(selector) == n


@pytest.mark.parametrize(
    "url",
    ["https://example.com/a?b=c", "http://127.0.0.1:8000/", "http://[::1]:65535/", "about:blank", "data:text/html,hi"],
)
def test_allowed_urls(url: str) -> None:
    assert check_url(url) == url


# The browser's own pages: chrome://hang wedges the tab and chrome://crash kills it — not for callers.
INTERNAL_PAGES = [
    "chrome://hang",
    "CHROME://crash",
    "chrome-extension://abc/x.html",
    "devtools://devtools/x",
    "chrome-untrusted://x",
]


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "javascript:alert(1)",
        "view-source:https://example.com",
        "ftp://x",
        "example.com",
        "localhost:80",
        "http://",
        "https:///path",
        "http://[::1",
        "http://:8000/",
        *INTERNAL_PAGES,
    ],
)
def test_refused_urls(url: str) -> None:
    with pytest.raises(BoxwrightError) as refused:
        check_url(url)
    assert refused.value.code is ErrorCode.INVALID_PARAMETER
    if url in INTERNAL_PAGES:
        assert refused.value.hint and "chrome" not in refused.value.details["allowedSchemes"]


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999/", "https://example.com:65536/x", "http://example.com:8o/"])
def test_ports_out_of_range_are_refused_up_front(url: str) -> None:
    with pytest.raises(BoxwrightError) as refused:
        check_url(url)
    assert refused.value.code is ErrorCode.INVALID_PARAMETER and "port" in refused.value.message
    assert refused.value.hint and refused.value.details["field"] == "url"


def test_redact_drops_queries_and_inline_documents() -> None:
    assert redact("https://example.com/login?token=secret#frag") == "https://example.com/login"
    assert redact("data:text/html,<p>secret</p>") == "data:…"


def test_browser_settings_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BOXWRIGHT_CHROMIUM", raising=False)
    monkeypatch.delenv("BOXWRIGHT_BROWSER_PRELAUNCH", raising=False)
    default = SandboxSettings.load()
    assert default.chromium == "/usr/bin/chromium" and default.browser_prelaunch is False
    monkeypatch.setenv("BOXWRIGHT_BROWSER_PRELAUNCH", "yes")
    monkeypatch.setenv("BOXWRIGHT_CHROMIUM", "/opt/c")
    on = SandboxSettings.load()
    assert on.chromium == "/opt/c" and on.browser_prelaunch is True
    # One boolean parser for every setting: what is not a boolean is refused, naming the variable.
    monkeypatch.setenv("BOXWRIGHT_BROWSER_PRELAUNCH", "maybe")
    with pytest.raises(SettingsError, match="BOXWRIGHT_BROWSER_PRELAUNCH"):
        SandboxSettings.load()


def test_an_empty_session_or_tab_id_is_refused_not_taken_for_the_default() -> None:
    from pydantic import ValidationError

    from rpc.models.browser import SnapshotParams, TabsParams

    for model, field in ((SnapshotParams, "sessionId"), (SnapshotParams, "tabId"), (TabsParams, "tabId")):
        with pytest.raises(ValidationError):
            model.model_validate({field: ""})
        assert getattr(model.model_validate({}), field) is None
