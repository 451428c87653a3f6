"""browser.page_info: what kind of page this is, its elements (same refs as snapshot), regions, intents.

The page type comes from cheap heuristics over the accessibility tree (roles, names, counts), a
visible password field and the main document's HTTP status; it is a hint for an agent, not a verdict.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from rpc.models.browser import PageElement, PageInfoParams, PageInfoResult, PageRegion, PageSummary
from sandbox_image.browser.elements import Element, PageModel, capture
from sandbox_image.browser.tab import Tab, a_dialog, cap
from sandbox_image.browser.timeouts import Budget
from sandbox_image.browser.urls import ERROR_PAGE

FIELD_ROLES = frozenset({"textbox", "searchbox", "combobox", "checkbox", "radio", "spinbutton", "slider", "switch"})
_ERROR_WORDS = re.compile(
    r"\b(404|403|500|not found|page not found|forbidden|error|unavailable|can.t be reached)\b", re.I
)
_LOGIN_WORDS = re.compile(r"\b(log ?in|sign ?in|password|anmelden|connexion|登录)\b", re.I)
_SEARCH_WORDS = re.compile(r"\bsearch\b|\bsuche\b|搜索", re.I)
_PAGINATION = re.compile(r"^(next|previous|prev|older|newer|more|load more|next page|[›»→]|\d{1,3})$", re.I)
LISTING_MIN_LINKS = 25
ARTICLE_MIN_CHARS = 1200
ARTICLE_MIN_PARAGRAPHS = 3


@dataclass(frozen=True)
class Signals:
    roles: Counter[str]
    password_fields: int
    paragraph_chars: int
    paragraphs: int
    has_article: bool
    headline: str
    status: int | None
    url: str
    title: str


def _signals(model: PageModel, password_fields: int, status: int | None, url: str, title: str) -> Signals:
    paragraph_chars = paragraphs = 0
    has_article = False
    headline = ""
    for root in model.roots:
        for node in root.walk():
            if node.role == "paragraph":
                paragraphs += 1
                paragraph_chars += len(node.text(5000))
            elif node.role == "article":
                has_article = True
            elif node.role == "heading" and not headline:
                headline = node.name
    return Signals(
        roles=Counter(e.role for e in model.elements),
        password_fields=password_fields,
        paragraph_chars=paragraph_chars,
        paragraphs=paragraphs,
        has_article=has_article,
        headline=headline,
        status=status,
        url=url,
        title=title,
    )


def classify(s: Signals, model: PageModel) -> str:
    fields = sum(s.roles[r] for r in FIELD_ROLES)
    links = s.roles["link"]
    has_search = s.roles["searchbox"] > 0 or any(r.role == "search" for r in model.regions)
    if (s.status or 0) >= 400 or s.url.startswith(ERROR_PAGE):
        return "error"
    if _ERROR_WORDS.search(f"{s.title} {s.headline}") and len(model.elements) < 15 and s.paragraph_chars < 1000:
        return "error"
    if s.password_fields and fields <= 4:
        return "login"
    if has_search and fields <= 3 and links < LISTING_MIN_LINKS:
        return "search"
    if s.paragraph_chars >= ARTICLE_MIN_CHARS and (s.paragraphs >= ARTICLE_MIN_PARAGRAPHS or s.has_article):
        return "article"
    if (fields >= 2 and s.roles["button"]) or s.password_fields:  # password: sign-up, password change
        return "form"
    if links >= LISTING_MIN_LINKS:
        return "listing"
    return "other"


def intents(kind: str, s: Signals, model: PageModel) -> list[str]:
    found: list[str] = []
    if kind == "login" or (s.password_fields and any(_LOGIN_WORDS.search(e.name) for e in model.elements)):
        found.append("login")
    if (
        s.roles["searchbox"]
        or any(r.role == "search" for r in model.regions)
        or any(e.role == "textbox" and _SEARCH_WORDS.search(e.name) for e in model.elements)
    ):
        found.append("search")
    if sum(s.roles[r] for r in FIELD_ROLES) and s.roles["button"]:
        found.append("submit")
    if s.roles["combobox"] or s.roles["listbox"]:
        found.append("select")
    if kind == "article":
        found.append("read")
    if any(e.role in ("link", "button") and _PAGINATION.match(e.name.strip()) for e in model.elements):
        found.append("paginate")
    if s.roles["link"]:
        found.append("navigate")
    return found


def _in_viewport(element: Element, width: int, height: int) -> bool:
    if element.box is None:
        return True
    x, y, w, h = element.box
    return x < width and y < height and x + w > 0 and y + h > 0


def _summary(kind: str, title: str, elements: list[Element], model: PageModel, visible_only: bool) -> str:
    roles = Counter(e.role for e in elements)
    fields = sum(roles[r] for r in FIELD_ROLES)
    where = " in view" if visible_only else ""
    text = (
        f"{kind} page {title!r}: {len(elements)} interactive elements{where} "
        f"({roles['link']} links, {roles['button']} buttons, {fields} fields)"
    )
    if model.regions:
        text += "; regions: " + ", ".join(dict.fromkeys(r.label for r in model.regions[:8]))
    return cap(text, 500)


async def page_info(tab: Tab, params: PageInfoParams, budget: Budget) -> PageInfoResult:
    page = tab.check(dialogs_ok=True)
    title = await tab.title()
    if tab.dialogs:  # the page cannot be read while a dialog blocks it: say so instead of failing
        dialog = tab.dialogs[0].info
        message = cap(dialog.message, 200)
        summary = f"{a_dialog(dialog.type)} is open ({message!r}): answer it with browser_handle_dialog"
        return PageInfoResult(
            tabId=tab.id,
            page=PageSummary(url=tab.url, title=title, type="other", summary=summary),
            elements=[],
            totalElements=0,
            truncated=False,
            regions=[],
            intents=["handle_dialog"],
            pendingDialog=dialog,
        )
    model = await capture(tab, budget, boxes=params.visibleOnly)
    elements = model.elements
    if params.visibleOnly and page.viewport_size:
        size = page.viewport_size
        elements = [e for e in elements if _in_viewport(e, size["width"], size["height"])]
    passwords = await tab.guard(page.locator("css=input[type=password]:visible").count())
    signals = _signals(model, passwords, tab.main_status, tab.url, title)
    kind = classify(signals, model)
    return PageInfoResult(
        tabId=tab.id,
        page=PageSummary(
            url=tab.url, title=title, type=kind, summary=_summary(kind, title, elements, model, params.visibleOnly)
        ),
        elements=[
            PageElement(
                ref=e.ref,
                role=e.role,
                name=e.name,
                value=e.value,
                disabled=e.disabled,
                region=e.region.label if e.region else None,
            )
            for e in elements[: params.maxElements]
        ],
        totalElements=len(elements),
        truncated=len(elements) > params.maxElements,
        regions=[PageRegion(role=r.role, name=r.name, elementCount=r.element_count) for r in model.regions],
        intents=intents(kind, signals, model),
    )
