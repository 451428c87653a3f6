"""A page's frames read in place: each visible <iframe>/<frame> holds its own document's body.

Off unless asked (scrape's includeIframes): on most pages the frames are ads, players and widgets. When
asked, a frame's text goes where the reader sees it — where its element is. annotate.js runs in each
frame (cross-origin ones too: Playwright reaches every frame) with its boxes moved to where the frame
sits on the top page, and the frame's URLs are made absolute against its own address before its body
takes the element's place. Bounded: MAX_FRAMES documents, MAX_FRAME_DEPTH levels, the caller's time,
and MAX_PAGE_BYTES in all; a frame that cannot be read (gone, navigating, too slow) stays empty.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from lxml.html import HtmlElement, tostring

from rpc.models.scrape import MAX_PAGE_BYTES
from sandbox_image.browser.errors import PlaywrightError
from sandbox_image.scrape.annotate import MAX_BOXES, AnnotatedDom, Selectors, annotate_script
from sandbox_image.scrape.dom import parse_html
from sandbox_image.scrape.links import document_base, make_absolute

if TYPE_CHECKING:
    from playwright.async_api import ElementHandle, Frame, Page

MAX_FRAMES = 20
MAX_FRAME_DEPTH = 3  # a frame in a frame in a frame
MIN_FRAME_PX = 8  # narrower or lower than this is a tracking pixel or a collapsed slot, not something to read
FRAME_MARK = "data-bw-frame"
# Frames with a document of their own to read: a page, or one written in place (srcdoc, script-filled blank).
_READABLE = ("http://", "https://", "about:srcdoc", "about:blank")
# What the frame's element keeps when it becomes the <div> holding the document: what it is to the page
# (id, class, role, title, aria-*) and our marks; not its src, size or permissions.
_KEPT = frozenset({"id", "class", "role", "title"})
_KEPT_PREFIXES = ("aria-", "data-bw-")


@dataclass
class _Reading:
    deadline: float
    selectors: dict[str, list[str]]  # annotate.js's include / exclude options, the same in every frame
    frames: int = 0
    size: int = 0

    def left(self) -> float:
        return self.deadline - asyncio.get_running_loop().time()


async def annotate_with_frames(
    page: Page, bound_s: float, selectors: Selectors | None = None
) -> tuple[AnnotatedDom, int]:
    """The page annotated as annotate_page does, its frames' documents in place; and how many were read."""
    reading = _Reading(asyncio.get_running_loop().time() + bound_s, selectors.options() if selectors else {})
    dom = await _annotate(page.main_frame, (0, 0), 0, reading)
    return dom, reading.frames


async def _annotate(frame: Frame, offset: tuple[int, int], depth: int, reading: _Reading) -> AnnotatedDom:
    children: list[tuple[Frame, ElementHandle]] = []
    if depth < MAX_FRAME_DEPTH:
        for child in frame.child_frames:
            if len(children) == MAX_FRAMES or child.is_detached() or not child.url.startswith(_READABLE):
                continue
            with contextlib.suppress(PlaywrightError):
                children.append((child, await child.frame_element()))
    try:
        options = {"maxBoxes": MAX_BOXES, "frames": [h for _, h in children], "offset": list(offset)}
        options.update(reading.selectors)
        raw = await frame.evaluate(annotate_script(), options)
    finally:
        for _, handle in children:
            with contextlib.suppress(PlaywrightError):
                await handle.dispose()
    dom = AnnotatedDom.from_script(raw, frame.url)
    reading.size += len(dom.html)
    inner: dict[int, tuple[str, str]] = {}
    for i, ((child, _), box) in enumerate(zip(children, _frame_boxes(raw), strict=False)):
        x, y, width, height, shown = box
        if not shown or width < MIN_FRAME_PX or height < MIN_FRAME_PX or reading.frames >= MAX_FRAMES:
            continue
        if reading.left() <= 0:
            break
        before = (reading.frames, reading.size)  # what this frame and its own frames add, undone if they fail
        try:
            read = await asyncio.wait_for(_annotate(child, (x, y), depth + 1, reading), reading.left())
        except (PlaywrightError, TimeoutError, ValueError):  # gone, navigating, too slow, not a document
            reading.frames, reading.size = before
            continue
        if reading.size > MAX_PAGE_BYTES:  # this frame (with its own frames) is one too many
            reading.frames, reading.size = before
            continue
        reading.frames += 1
        inner[i] = (read.html, read.url)
    return replace(dom, html=splice(dom.html, inner)) if inner else dom


def _frame_boxes(raw: Any) -> list[tuple[int, int, int, int, bool]]:
    """annotate.js's `frames` (x, y, width, height, shown), validated: the page's scripts share that world."""
    boxes: list[tuple[int, int, int, int, bool]] = []
    items = raw.get("frames") if isinstance(raw, dict) else None
    for item in items if isinstance(items, list) else []:
        try:
            x, y, w, h, shown = item
            boxes.append((int(x), int(y), int(w), int(h), bool(shown)))
        except (TypeError, ValueError):
            boxes.append((0, 0, 0, 0, False))
    return boxes


def splice(html: str, inner: Mapping[int, tuple[str, str]]) -> str:
    """`html` with each element marked data-bw-frame="i" holding the body of inner[i] = (html, url).

    The element becomes a <div> (keeping _KEPT: its id, class, and our marks of where it is and whether it
    is hidden), so the frame's text is part of the page's tree; a frameset page becomes a body of such divs."""
    root = parse_html(html)
    for element in list(root.iter("iframe", "frame")):
        got = inner.get(_index(element.get(FRAME_MARK)))
        if got is None:
            continue
        document = parse_html(got[0])
        body = _body(document)
        make_absolute(body, document_base(document, got[1]))
        for name in [n for n in element.attrib if n not in _KEPT and not n.startswith(_KEPT_PREFIXES)]:
            del element.attrib[name]
        element.tag, element.text = "div", body.text
        for child in body:
            element.append(child)
    for frameset in list(root.iter("frameset")):
        frameset.tag = "div"
    if root.find("body") is None:  # a frameset page: its frames are its body
        body = root.makeelement("body", {})
        for child in [c for c in root if c.tag != "head"]:
            body.append(child)
        root.append(body)
    return tostring(root, encoding="unicode", doctype="<!DOCTYPE html>")


def _index(mark: str | None) -> int:
    try:
        return int(mark or "")
    except ValueError:
        return -1


def _body(root: HtmlElement) -> HtmlElement:
    body = root.find("body")
    if body is not None:
        return body
    frameset = root.find("frameset")
    return frameset if frameset is not None else root
