"""From a parsed aria snapshot to what we hand out: interactive elements with our refs, and landmarks.

Shared by browser.snapshot and browser.page_info, so both issue refs from the one per-tab registry.
`capture` takes the snapshot and registers its refs against the epoch the snapshot started in.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from sandbox_image.browser import aria
from sandbox_image.browser.errors import PlaywrightError
from sandbox_image.browser.tab import Tab, cap
from sandbox_image.browser.timeouts import Budget

INTERACTIVE_ROLES = frozenset(
    {
        "button",
        "link",
        "textbox",
        "searchbox",
        "checkbox",
        "radio",
        "combobox",
        "listbox",
        "option",
        "menuitem",
        "menuitemcheckbox",
        "menuitemradio",
        "tab",
        "switch",
        "slider",
        "spinbutton",
        "treeitem",
    }
)
VALUE_ROLES = frozenset({"textbox", "searchbox", "spinbutton", "combobox", "slider"})
LANDMARK_ROLES = frozenset(
    {
        "banner",
        "navigation",
        "main",
        "complementary",
        "contentinfo",
        "form",
        "search",
        "region",
        "dialog",
        "alertdialog",
    }
)
STATE_ATTRS = ("checked", "disabled", "expanded", "pressed", "selected", "invalid")
MAX_NAME = 100
MAX_VALUE = 200
MAX_URL = 120
# A navigation during the snapshot makes its refs stale at birth; try again this often first.
CAPTURE_ATTEMPTS = 3
PASSWORD_MASK = "********"
_VALUES = "els => els.map(e => e.value)"


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


@dataclass
class Region:
    role: str
    name: str
    element_count: int = 0

    @property
    def label(self) -> str:
        return f"{self.role} {_quoted(self.name)}" if self.name else self.role


@dataclass
class Element:
    ref: str
    role: str
    name: str
    value: str | None = None
    placeholder: str | None = None
    url: str | None = None
    states: list[str] = field(default_factory=list)
    clickable: bool = False  # not an interactive role, but the page gives it a pointer cursor
    region: Region | None = None
    box: tuple[int, int, int, int] | None = None

    @property
    def disabled(self) -> bool:
        return "disabled" in self.states

    def line(self) -> str:
        """`[ref_7] textbox "Email" value="a@b.c" [disabled]`"""
        parts = [f"[{self.ref}] {self.role}"]
        if self.name:
            parts.append(_quoted(self.name))
        if self.value is not None:
            parts.append(f"value={_quoted(self.value)}")
        elif self.placeholder:
            parts.append(f"placeholder={_quoted(self.placeholder)}")
        if self.url:
            parts.append(f"href={_quoted(self.url)}")
        parts.extend(f"[{state}]" for state in self.states)
        if self.clickable:
            parts.append("[clickable]")
        return " ".join(parts)


@dataclass
class PageModel:
    roots: list[aria.AriaNode]
    elements: list[Element]
    regions: list[Region]


def _box(raw: str | None) -> tuple[int, int, int, int] | None:
    try:
        x, y, w, h = (int(float(v)) for v in (raw or "").split(","))
    except ValueError:
        return None
    return x, y, w, h


def _element(node: aria.AriaNode, ref: str, region: Region | None) -> Element:
    interactive = node.role in INTERACTIVE_ROLES
    name = node.name if interactive or node.name else node.text(MAX_NAME)
    value: str | None = None
    if node.role == "combobox":
        selected = [c for c in node.children if isinstance(c, aria.AriaNode) and "selected" in c.attrs]
        value = selected[0].name if selected else node.value
    elif node.role in VALUE_ROLES:
        value = node.value or ""
    states = [
        state if not node.attrs[state] else f"{state}={node.attrs[state]}"
        for state in STATE_ATTRS
        if state in node.attrs
    ]
    if "active" in node.attrs:
        states.append("focused")
    return Element(
        ref=ref,
        role=node.role,
        name=cap(name, MAX_NAME),
        value=cap(value, MAX_VALUE) if value is not None else None,
        placeholder=cap(node.props["placeholder"], MAX_VALUE) if "placeholder" in node.props else None,
        url=cap(node.props["url"], MAX_URL) if "url" in node.props else None,
        states=states,
        clickable=not interactive,
        region=region,
        box=_box(node.attrs.get("box")),
    )


def build(roots: list[aria.AriaNode], issue: Callable[[str, str], str]) -> PageModel:
    """Interactive elements (document order) and landmarks; `issue(pw_ref, description)` gives our refs."""
    elements: list[Element] = []
    regions: list[Region] = []
    stack: list[tuple[aria.AriaNode, Region | None]] = [(node, None) for node in reversed(roots)]
    while stack:
        node, region = stack.pop()
        if node.role in LANDMARK_ROLES:
            region = Region(node.role, cap(node.name, MAX_NAME))
            regions.append(region)
        if node.ref and (node.role in INTERACTIVE_ROLES or node.attrs.get("cursor") == "pointer"):
            description = f"{node.role} {_quoted(cap(node.name, 60))}" if node.name else node.role
            elements.append(_element(node, issue(node.ref, description), region))
            if region is not None:
                region.element_count += 1
        stack.extend((child, region) for child in reversed(node.children) if isinstance(child, aria.AriaNode))
    return PageModel(roots, elements, regions)


async def capture(tab: Tab, budget: Budget, *, boxes: bool = False) -> PageModel:
    """Snapshot the tab's page (all frames) and register its refs."""
    page = tab.check()
    for _attempt in range(CAPTURE_ATTEMPTS):
        epoch = tab.refs.epoch
        raw = await tab.guard(page.aria_snapshot(mode="ai", boxes=boxes, timeout=budget.ms()))
        if tab.refs.epoch == epoch:
            break
    model = build(aria.parse(raw), lambda pw_ref, description: tab.refs.issue(epoch, pw_ref, description))
    await _mask_passwords(tab, model)
    return model


async def _mask_passwords(tab: Tab, model: PageModel) -> None:
    """Password fields show up as plain textboxes with their value; a snapshot must not hand a
    typed password to whoever reads it (agent transcripts, logs). Values equal to a current password
    field's value are masked."""
    candidates = [e for e in model.elements if e.role == "textbox" and e.value]
    if not candidates:
        return
    secrets: set[str] = set()
    for frame in tab.check().frames:
        with contextlib.suppress(PlaywrightError):  # a frame detached meanwhile has no passwords left
            values = await tab.guard(frame.locator("css=input[type=password]").evaluate_all(_VALUES))
            secrets.update(v for v in values if v)
    shown = {cap(v, MAX_VALUE) for v in secrets}  # element values are capped the same way
    for element in candidates:
        if element.value in shown:
            element.value = PASSWORD_MASK
