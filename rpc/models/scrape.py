"""scrape: one page in, one format out (seed 004 §2.2.1, §2.6).

Three models share `ScrapeOptions` (what to fetch and how): `ScrapeRequest` is the MCP tool's input
(adds where it runs and as which login profile), `ScrapePageParams` is the agent's `scrape.page`
(adds the login state, a Playwright storageState, the fresh context starts with), and
`ScrapeOutput`/`ScrapePageResult` are what comes back (the RPC result also carries the PNG, which the
MCP tool sends as image content instead). `ReadOptions` and `PageText` (how the text formats are read,
and what they answer) are shared with `browser_scrape`, which reads the page a browser tab shows now.

Sizes are capped so every answer fits one MCP message (well under the 10 MiB TypeScript clients
accept, counting that the tool's text block repeats the structured result): text content at
MAX_CONTENT_BYTES, links at MAX_LINKS / MAX_LINKS_BYTES, screenshots at MAX_FULL_PAGE_HEIGHT and
MAX_SCREENSHOT_BYTES; `truncated` says when something was cut. Pages whose HTML is larger than
MAX_PAGE_BYTES are refused with PAGE_TOO_LARGE rather than parsed.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field, StringConstraints, field_validator, model_validator

from rpc.models.base import Params, Result
from rpc.models.browser import (
    MAX_BROWSER_TIMEOUT_MS,
    MAX_FULL_PAGE_HEIGHT,
    ContextOptions,
    TabParams,
    TabResult,
    origin_of,
)
from rpc.models.profiles import DEFAULT_PROFILE_ID, ProfileId, StorageState
from rpc.models.templates import HttpUrl

ScrapeFormat = Literal["markdown", "html", "links", "screenshot", "fullscreenshot"]
SCREENSHOT_FORMATS: frozenset[str] = frozenset({"screenshot", "fullscreenshot"})

MAX_WAIT_FOR_MS = 60_000
DEFAULT_SCRAPE_TIMEOUT_MS = 30_000
MIB = 1024 * 1024
# markdown or html, as a JSON string (escapes counted). Like code_run's output cap (1 MiB): the text block
# repeats the structured result with its escapes escaped again, so even a page of quotes stays < 6 MiB.
MAX_CONTENT_BYTES = 1 * MIB
MAX_LINKS = 10_000
MAX_LINKS_BYTES = 1 * MIB
MAX_SCREENSHOT_BYTES = 4 * MIB  # the PNG; base64 makes it 5.3 MiB on the wire
MAX_PAGE_BYTES = 8 * MIB  # the HTML to parse (the server's or the rendered one)
MAX_PDF_BYTES = 32 * MIB  # a PDF to read as text (markdown, html, links)
# How long the server keeps a page's text (markdown, html) or links after reading it: the next parts of a
# long text come from that reading, and a call with maxAge may be answered from it (host/readings.py).
MAX_REUSE_AGE_MS = 600_000


MAX_SELECTORS = 20


# A CSS selector as document.querySelectorAll takes it: the sandbox's browser checks it before the page
# loads and matches it on the rendered page (sandbox_image/scrape/tags.py).
CssSelector = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500)]


# -- actions: what scrape does on the page, as a visitor would, before it reads it ----------------------
MAX_ACTIONS = 20
MAX_ACTION_REPEAT = 50
MAX_CLICK_ALL = 100  # elements one click action with `all` clicks
MAX_ACTION_WAIT_MS = 30_000
MAX_ACTIONS_WAIT_MS = 60_000  # the `wait` actions' milliseconds together (they add to the call's time, as waitFor)
_REF = re.compile(r"ref_\d+")


def _not_a_ref(selector: str) -> str:
    if _REF.fullmatch(selector):
        raise ValueError(
            "scrape's actions take CSS selectors; a ref (ref_12) names an element of a browser tab's snapshot — "
            "act on that tab with the browser_* tools and read it with browser_scrape"
        )
    return selector


ActionSelector = Annotated[CssSelector, AfterValidator(_not_a_ref)]
# What a reader sees of an element: its text (a button's, a link's), or a field's label or placeholder.
ShownText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
SELECTOR_FIELD = Field(None, description="CSS selector of the one element")
TEXT_FIELD = Field(
    None,
    description="Or the element by the text it shows, whole (e.g. 'Load more'; case and spaces as shown, "
    "leading and trailing spaces aside); hidden ones are not counted",
)
LABEL_FIELD = Field(
    None,
    description="Or the field by its label, aria-label or placeholder, whole (e.g. 'Email', 'Search…')",
)


class _Action(Params):
    optional: bool = Field(
        False,
        description="When its element is not on the page (or not shown), skip this action instead of failing "
        "the call (a cookie notice, a 'Load more' button that may be missing)",
    )
    # The fields that say which element (or how long, for wait): exactly one of them is given.
    ONE_OF: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="after")
    def _one_target(self) -> _Action:
        given = [name for name in self.ONE_OF if getattr(self, name) is not None]
        if self.ONE_OF and len(given) != 1:
            kind = getattr(self, "type", "this")
            raise ValueError(
                f"a {kind} action takes one of {', '.join(self.ONE_OF)}"
                + (f", not {' and '.join(given)} together" if given else "")
            )
        return self


class ClickAction(_Action):
    ONE_OF = ("selector", "text")
    type: Literal["click"]
    selector: ActionSelector | None = SELECTOR_FIELD
    text: ShownText | None = TEXT_FIELD
    repeat: int = Field(
        1,
        ge=1,
        le=MAX_ACTION_REPEAT,
        description="Click again, the page settling in between, up to this many times in all while the element "
        "is still shown (a 'Load more' button until the list is whole)",
    )
    all: bool = Field(
        False,
        description=f"Click every element named that is shown (at most {MAX_CLICK_ALL}), each once, in page order, "
        "instead of the one it must name — every 'Show answer' of a FAQ, every collapsed section",
    )

    @model_validator(mode="after")
    def _all_or_repeat(self) -> ClickAction:
        if self.all and self.repeat > 1:
            raise ValueError("all clicks each element once; repeat clicks one element again — not both")
        return self


class WriteAction(_Action):
    ONE_OF = ("selector", "label")
    type: Literal["write"]
    selector: ActionSelector | None = Field(None, description="CSS selector of the field (its text is replaced)")
    label: ShownText | None = LABEL_FIELD
    text: str = Field(max_length=10_000)
    submit: bool = Field(False, description="Press Enter afterwards (submit the form)")
    keystrokes: bool = Field(
        False,
        description="Type the text key by key (keydown, keypress, keyup for each character) after emptying the "
        "field, for a page that listens to keys (search-as-you-type); default: filled in at once",
    )


class PressAction(_Action):
    type: Literal["press"]
    key: str = Field(min_length=1, max_length=64, description="e.g. 'Enter', 'Escape', 'PageDown', 'Control+A'")
    selector: ActionSelector | None = Field(None, description="Focus this element first; the page's focus if omitted")


class ScrollAction(_Action):
    type: Literal["scroll"]
    direction: Literal["up", "down", "left", "right"] = "down"
    amount: int | None = Field(None, ge=1, le=100_000, description="Pixels; one viewport if omitted")
    selector: ActionSelector | None = Field(None, description="Scroll this element into view instead")
    repeat: int = Field(
        1,
        ge=1,
        le=MAX_ACTION_REPEAT,
        description="Scroll again, the page settling in between, up to this many times in all; stops at the end "
        "of a page that no longer grows (an endless list)",
    )

    @model_validator(mode="after")
    def _repeat_scrolls_the_page(self) -> ScrollAction:
        if self.selector is not None and self.repeat > 1:
            raise ValueError("repeat scrolls the page again; with a selector the element is scrolled into view once")
        return self


class WaitAction(_Action):
    ONE_OF = ("milliseconds", "selector", "text")
    type: Literal["wait"]
    milliseconds: int | None = Field(None, ge=1, le=MAX_ACTION_WAIT_MS, description="Wait this long")
    selector: ActionSelector | None = Field(
        None, description="Or until an element this CSS selector matches is shown (at most 10 s)"
    )
    text: ShownText | None = Field(None, description="Or until an element showing this text, whole, is shown")


class HoverAction(_Action):
    ONE_OF = ("selector", "text")
    type: Literal["hover"]
    selector: ActionSelector | None = Field(None, description="CSS selector of the element to move the mouse onto")
    text: ShownText | None = TEXT_FIELD


class SelectAction(_Action):
    ONE_OF = ("selector", "label")
    type: Literal["select"]
    selector: ActionSelector | None = Field(None, description="CSS selector of a <select>")
    label: ShownText | None = LABEL_FIELD
    values: list[str] = Field(min_length=1, max_length=100, description="Option values or labels to select")


class ScriptAction(_Action):
    type: Literal["script"]
    script: str = Field(
        min_length=1,
        max_length=100_000,
        description="JavaScript run in the page, as browser_evaluate runs it (an expression, or a function body "
        "with return); what it returns, as JSON, is the action's value. Local (stdio) callers only",
    )


ScrapeAction = Annotated[
    ClickAction | WriteAction | PressAction | ScrollAction | WaitAction | HoverAction | SelectAction | ScriptAction,
    Field(discriminator="type"),
]


class ActionDone(Result):
    """What one of the call's actions did."""

    type: str
    times: int = Field(
        description="How often it was done: 0 when it had nothing to act on (optional, and its element was not "
        "shown; a scroll with nowhere to go)"
    )
    navigated: bool = Field(False, description="It sent the page to another document")
    opened: bool = Field(
        False,
        description="It opened a new window (a link with target=_blank): the actions went on, and the page "
        "was read, in it",
    )
    url: str = Field(description="The page's address after it")
    value: Any = Field(None, description="script: what it returned (JSON)")


class _Address(Params):
    url: HttpUrl = Field(description="The page: an absolute http:// or https:// URL")
    format: ScrapeFormat = Field(
        "markdown",
        description="What to return: markdown (default), html, links (absolute, deduplicated, page order), "
        "screenshot (the viewport) or fullscreenshot (the whole page, cut at "
        f"{MAX_FULL_PAGE_HEIGHT} px); one format per call",
    )


class ReadOptions(Params):
    """How a rendered page's text is read: the same for `scrape` and for `browser_scrape` (the page a tab shows)."""

    onlyMainContent: bool = Field(
        True,
        description="markdown/html: only the main content (navigation, ads, footers left out); falls back to the "
        "whole page when the main content comes out empty. Ignored by links and the screenshots",
    )
    offset: int = Field(
        0,
        ge=0,
        description="markdown/html: start the text at this character — to read on where the previous answer was "
        "cut, pass its nextOffset",
    )
    maxChars: int | None = Field(
        None,
        ge=1,
        description="markdown/html: at most this many characters of the text (cut at a line end nearby; "
        "nextOffset says where the rest starts). Default: all of it, up to the size cap",
    )
    includeTags: list[CssSelector] | None = Field(
        None,
        max_length=MAX_SELECTORS,
        description="markdown/html/links: only what these CSS selectors match (e.g. ['article', '.price', "
        "'#specs']), in page order, instead of the main content the models choose",
    )
    excludeTags: list[CssSelector] | None = Field(
        None,
        max_length=MAX_SELECTORS,
        description="markdown/html/links: leave out what these CSS selectors match (e.g. ['.comments', 'aside']), "
        "before the main content is chosen",
    )
    includeIframes: bool = Field(
        False,
        description="markdown/html/links: also read the page's visible iframes and frames (cross-origin ones "
        "too), each in its place; off by default, as embeds are mostly ads, players and widgets. For a page "
        "whose content is in a frame (a frameset page's frames are read without it)",
    )

    @field_validator("includeTags", "excludeTags")
    @classmethod
    def _empty_is_not_given(cls, selectors: list[str] | None) -> list[str] | None:
        """[] as omitted: an empty includeTags selected nothing, so the text came out empty while the answer
        claimed the whole page; excludeTags [] already left nothing out."""
        return selectors or None


class ScrapeOptions(ContextOptions, ReadOptions, _Address):
    """What to fetch and how (fields in this order: url, format, the reading options, the look, then these)."""

    waitFor: int = Field(
        0,
        ge=0,
        le=MAX_WAIT_FOR_MS,
        description="Milliseconds to wait after the page loaded before reading it; 0 (default): wait until it "
        "settles (network quiet and DOM stable, bounded by timeoutMs)",
    )
    timeoutMs: int = Field(
        DEFAULT_SCRAPE_TIMEOUT_MS,
        ge=1_000,
        le=MAX_BROWSER_TIMEOUT_MS,
        description="Time to load and read the page (and do its actions), on top of waitFor and the wait actions",
    )
    actions: list[ScrapeAction] | None = Field(
        None,
        max_length=MAX_ACTIONS,
        description="Done in order once the page has settled (after waitFor), each followed by the page settling "
        "again, before the page is read or captured: click (repeat: a 'Load more' button), write (into a field; "
        "submit), press (a key), scroll (repeat: an endless list), wait (milliseconds, or until a selector is "
        "shown), hover, select (a <select>'s options), script (JavaScript in the page; local callers only). "
        "Elements by CSS selector, or by the text they show "
        "(text: 'Load more') or a field's label or placeholder (label: 'Email'); optional: skip it when its "
        "element is not there. A link that opens a new window is followed into it. `actions` in the result says "
        "what each did",
    )

    @model_validator(mode="after")
    def _auth_for_the_page_by_default(self) -> ScrapeOptions:
        if self.httpAuth is not None and self.httpAuth.origin is None:
            self.httpAuth = self.httpAuth.model_copy(update={"origin": origin_of(self.url)})
        if self.headers and self.headersOrigin is None:
            self.headersOrigin = origin_of(self.url)
        return self

    @field_validator("actions")
    @classmethod
    def _waits_bounded(cls, actions: list[ScrapeAction] | None) -> list[ScrapeAction] | None:
        waited = sum(a.milliseconds or 0 for a in actions or () if isinstance(a, WaitAction))
        if waited > MAX_ACTIONS_WAIT_MS:
            raise ValueError(
                f"the wait actions add up to {waited} ms; at most {MAX_ACTIONS_WAIT_MS} ms in one call "
                "(wait for a selector instead of a time)"
            )
        return actions

    @property
    def waits_ms(self) -> int:
        """What the call waits on purpose — waitFor and the wait actions — on top of timeoutMs (rpc.deadline)."""
        actions = self.actions or []
        return self.waitFor + sum(a.milliseconds or 0 for a in actions if isinstance(a, WaitAction))


class ScrapeRequest(ScrapeOptions):
    """The MCP tool's arguments."""

    profileId: ProfileId = Field(
        DEFAULT_PROFILE_ID, description="Login profile whose cookies and storage the page is opened with"
    )
    sandboxId: str | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="Scrape in this sandbox's browser (e.g. one serving the page). Omitted: in a sandbox the "
        "server manages for scraping — never one of yours",
    )
    maxAge: int = Field(
        0,
        ge=0,
        le=MAX_REUSE_AGE_MS,
        description="markdown/html/links: answer from your own reading of the same page with the same arguments "
        f"made at most this many ms ago (kept up to {MAX_REUSE_AGE_MS // 60_000} minutes), instead of loading it "
        "again; reused and ageMs say so. 0 (default): always load the page",
    )


class ScrapePageParams(ScrapeOptions):
    """scrape.page: the page is opened in a new browser context that is closed afterwards, starting from
    `storageState` when the host has a login profile's snapshot for it (empty otherwise)."""

    storageState: dict[str, Any] | None = Field(
        None,
        description="Playwright storageState (cookies, origins) the context starts with; never logged or returned",
        repr=False,
    )
    exportState: bool = Field(
        False,
        description="Return the context's storageState as it is after the page was read (the host saves it back "
        "to the login profile; the scrape tool never returns it)",
    )
    indexedDb: bool = Field(False, description="With exportState: include IndexedDB (large; off unless asked)")
    wholeText: bool = Field(
        False,
        description="markdown/html: the whole text, whatever offset and maxChars say (up to rpc.paging's "
        "MAX_WHOLE_BYTES); the host keeps it and cuts the parts itself (host/readings.py)",
    )


class ScrapeMetadata(Result):
    """What the page states about itself (its title is the result's `title`); absent when not stated."""

    description: str | None = None
    language: str | None = None
    canonicalUrl: str | None = None
    publishedDate: str | None = None
    modifiedDate: str | None = None
    author: str | None = None
    siteName: str | None = None
    image: str | None = Field(None, description="The page's lead image (og:image, schema.org image), absolute")


class PageText(Result):
    """A rendered page's text formats, as `scrape` and `browser_scrape` answer them."""

    markdown: str | None = None
    html: str | None = None
    links: list[str] | None = None
    metadata: ScrapeMetadata = Field(default_factory=ScrapeMetadata)
    mainContent: bool = Field(False, description="markdown/html hold only the main content")
    fallback: bool = Field(
        False, description="The main content came out empty or implausibly short, so the whole page was returned"
    )
    truncated: bool = Field(
        False,
        description="The content, links or screenshot were cut: to maxChars, or to fit one message (see the "
        "limits); for markdown/html, nextOffset reads on",
    )
    totalChars: int | None = Field(None, description="markdown/html: the length of the whole text, in characters")
    nextOffset: int | None = Field(
        None, description="markdown/html: where the rest of the text starts, when it was cut (pass it as offset)"
    )
    iframes: int | None = Field(
        None, description="With includeIframes: how many frames' documents were read in (markdown, html, links)"
    )


class _Fetched(Result):
    url: str = Field(description="The final URL, after redirects")
    title: str
    status: int | None = Field(description="HTTP status of the page; a status >= 400 still returns the page")
    format: ScrapeFormat
    contentType: str = Field("", description="The page's media type, e.g. text/html")


class ScrapeOutput(PageText, _Fetched):
    """What the scrape tool answers (a screenshot's PNG travels as MCP image content beside it)."""

    width: int | None = Field(None, description="Screenshot width in pixels")
    height: int | None = Field(None, description="Screenshot height in pixels")
    wait: Literal["fixed", "settled", "unsettled"] = Field(
        description="fixed: waited waitFor ms; settled: the page went quiet; unsettled: it never did, so it was "
        "read when the smart wait's bound ran out"
    )
    elapsedMs: int = Field(description="Time spent in the sandbox's browser")
    blocked: int | None = Field(
        None, description="With blockAds or blockResources: how many requests the page made that were not let through"
    )
    cookieBanners: list[str] | None = Field(
        None,
        description="With blockCookieBanners: the consent managers whose popup was refused (e.g. 'onetrust'); "
        "empty when none was found",
    )
    reused: bool = Field(
        False,
        description="The answer comes from an earlier call's reading of the page with the same arguments (a next "
        "part, offset > 0, of a text kept 10 minutes; or a reading within maxAge), not from loading it again; "
        "url, title, status and metadata are that reading's too",
    )
    ageMs: int | None = Field(None, description="With reused: how long ago that reading was made")
    actions: list[ActionDone] | None = Field(None, description="With actions: what each did, in order")


class ScrapePageResult(ScrapeOutput):
    screenshot: str | None = Field(None, description="Base64 PNG (screenshot formats)", repr=False)
    storageState: StorageState | None = Field(None, description="With exportState: the context's state", repr=False)


# -- browser_scrape: the page a tab shows now, read as scrape reads a page -----------------------
TextFormat = Literal["markdown", "html", "links"]
DEFAULT_TAB_SCRAPE_TIMEOUT_MS = 20_000


class _TabFormat(TabParams):
    format: TextFormat = Field(
        "markdown",
        description="What to return: markdown (default), html or links (absolute, deduplicated, page order); "
        "for a picture of the tab, browser_screenshot",
    )


class BrowserScrapeParams(ReadOptions, _TabFormat):
    """browser.scrape: no navigation, no wait: the tab's document as it is (after clicks, typing, a login)."""

    timeoutMs: int = Field(DEFAULT_TAB_SCRAPE_TIMEOUT_MS, ge=1_000, le=MAX_BROWSER_TIMEOUT_MS)


class _TabRead(TabResult):
    format: TextFormat
    contentType: str = Field("", description="The document's media type, e.g. text/html")


class BrowserScrapeResult(PageText, _TabRead):
    elapsedMs: int = Field(description="Time spent reading the tab")
