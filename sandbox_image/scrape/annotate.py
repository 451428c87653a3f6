"""The rendered page as annotated HTML: what the reader cannot see and where the blocks are.

The script (annotate.js) runs in the page, so it sees computed styles and layout that no static
extractor has; it marks a clone and leaves the live page alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rpc.errors import invalid_parameter

if TYPE_CHECKING:
    from playwright.async_api import Page


MAX_BOXES = 20_000


@cache
def annotate_script() -> str:
    return (Path(__file__).with_name("annotate.js")).read_text(encoding="utf-8")


@dataclass(frozen=True)
class AnnotatedDom:
    """The page's HTML with data-bw-* marks, plus what the page said about itself."""

    html: str
    url: str
    title: str = ""
    lang: str = ""
    width: int = 0
    height: int = 0
    stats: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_script(cls, raw: Any, url: str) -> AnnotatedDom:
        """Validate what the page script returned (the page's own scripts share that world)."""
        if isinstance(raw, dict) and isinstance(raw.get("badSelector"), str):
            field = "excludeTags" if raw.get("field") == "excludeTags" else "includeTags"
            raise invalid_parameter(
                field,
                f"the browser cannot match {raw['badSelector'][:200]!r}: {str(raw.get('reason'))[:300]}",
                hint="give CSS selectors as in document.querySelectorAll, e.g. 'article', '.price', '#specs > p'",
            )
        if not isinstance(raw, dict) or not isinstance(raw.get("html"), str):
            raise ValueError("the annotation script returned no HTML")
        stats_raw = raw.get("stats")
        stats: dict[str, Any] = stats_raw if isinstance(stats_raw, dict) else {}
        return cls(
            html=raw["html"],
            url=url,
            title=str(raw.get("title") or "")[:2000],
            lang=str(raw.get("lang") or "")[:64],
            width=int(raw.get("width") or 0),
            height=int(raw.get("height") or 0),
            stats={str(k): int(v) for k, v in stats.items() if isinstance(v, int | float)},
        )


@dataclass(frozen=True)
class Selectors:
    """scrape's includeTags / excludeTags, matched by annotate.js (tags.py reads the marks)."""

    include: Sequence[str] | None = None
    exclude: Sequence[str] | None = None

    def options(self) -> dict[str, list[str]]:
        return {"include": list(self.include or ()), "exclude": list(self.exclude or ())}


async def annotate_page(page: Page, selectors: Selectors | None = None) -> AnnotatedDom:
    """Run the annotation script in `page` and return its marked HTML."""
    options = {"maxBoxes": MAX_BOXES, **(selectors.options() if selectors else {})}
    raw = await page.evaluate(annotate_script(), options)
    return AnnotatedDom.from_script(raw, page.url)
