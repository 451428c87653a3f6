"""scrape (seed 004 §2.2.1): one page, one format, read by a sandbox's Chromium — so untrusted HTML is
parsed only inside a sandbox.

With `sandboxId` the page is read in that sandbox (a fresh browser context, closed afterwards). Without
one, the call gets a throw-away sandbox through the JobSandboxes seam, used for this one call and
removed when it ends — also on failure, timeout or cancellation; it counts in the caller's limits but is
never their default, and a server restarted after a crash removes it (JobSandboxes.sweep).
Ephemeral rather than pooled: nothing (cookies, cache, service workers, processes) can carry from one
call to the next, at the price of a sandbox start per call (figures in docs/scrape-quality.md).

`profileId` is validated by the model before anything happens; which login state it stands for is
`login_state` below — the one place the profile store plugs in.
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from typing import Any

import anyio
from mcp.types import ToolAnnotations

from host.mcp.registry import Invocation, ToolOutput, ToolSpec
from host.mcp.results import image
from host.sandboxes.jobs import JobSandboxes
from host.sandboxes.manager import SandboxManager
from host.sandboxes.models import Caller
from rpc import methods
from rpc.deadline import LADDER
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.scrape import (
    DEFAULT_PROFILE_ID,
    MAX_CONTENT_BYTES,
    MAX_FULL_PAGE_HEIGHT,
    MAX_LINKS,
    ScrapeOutput,
    ScrapePageParams,
    ScrapePageResult,
    ScrapeRequest,
)

# A job sandbox is removed within this much once the call ends (the container's stop and removal).
RELEASE_S = 15.0


async def login_state(caller: Caller, profile_id: str) -> dict[str, Any] | None:
    """The storageState a scrape with `profile_id` starts from (None: a fresh, empty context).

    THE SEAM for login profiles (issue 11): the profile store replaces this body — read the caller's
    latest snapshot of `profile_id` (owner-scoped), or raise PROFILE_NOT_FOUND / PROFILE_BUSY. Until then
    the default profile is the empty one (seed TC-06: `master` exists without anyone logging in) and any
    other id is refused rather than silently ignored. `profile_id` has passed PROFILE_ID_PATTERN already.
    """
    if profile_id == DEFAULT_PROFILE_ID:
        return None
    raise BoxwrightError(
        ErrorCode.PROFILE_NOT_FOUND,
        f"no login profile {profile_id!r}: this server has no login profiles yet, only the empty "
        f"default {DEFAULT_PROFILE_ID!r}",
        hint=f"omit profileId (or pass {DEFAULT_PROFILE_ID!r}) to scrape without a login; to scrape as a logged-in "
        "user, log in with browser_* tools in a sandbox and use its browser",
        details={"profileId": profile_id},
    )


def _summary(r: ScrapePageResult) -> str:
    status = f" [{r.status}]" if r.status else ""
    if r.format in ("markdown", "html"):
        text = r.markdown if r.format == "markdown" else r.html
        what = f"{r.format}, {len(text or '')} chars" + (
            ", main content" if r.mainContent else ", whole page (fallback)" if r.fallback else ", whole page"
        )
    elif r.format == "links":
        what = f"{len(r.links or [])} links"
    else:
        what = f"{r.width}x{r.height} PNG"
    cut = " (truncated)" if r.truncated else ""
    return f"scrape ok: {r.url}{status} ({r.title}): {what}{cut}"


def _present(r: ScrapePageResult, sandbox_id: str | None) -> ToolOutput:
    """The PNG travels as MCP image content; the structured result is everything else."""
    out = ToolOutput(ScrapeOutput.model_validate(r.model_dump(exclude={"screenshot"})), _summary(r), sandbox_id)
    return replace(out, extra=[image(r.screenshot)]) if r.screenshot else out


DESCRIPTION = (
    "Read one web page in a sandboxed browser and return it in one format: markdown (default: the main "
    "content, navigation and boilerplate left out; onlyMainContent=false for the whole page), html, links "
    "(absolute, deduplicated, in page order), screenshot (the viewport) or fullscreenshot (the whole page, "
    f"at most {MAX_FULL_PAGE_HEIGHT} px), plus the final url, title, HTTP status and the page's metadata "
    "(description, language, canonical URL, published date, author). waitFor>0 waits that many ms after load; "
    "otherwise it waits until the page settles. Runs in a throw-away sandbox removed afterwards, or in your "
    "sandbox with sandboxId (e.g. one serving the page on localhost). The sandbox's network mode applies. "
    f"Text is cut at {MAX_CONTENT_BYTES // 1024 // 1024} MiB and links at {MAX_LINKS} (truncated=true says so). "
    "An HTTP error status still returns the page."
)


def tools(manager: SandboxManager, jobs: JobSandboxes) -> list[ToolSpec[Any]]:
    async def scrape(inv: Invocation[ScrapeRequest]) -> ToolOutput:
        args = inv.args
        state = await login_state(inv.caller, args.profileId)
        params = ScrapePageParams.model_validate(
            {**args.model_dump(exclude={"profileId", "sandboxId"}, exclude_unset=True), "storageState": state}
        )
        if args.sandboxId is not None:
            rec, result = await manager.call(inv.caller, args.sandboxId, methods.SCRAPE_PAGE, params, rpc_deadline(inv))
            return _present(result, rec.id)
        jobs.check_room(inv.caller)
        rec = await jobs.acquire(
            inv.caller, f"scrape_{secrets.token_hex(6)}", deadline=inv.deadline.cap(manager.settings.startup_timeout)
        )
        try:
            _, result = await manager.call(inv.caller, rec.id, methods.SCRAPE_PAGE, params, rpc_deadline(inv))
        except BoxwrightError as exc:  # the sandbox named in details is gone by the time the caller reads it
            details = {k: v for k, v in exc.details.items() if k != "sandboxId"}
            raise BoxwrightError(exc.code, exc.message, hint=exc.hint, details=details) from exc
        finally:
            with anyio.CancelScope(shield=True):
                await jobs.release(rec)
        return _present(result, None)  # the sandbox is gone: do not name it

    def rpc_deadline(inv: Invocation[ScrapeRequest]) -> Any:
        """The RPC backstop inside the tool's deadline, minus the time a job sandbox takes to go away."""
        deadline = LADDER.rpc(inv.deadline)
        return deadline if inv.args.sandboxId is not None else deadline.child(RELEASE_S)

    def budget_s(args: ScrapeRequest) -> float:
        own = LADDER.tool_budget_s(methods.SCRAPE_PAGE, args)
        return own if args.sandboxId is not None else own + manager.settings.startup_timeout + RELEASE_S

    return [
        ToolSpec(
            name="scrape",
            title="Scrape a web page",
            description=DESCRIPTION,
            input=ScrapeRequest,
            output=ScrapeOutput,
            handler=scrape,
            budget_s=budget_s,
            annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
        )
    ]
