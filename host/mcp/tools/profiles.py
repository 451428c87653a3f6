"""Login profiles and the live view as tools: browser_sessions (which opens a session from a profile),
browser_live_view (a link a person opens to see and drive a session), profile_list and profile_delete.

A profile is the caller's own (over HTTP the owner named by the bearer token; stdio callers are
`local`): bob's `master` and alice's `master` are two profiles. No tool returns a profile's state or
cookie values; profile_list shows metadata and cookie domains.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio.to_thread
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, create_model

from host.mcp.forward import SANDBOX_ID_DOC, with_sandbox_id
from host.mcp.registry import Invocation, ToolOutput, ToolSpec
from rpc import methods
from rpc.deadline import LADDER
from rpc.errors import BoxwrightError, ErrorCode, invalid_parameter
from rpc.models.browser import SessionsParams, SessionsResult
from rpc.models.profiles import ProfileId, ProfileSummary

if TYPE_CHECKING:
    from host.services import Services

PROFILE_DOC = (
    "With action 'create': open the session from this login profile (yours; created empty on first use). Its "
    "saved cookies and storage are loaded, and what changes in the session is saved back to it."
)
LINK_NOTE = (
    "Give this link to a person: opened in a browser it shows the session live and lets them click and type "
    "(e.g. to log in, solve a CAPTCHA or a 2FA prompt). It works once, in one browser, and expires if unused."
)
SessionsArgs = create_model(
    "BrowserSessionsArgs",
    __base__=with_sandbox_id(SessionsParams, "browser_sessions"),
    profileId=(ProfileId | None, Field(None, description=PROFILE_DOC)),
)


class BrowserSessionsResult(SessionsResult):
    profileId: str | None = Field(None, description="The profile the created session was opened from")
    profileVersion: int | None = Field(None, description="The profile version loaded into it")
    published: bool | None = Field(None, description="On close of a profile session: its state was saved")


class LiveViewArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sandboxId: str | None = Field(None, min_length=1, max_length=64, description=SANDBOX_ID_DOC)
    sessionId: str | None = Field(
        None, min_length=1, max_length=64, description="Browser session to show; the default one if omitted"
    )


class LiveViewResult(BaseModel):
    url: str = Field(description="The live view link (one-time)")
    viewId: str
    sandboxId: str
    sessionId: str
    expiresInSeconds: int = Field(description="The link stops working if nobody opens it within this time")
    note: str


class ProfileListArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProfileListResult(BaseModel):
    profiles: list[ProfileSummary]
    defaultProfileId: str


class ProfileDeleteArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    profileId: ProfileId = Field(description="The login profile to delete (yours), with all its saved cookies")


class ProfileDeleteResult(BaseModel):
    profileId: str
    deleted: bool = Field(description="Always true: a profile that is not there is PROFILE_NOT_FOUND")


def tools(services: Services) -> list[ToolSpec[Any]]:
    manager, profiles, live = services.manager, services.profiles, services.live
    settings = services.settings
    sessions_budget = LADDER.tool_budget_s(methods.BROWSER_SESSIONS, None) + LADDER.tool_budget_s(
        methods.BROWSER_STATE_EXPORT, None
    )

    async def sessions(inv: Invocation[Any]) -> ToolOutput:
        args = inv.args
        deadline = LADDER.rpc(inv.deadline)
        if args.profileId is not None and args.action != "create":
            raise invalid_parameter("profileId", "only with action 'create'", hint="omit profileId, or use 'create'")
        if args.action == "create" and args.profileId is not None:
            opened = await profiles.open(
                inv.caller,
                args.sandboxId,
                args.profileId,
                session_id=args.sessionId,
                deadline=deadline,
                options=args.context_only(),
            )
            version = opened.binding.base_version
            result = BrowserSessionsResult(
                **opened.result.model_dump(), profileId=opened.binding.profile_id, profileVersion=version
            )
            summary = f"create: {result.sessionId} from profile {args.profileId} (version {version})"
            return ToolOutput(result, f"browser_sessions ok: {summary}", opened.binding.sandbox_id)
        rec = manager.resolve(inv.caller, args.sandboxId)
        published = None
        if args.action == "close" and args.sessionId:
            binding = profiles.bound(inv.caller, rec.id, args.sessionId)
            if binding is not None:  # save it before it goes
                outcome = await profiles.close(binding, close_session=False)
                published = outcome is not None and outcome.outcome != "stale"
        params = SessionsParams.model_validate(
            args.model_dump(include=set(SessionsParams.model_fields), exclude_unset=True)
        )
        rec, plain = await manager.call(inv.caller, rec.id, methods.BROWSER_SESSIONS, params, deadline)
        if args.action == "close" and args.sessionId:
            live.session_closed(rec.id, args.sessionId)
        result = BrowserSessionsResult(**plain.model_dump(), published=published)
        return ToolOutput(result, f"browser_sessions ok: {args.action}: {len(result.sessions)} sessions", rec.id)

    async def live_view(inv: Invocation[LiveViewArgs]) -> ToolOutput:
        args = inv.args
        rec = manager.resolve(inv.caller, args.sandboxId)
        session_id = args.sessionId or "default"
        if args.sessionId:
            _, listed = await manager.call(
                inv.caller, rec.id, methods.BROWSER_SESSIONS, SessionsParams(), LADDER.rpc(inv.deadline)
            )
            if session_id not in {s.sessionId for s in listed.sessions}:
                raise BoxwrightError(
                    ErrorCode.SESSION_NOT_FOUND,
                    f"no browser session {session_id!r}",
                    details={"sandboxId": rec.id, "sessionId": session_id},
                )
        view, url = await live.link(inv.caller, rec.id, session_id)
        result = LiveViewResult(
            url=url,
            viewId=view.view_id,
            sandboxId=rec.id,
            sessionId=session_id,
            expiresInSeconds=settings.live_view_link_ttl,
            note=LINK_NOTE,
        )
        return ToolOutput(result, f"browser_live_view ok: live view of {rec.id}/{session_id}", rec.id)

    async def profile_list(inv: Invocation[ProfileListArgs]) -> ToolOutput:
        found = await anyio.to_thread.run_sync(profiles.store.list, inv.caller.owner)
        result = ProfileListResult(profiles=found, defaultProfileId=settings.default_profile_id)
        broken = [p.profileId for p in found if p.damaged]
        tail = f" ({len(broken)} damaged: {', '.join(broken)})" if broken else ""
        return ToolOutput(result, f"profile_list ok: {len(found)} profiles{tail}")

    async def profile_delete(inv: Invocation[ProfileDeleteArgs]) -> ToolOutput:
        await profiles.delete(inv.caller, inv.args.profileId)
        result = ProfileDeleteResult(profileId=inv.args.profileId, deleted=True)
        return ToolOutput(result, f"profile_delete ok: {inv.args.profileId} deleted")

    return [
        ToolSpec(
            name="browser_sessions",
            description="List, create or close browser sessions: isolated contexts with their own cookies and storage "
            "(e.g. two logins side by side). Tools use the default session unless given a sessionId. With profileId, "
            "create opens the session from your saved login profile (e.g. one made with `boxwright login`), and the "
            "session's cookies are saved back to it as it is used and when it is closed. create also sets how the "
            "session opens pages: mobile (a phone's view), locale (a language), timezone, geolocation, "
            "skipTlsVerification (an untrusted certificate accepted), userAgent, httpAuth {username, password, "
            "origin} (one site's HTTP password prompt), proxy {server, username, password}, headers {name: value} "
            "with headersOrigin (sent to that one site), blockAds (no ads or trackers loaded), blockResources "
            "(image, media, font never loaded), blockCookieBanners (cookie-consent popups refused).",
            input=SessionsArgs,
            output=BrowserSessionsResult,
            handler=sessions,
            budget_s=lambda _args: sessions_budget,
            annotations=ToolAnnotations(destructive_hint=False, open_world_hint=True),
        ),
        ToolSpec(
            name="browser_live_view",
            description="A link to watch and drive a browser session live (screen, mouse, keyboard, URL bar, tabs), to "
            "hand to a person: e.g. 'please log in here, then tell me'. Banner on the page while you act on the "
            "session. The link works once and expires unused; it never exposes the sandbox's token.",
            input=LiveViewArgs,
            output=LiveViewResult,
            handler=live_view,
            budget_s=lambda _args: LADDER.tool_budget_s(methods.BROWSER_SESSIONS, None) + 10,
            annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
        ToolSpec(
            name="profile_list",
            description="Your login profiles (for browser_sessions with profileId): version, last update, cookie "
            "domains. Never cookie values.",
            input=ProfileListArgs,
            output=ProfileListResult,
            handler=profile_list,
            budget_s=lambda _args: 10.0,
            annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
        ToolSpec(
            name="profile_delete",
            description="Delete one of your login profiles and every cookie and storage saved in it (a logout "
            "everywhere Boxwright would use it). Refused while browser sessions opened from it are open or a login "
            "is saving to it.",
            input=ProfileDeleteArgs,
            output=ProfileDeleteResult,
            handler=profile_delete,
            budget_s=lambda _args: 10.0,
            annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False, open_world_hint=False),
        ),
    ]
