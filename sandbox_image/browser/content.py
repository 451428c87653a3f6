"""browser.page_content: the page's main text, as sections split at its headings.

The main content is <main> (or role=main, or a lone <article>) when it holds real text, else the
body. Text is innerText, so it reads as rendered; headings are matched against its lines.
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, Field, ValidationError

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.browser import ContentSection, PageContentParams, PageContentResult
from sandbox_image.browser.errors import PlaywrightError, execution_error
from sandbox_image.browser.tab import Tab
from sandbox_image.browser.timeouts import Budget

_EXTRACT = """maxLength => {
  const norm = s => (s || "").replace(/\\s+/g, " ").trim();
  const text = el => el.innerText || "";
  const pick = () => {
    const main = document.querySelector("main, [role=main]");
    if (main && norm(text(main)).length >= 200) return main;
    const articles = document.querySelectorAll("article");
    if (articles.length === 1 && norm(text(articles[0])).length >= 200) return articles[0];
    return document.body || document.documentElement;
  };
  const root = pick();
  if (!root) return {sections: [], totalLength: 0};
  const levels = new Map();
  for (const h of root.querySelectorAll("h1, h2, h3, h4, h5, h6, [role=heading]")) {
    const t = norm(text(h));
    if (!t || levels.has(t)) continue;
    const level = Number(h.getAttribute("aria-level")) || Number(h.tagName.slice(1)) || 2;
    levels.set(t, Math.min(Math.max(level, 1), 6));
  }
  const sections = [];
  let current = {heading: "", level: 0, lines: []};
  for (const raw of text(root).split("\\n")) {
    const line = norm(raw);
    if (!line) continue;
    if (levels.has(line)) {
      if (current.heading || current.lines.length) sections.push(current);
      current = {heading: line, level: levels.get(line), lines: []};
    } else {
      current.lines.push(line);
    }
  }
  if (current.heading || current.lines.length) sections.push(current);
  let total = 0, room = maxLength;
  const out = [];
  for (const s of sections) {
    const body = s.lines.join("\\n");
    total += s.heading.length + body.length;
    if (room <= 0) continue;
    const heading = s.heading.slice(0, room);
    room -= heading.length;
    const kept = body.slice(0, Math.max(room, 0));
    room -= kept.length;
    out.push({heading, level: s.level, text: kept});
  }
  return {sections: out, totalLength: total};
}"""


class _Extracted(BaseModel):
    """What the page script returned; validated because the page's own scripts run in that world."""

    sections: list[ContentSection] = Field(max_length=100_000)
    totalLength: int = Field(ge=0)


async def page_content(tab: Tab, params: PageContentParams, budget: Budget) -> PageContentResult:
    page = tab.check()
    try:
        raw = await tab.guard(asyncio.wait_for(page.evaluate(_EXTRACT, params.maxLength), budget.seconds()))
        extracted = _Extracted.model_validate(raw)
    except TimeoutError:
        raise BoxwrightError(ErrorCode.OPERATION_TIMEOUT, f"reading the page took over {budget.total_ms} ms") from None
    except PlaywrightError as exc:
        raise execution_error("reading the page content", exc) from None
    except ValidationError:
        raise BoxwrightError(ErrorCode.EXECUTION_ERROR, "the page returned unreadable content") from None
    # Enforce the cap here too: the extraction ran where the page's scripts could interfere.
    sections: list[ContentSection] = []
    room = params.maxLength
    for section in extracted.sections:
        if room <= 0:
            break
        heading = section.heading[:room]
        text = section.text[: max(room - len(heading), 0)]
        room -= len(heading) + len(text)
        sections.append(ContentSection(heading=heading, level=section.level, text=text))
    kept = sum(len(s.heading) + len(s.text) for s in sections)
    return PageContentResult(
        tabId=tab.id,
        url=tab.url,
        title=await tab.title(),
        sections=sections,
        totalLength=max(extracted.totalLength, kept),
        truncated=extracted.totalLength > kept,
    )
