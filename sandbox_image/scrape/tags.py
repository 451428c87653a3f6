"""scrape's includeTags / excludeTags: the caller's CSS selectors over the rendered page.

A way around the models when the caller knows the site: `excludeTags` takes elements out before the
main content is chosen; `includeTags` replaces the choice with what the selectors match. The browser is
the judge of a selector: `check` asks it before the page loads (a bad one is INVALID_PARAMETER then), and
annotate.js matches them with the browser's own engine (fast, and the CSS of DevTools) and marks the
matches data-bw-include / data-bw-exclude, which is what is read here. A document without those marks
(the server's HTML, read when the page failed to render; plain HTML in tests) is matched by lxml instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from cssselect import SelectorError
from lxml.html import HtmlElement

from rpc.errors import invalid_parameter
from rpc.models.scrape import ScrapeOptions

if TYPE_CHECKING:
    from playwright.async_api import Page

INCLUDE_MARK = "data-bw-include"
EXCLUDE_MARK = "data-bw-exclude"
_CHECK = """(lists) => {
  const fragment = document.createDocumentFragment();
  for (const [field, selectors] of lists) {
    for (const selector of selectors) {
      try { fragment.querySelector(selector); } catch (error) { return [field, selector, String(error.message)]; }
    }
  }
  return null;
}"""


def fields_of(params: ScrapeOptions) -> list[tuple[str, list[str]]]:
    """Every CSS selector of a scrape call, by the field that gives it, named as the model names it
    (`actions.2.click.selector`)."""
    fields = [("includeTags", list(params.includeTags or ())), ("excludeTags", list(params.excludeTags or ()))]
    for index, action in enumerate(params.actions or ()):
        selector = getattr(action, "selector", None)
        if selector is not None:
            fields.append((f"actions.{index}.{action.type}.selector", [selector]))
    return [(field, selectors) for field, selectors in fields if selectors]


async def check(page: Page, fields: list[tuple[str, list[str]]]) -> None:
    """INVALID_PARAMETER for a selector the browser cannot parse; run on the blank page, before loading."""
    bad = await page.evaluate(_CHECK, [[field, selectors] for field, selectors in fields])
    if bad:
        field, selector, reason = (str(part) for part in bad)
        raise invalid_parameter(
            field,
            f"the browser cannot parse {selector[:200]!r}: {reason[:300]}",
            hint="give CSS selectors as document.querySelectorAll takes them, e.g. 'article', '.price', '#specs > p'",
        )


def _body(root: HtmlElement) -> HtmlElement:
    body = root.find("body")
    return body if body is not None else root


def _matched(root: HtmlElement, selectors: Sequence[str], mark: str, marked: bool) -> set[HtmlElement]:
    body = _body(root)
    if marked:
        return {element for element in body.iter() if isinstance(element.tag, str) and element.get(mark) is not None}
    found: set[HtmlElement] = set()
    for selector in selectors:
        try:
            found.update(body.cssselect(selector))
        except SelectorError:  # CSS lxml cannot translate (e.g. :is() with a list): nothing matched here
            continue
    return found


def _outermost(root: HtmlElement, found: set[HtmlElement]) -> list[HtmlElement]:
    """`found` in page order, each once: an element inside another one found is part of that one."""
    return [
        element
        for element in _body(root).iter()
        if element in found and not any(ancestor in found for ancestor in element.iterancestors())
    ]


def drop_matching(root: HtmlElement, selectors: Sequence[str], *, marked: bool) -> int:
    """Remove what `selectors` match in the body (text after an element stays); how many were removed.
    `marked`: annotate.js has matched them (its marks are read), else lxml matches them."""
    body = _body(root)
    dropped = [e for e in _outermost(root, _matched(root, selectors, EXCLUDE_MARK, marked)) if e is not body]
    for element in dropped:
        element.drop_tree()
    return len(dropped)


def matching(root: HtmlElement, selectors: Sequence[str], *, marked: bool) -> list[HtmlElement]:
    """What `selectors` match in the body, outermost, in page order. `marked`: as drop_matching."""
    return _outermost(root, _matched(root, selectors, INCLUDE_MARK, marked))
