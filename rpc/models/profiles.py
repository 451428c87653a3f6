"""Login profiles: what a profile id may be, a Playwright storageState, and the agent's two methods that
move one in and out of a browser session.

Only Playwright's storageState API moves login state (seed 004 §1.3): `browser.state_load` opens a
session whose context is made with `new_context(storage_state=…)`, `browser.state_export` returns
`context.storage_state()`. Neither is an MCP tool: the state holds cookie values, which no tool returns
and nothing logs (the models below keep them out of their repr). The host's profile store
(host/profiles) decides which state goes where.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Field

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.base import Params, Result
from rpc.models.browser import ContextOptions, SessionsResult

# Seed 004 §2.2.1 / §2.5.4: the pattern, and no separators or '..' on top of it (the pattern already
# leaves out '/' and '\', the check says so explicitly so a widened pattern cannot let them in).
PROFILE_ID_PATTERN = r"^[a-zA-Z0-9._-]{1,64}$"
DEFAULT_PROFILE_ID = "master"
_FORBIDDEN_PARTS = ("/", "\\", "..", "\x00")
# A profile's storageState, as JSON: a login's cookies and storage are tens of KiB; a site that fills its
# storage on many origins (each may hold 10 MiB) makes far more, which is refused rather than moved to
# the host and kept.
MAX_STATE_BYTES = 16 * 1024 * 1024


def state_too_large(size: int, limit: int = MAX_STATE_BYTES, **details: object) -> BoxwrightError:
    return BoxwrightError(
        ErrorCode.PAYLOAD_TOO_LARGE,
        f"the session's cookies and site storage come to {size} bytes, more than a profile keeps ({limit})",
        hint="a site filled its storage (localStorage, IndexedDB): the profile keeps its last version; clear "
        "that site's storage in the session (browser_evaluate localStorage.clear()) or use another profile",
        details={**details, "stateBytes": size, "maxStateBytes": limit},
    )


def profile_id_problem(value: str, pattern: str = PROFILE_ID_PATTERN) -> str | None:
    """Why `value` is not a usable profile id, or None. Pure string checks: no path is built here."""
    if any(part in value for part in _FORBIDDEN_PARTS):
        return "must not contain '/', '\\' or '..'"
    if value == ".":
        return "must not be '.'"
    if not re.fullmatch(pattern, value):
        return f"must match {pattern}"
    return None


def _check_profile_id(value: str) -> str:
    problem = profile_id_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


ProfileId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        pattern=PROFILE_ID_PATTERN,
        description="Login profile: letters, digits, '.', '_' and '-', at most 64 (no '..')",
    ),
    AfterValidator(_check_profile_id),
]


class StorageState(Params):
    """A Playwright storageState: cookies and per-origin storage. Other keys Playwright adds (IndexedDB
    lives inside origins) are kept as they are. Never shown in a repr or a log."""

    model_config = ConfigDict(extra="allow", hide_input_in_errors=True)

    cookies: list[dict[str, Any]] = Field(default_factory=list, repr=False, max_length=10_000)
    origins: list[dict[str, Any]] = Field(default_factory=list, repr=False, max_length=10_000)

    def __repr__(self) -> str:
        return f"StorageState(<{len(self.cookies)} cookies, {len(self.origins)} origins>)"

    __str__ = __repr__

    def cookie_domains(self) -> list[str]:
        """The domains cookies are set for (what `profile show` may print; never names or values)."""
        return sorted({str(c.get("domain", "")).lstrip(".") for c in self.cookies if c.get("domain")})


EMPTY_STATE: dict[str, Any] = {"cookies": [], "origins": []}


# -- the agent's methods -------------------------------------------------------------------------
class StateLoadParams(ContextOptions):
    sessionId: str | None = Field(
        None, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$", description="The new session's id; generated if omitted"
    )
    storageState: StorageState = Field(repr=False, description="Loaded into the session's context when it is made")
    profileId: ProfileId | None = Field(None, description="A label only: shown by browser.sessions list")


class StateLoadResult(SessionsResult):
    pass


class StateExportParams(Params):
    sessionId: str = Field(max_length=64, description="The session whose context is exported")
    indexedDb: bool = Field(False, description="Include IndexedDB (large; off unless asked)")


class StateExportResult(Result):
    sessionId: str
    storageState: StorageState = Field(repr=False)
    fromContext: bool = Field(description="False when the session had no context yet (its loaded state is returned)")


# -- what is known of a profile (meta.json, and what list/show add) --------------------------------
class ProfileMeta(Result):
    """meta.json of a profile (seed 004 §2.3): which version its state.json is, who wrote it, and when."""

    profileId: str
    version: int = Field(ge=0, description="0 when created; +1 on every published snapshot")
    updatedAt: str = Field(description="ISO 8601, UTC")
    writerId: str = Field(description="Who published it: host/pid/what")
    checksum: str = Field(description="sha256:<hex> of state.json's bytes")


class ProfileSummary(ProfileMeta):
    """A profile as list and show present it: metadata and cookie domains, never names or values."""

    cookieCount: int
    originCount: int
    cookieDomains: list[str]
    loginInProgress: bool = Field(description="A `boxwright login` holds the profile right now")
    damaged: str | None = Field(
        None, description="Why its files cannot be read (then the other fields are empty): import or log in again"
    )
