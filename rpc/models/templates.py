"""Inputs and outputs of the three templates; their JSON Schemas are the catalog's inputsSchema/outputsSchema.

Inputs are checked on the host before a sandbox is made and again by the agent before a session or
tab is opened (both import these models). Defaults follow seed 001 §5 for batch_extract_pages.
"""

from __future__ import annotations

from typing import Annotated, Self
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, field_validator, model_validator

from rpc.models.base import Params, Result
from rpc.models.browser import ContentSection, PageElement, port_error
from rpc.models.profiles import ProfileId
from rpc.models.tasks import ResultSummary, StepInfo, StepStatus

MAX_BATCH_URLS = 1000
# The urls of one batch together: 1000 of the longest (8192) would be an 8 MB request, past the HTTP
# server's body limit (4 MiB), refused there with no word about which field to shorten.
MAX_BATCH_URL_CHARS = 1_000_000
MAX_BATCH_CONCURRENCY = 5
DEFAULT_BATCH_CONCURRENCY = 3
MIN_COMPARE_URLS = 2
MAX_COMPARE_URLS = 10
MAX_LOGIN_FIELDS = 20


def _http_url(value: str) -> str:
    value = value.strip()
    try:
        parts = urlsplit(value)
    except ValueError:
        raise ValueError("not a URL") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise ValueError("must be an absolute http:// or https:// URL")
    problem = port_error(value)  # said now, not by the browser (an internal message) after a sandbox started
    if problem is not None:
        raise ValueError(problem)
    return value


HttpUrl = Annotated[str, Field(min_length=1, max_length=8192), AfterValidator(_http_url)]
NavigationTimeout = Annotated[
    int, Field(ge=1_000, le=120_000, description="Per page load attempt (the run's deadline still applies)")
]


class TemplateOutput(Result):
    """Every template's result starts with a summary of its items (seed 000 §4)."""

    summary: ResultSummary


class PageOutcome(Result):
    """What every per-URL item says, whatever the template."""

    url: str = Field(description="The URL as given")
    success: bool
    status: StepStatus = Field(description="succeeded, failed, or skipped (never started: the run was canceled)")
    attempts: int = Field(0, description="Page loads tried (2 after a retry)")
    finalUrl: str | None = Field(None, description="Where the page ended up (query and fragment left out)")
    httpStatus: int | None = None
    title: str | None = None
    error: str | None = None
    errorCode: str | None = Field(None, description="Tool-level code of the failure (NAVIGATION_TIMEOUT, …)")
    failedStep: str | None = Field(None, description="The operation that failed: create_tab, navigate, …")
    elapsedMs: int | None = None


# -- batch_extract_pages (seed 001 §5) ----------------------------------------------------------
class ExtractOptions(Params):
    pageInfo: bool = Field(True, description="Page type, summary and interactive elements")
    content: bool = Field(True, description="Main text, as sections split at headings")
    maxElements: int = Field(50, ge=0, le=1000)
    maxContentLength: int = Field(4000, ge=100, le=200_000)
    markdown: bool = Field(
        False,
        description="The main content as markdown too, read by the scrape engine (as browser_scrape reads a tab: "
        "headings, lists, tables, code, absolute links), at most maxContentLength characters",
    )


class BatchExtractInputs(Params):
    urls: list[HttpUrl] = Field(min_length=1, max_length=MAX_BATCH_URLS)
    extract: ExtractOptions = Field(default_factory=ExtractOptions)
    concurrency: int = Field(
        DEFAULT_BATCH_CONCURRENCY,
        ge=1,
        le=MAX_BATCH_CONCURRENCY,
        description="Tabs working at once (also capped by the tabs left in the session)",
    )
    navigationTimeoutMs: NavigationTimeout = 30_000

    @field_validator("urls")
    @classmethod
    def _within_one_request(cls, urls: list[str]) -> list[str]:
        total = sum(len(u) for u in urls)
        if total > MAX_BATCH_URL_CHARS:
            raise ValueError(
                f"{len(urls)} URLs of {total} characters together, at most {MAX_BATCH_URL_CHARS}: split them into "
                "several runs"
            )
        return urls


class BatchExtractItem(PageOutcome):
    pageType: str | None = None
    summary: str | None = None
    elementCount: int | None = None
    elements: list[PageElement] | None = None
    intents: list[str] | None = None
    contentSections: int | None = None
    content: list[ContentSection] | None = None
    contentLength: int | None = Field(None, description="Characters of main text before maxContentLength")
    contentTruncated: bool | None = None
    markdown: str | None = Field(None, description="With extract.markdown: the main content as markdown")
    markdownLength: int | None = Field(None, description="Characters of that markdown before maxContentLength")
    markdownTruncated: bool | None = None


class BatchExtractOutput(TemplateOutput):
    items: list[BatchExtractItem] = Field(description="One per input URL, in input order")


# -- multi_tab_compare --------------------------------------------------------------------------
class CompareInputs(Params):
    urls: list[HttpUrl] = Field(min_length=MIN_COMPARE_URLS, max_length=MAX_COMPARE_URLS)
    maxElements: int = Field(20, ge=0, le=1000)
    maxContentLength: int = Field(20_000, ge=100, le=200_000)
    navigationTimeoutMs: NavigationTimeout = 30_000


class CompareItem(PageOutcome):
    pageType: str | None = None
    summary: str | None = None
    elementCount: int | None = None
    elements: list[PageElement] | None = None
    content: list[ContentSection] | None = None
    contentLength: int | None = None
    wordCount: int | None = None


class PageFacts(Result):
    url: str
    title: str
    wordCount: int = Field(description="Words of the main text read (up to maxContentLength)")
    headings: list[str]
    prices: list[str] = Field(description="Amounts with a currency, as written on the page")
    numbers: list[str]


class PageValues(Result):
    url: str
    values: list[str]


class Comparison(Result):
    pages: list[PageFacts] = Field(description="The pages that loaded, in input order")
    sameTitle: bool
    sharedHeadings: list[str] = Field(description="Headings found on every page")
    differingHeadings: list[PageValues] = Field(description="Per page, its headings not on every page")
    sharedPrices: list[str]
    differingPrices: list[PageValues]
    sharedNumbers: list[str]
    differingNumbers: list[PageValues]
    wordCountMin: int
    wordCountMax: int


class CompareOutput(TemplateOutput):
    items: list[CompareItem] = Field(description="One per input URL, in input order")
    comparison: Comparison | None = Field(None, description="Across the pages that loaded (none if none did)")


# -- login_keep_session -------------------------------------------------------------------------
class LoginField(Params):
    selector: str | None = Field(None, max_length=2000, description="CSS selector of the field")
    label: str | None = Field(None, max_length=500, description="Its label text, instead of a selector")
    value: str = Field(max_length=10_000, repr=False)
    secret: bool = Field(
        False, description="Never shown anywhere (password fields are treated as secret whether marked or not)"
    )

    @model_validator(mode="after")
    def _one_locator(self) -> Self:
        if (self.selector is None) == (self.label is None):
            raise ValueError("give exactly one of selector and label")
        return self


class LoginSubmit(Params):
    selector: str | None = Field(None, max_length=2000, description="CSS selector of the submit button")
    text: str | None = Field(None, max_length=500, description="The button's accessible name, instead")

    @model_validator(mode="after")
    def _one_locator(self) -> Self:
        if (self.selector is None) == (self.text is None):
            raise ValueError("give exactly one of selector and text")
        return self


class LoginSuccess(Params):
    """Every condition given must hold; at least one is required."""

    urlPattern: str | None = Field(None, max_length=2000, description="Glob on the URL, e.g. '*/account*'")
    textPresent: str | None = Field(None, max_length=1000, description="Text shown on the page")
    elementPresent: str | None = Field(None, max_length=2000, description="CSS selector of a visible element")

    @model_validator(mode="after")
    def _some_condition(self) -> Self:
        if self.urlPattern is None and self.textPresent is None and self.elementPresent is None:
            raise ValueError("give at least one of urlPattern, textPresent, elementPresent")
        return self


class LoginInputs(Params):
    loginUrl: HttpUrl
    fields: list[LoginField] = Field(min_length=1, max_length=MAX_LOGIN_FIELDS)
    submit: LoginSubmit | None = Field(None, description="Default: press Enter in the last field")
    success: LoginSuccess
    navigationTimeoutMs: NavigationTimeout = 30_000
    actionTimeoutMs: int = Field(
        10_000, ge=500, le=120_000, description="How long a field or button may take to appear"
    )
    verifyTimeoutMs: int = Field(10_000, ge=500, le=120_000, description="How long to wait for the success condition")
    publishToProfile: ProfileId | None = Field(
        None,
        description="On success, the host publishes the logged-in session's storageState to this login profile "
        "(yours), for browser_sessions, scrape and runs with profileId",
    )


class LoginOutput(TemplateOutput):
    summary: ResultSummary = Field(description="Over the login's steps")
    items: list[StepInfo] = Field(description="The steps: open, fill…, submit, verify (no field values)")
    loggedIn: bool
    sessionId: str | None = Field(None, description="The session holding the login (kept open on success)")
    tabId: str | None = None
    finalUrl: str | None = None
    title: str | None = None
