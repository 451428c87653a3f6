"""browser.state_load and browser.state_export: a login profile's storageState into and out of a session.

Only Playwright's storageState API is used (never a copied profile directory): a loaded state becomes
the `storage_state` of the session's context when its first page makes it; an export is
`context.storage_state()`, which reads cookies and storage without touching the pages — the browser
keeps running and the person or agent on it notices nothing.
"""

from __future__ import annotations

import json
from typing import Any

from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.profiles import (
    EMPTY_STATE,
    MAX_STATE_BYTES,
    StateExportParams,
    StateExportResult,
    StateLoadParams,
    StateLoadResult,
    state_too_large,
)
from sandbox_image.browser.errors import PlaywrightError, clean_message
from sandbox_image.browser.service import BrowserService
from sandbox_image.browser.sessions import Session


async def state_load(service: BrowserService, params: StateLoadParams, _deadline: Deadline) -> StateLoadResult:
    state = params.storageState.model_dump(mode="json")
    session = service.sessions.create(
        params.sessionId, storage_state=state, profile_id=params.profileId, options=params.context_only()
    )
    return StateLoadResult.model_validate(service.sessions_result(session.id).model_dump())


async def export_state(session: Session, *, indexed_db: bool) -> tuple[dict[str, Any], bool]:
    """The session's storageState, and whether it came from its context (a session never used has none:
    what it was opened with is still all it knows). The caller's deadline bounds this."""
    context = session.context
    if context is None:
        return dict(session.storage_state or EMPTY_STATE), False
    try:
        exported = await context.storage_state(indexed_db=indexed_db)
    except PlaywrightError as exc:
        raise BoxwrightError(
            ErrorCode.EXECUTION_ERROR,
            f"cannot export session {session.id!r}: {clean_message(exc)}",
            details={"sessionId": session.id},
        ) from None
    size = len(json.dumps(exported, separators=(",", ":"), ensure_ascii=False).encode())
    if size > MAX_STATE_BYTES:
        raise state_too_large(size, MAX_STATE_BYTES, sessionId=session.id)
    # What a context made after the browser dies starts from, and what an export before then answers: the
    # last state the host had (it publishes each export), not the older one the session was opened with,
    # which would have gone back to the profile as its newest version, undoing a refreshed login.
    session.storage_state = dict(exported)
    return dict(exported), True


async def state_export(service: BrowserService, params: StateExportParams, _deadline: Deadline) -> StateExportResult:
    session = service.sessions.get(params.sessionId)
    state, from_context = await export_state(session, indexed_db=params.indexedDb)
    result = {"sessionId": session.id, "storageState": state, "fromContext": from_context}
    return StateExportResult.model_validate(result)
