"""Resumable streamable-HTTP streams: a bounded in-memory event log, scoped per session.

With an event store the SDK starts every SSE response with a priming event (an event id and the
`retry` interval) and stores each message it sends. When the connection drops during a long call
(a sync code_run of minutes behind a proxy that cuts idle connections, a laptop changing networks)
the client reconnects with `Last-Event-ID` and receives what it missed, including the result.

Scoping: the SDK names a stream by the JSON-RPC request id (or one fixed name for the GET stream),
which every session numbers from the start, so one store shared by all sessions would replay one
owner's results into another's stream. Every session therefore gets its own `SessionEvents` view,
and a replay only ever sees events stored through that view. The log behind the views is shared and
bounded (count and bytes). What goes when it is full is the oldest event of the session holding the
most (of the bound reached), not the oldest of all: a session flooding the log (another owner's, say)
pushes out its own history, not that of everyone else. A stream resumed after its events were dropped
gets nothing replayed, and the client reports the call as lost, as it would without a store.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from dataclasses import dataclass

from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import (
    EventCallback,
    EventId,
    EventMessage,
    EventStore,
    StreamableHTTPServerTransport,
    StreamId,
)
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.types import JSONRPCMessage
from pydantic import TypeAdapter

MAX_EVENTS = 10_000
MAX_BYTES = 128 * 1024 * 1024
RETRY_INTERVAL_MS = 1_000  # how long a client waits before reconnecting (the SSE `retry` field)


# What one stored event costs besides its JSON (the record, its keys in two dicts): counted in the bound.
EVENT_OVERHEAD_BYTES = 256
_MESSAGE: TypeAdapter[JSONRPCMessage] = TypeAdapter(JSONRPCMessage)


@dataclass(frozen=True)
class _Event:
    scope: int
    stream_id: StreamId
    data: bytes | None  # the message as sent (JSON), parsed again only for a replay; None: a priming event

    @property
    def size(self) -> int:
        return EVENT_OVERHEAD_BYTES + (0 if self.data is None else len(self.data))


class EventLog:
    """The shared, bounded storage behind every session's view."""

    def __init__(self, max_events: int = MAX_EVENTS, max_bytes: int = MAX_BYTES) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes
        self._events: OrderedDict[EventId, _Event] = OrderedDict()
        self._bytes = 0
        self._by_scope: dict[int, OrderedDict[EventId, None]] = {}  # each session's events, oldest first
        self._scope_bytes: dict[int, int] = {}
        self._ids = itertools.count(1)
        self._scopes = itertools.count(1)

    def __len__(self) -> int:
        return len(self._events)

    @property
    def stored_bytes(self) -> int:
        return self._bytes

    def session(self) -> SessionEvents:
        return SessionEvents(self, next(self._scopes))

    def add(self, scope: int, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = str(next(self._ids))
        # Kept as its JSON, not as the message: the parsed objects took 6–7 times the bytes the bound counted.
        data = None if message is None else _MESSAGE.dump_json(message, by_alias=True, exclude_none=True)
        event = self._events[event_id] = _Event(scope, stream_id, data)
        self._by_scope.setdefault(scope, OrderedDict())[event_id] = None
        self._scope_bytes[scope] = self._scope_bytes.get(scope, 0) + event.size
        self._bytes += event.size
        while self._events and (len(self._events) > self.max_events or self._bytes > self.max_bytes):
            self._drop_oldest_of(self._heaviest(by_bytes=self._bytes > self.max_bytes))
        return event_id

    def _heaviest(self, *, by_bytes: bool) -> int:
        if by_bytes:
            return max(self._scope_bytes, key=self._scope_bytes.__getitem__)
        return max(self._by_scope, key=lambda scope: len(self._by_scope[scope]))

    def _drop_oldest_of(self, scope: int) -> None:
        ids = self._by_scope[scope]
        event_id, _ = ids.popitem(last=False)
        dropped = self._events.pop(event_id)
        self._bytes -= dropped.size
        self._scope_bytes[scope] -= dropped.size
        if not ids:
            del self._by_scope[scope], self._scope_bytes[scope]

    def forget(self, scope: int) -> None:
        """A session ended (DELETE, idle, refused): its events can never be asked for again."""
        for event_id in self._by_scope.pop(scope, {}):
            self._bytes -= self._events.pop(event_id).size
        self._scope_bytes.pop(scope, None)

    async def replay(self, scope: int, last_event_id: EventId, send: EventCallback) -> StreamId | None:
        last = self._events.get(last_event_id)
        if last is None or last.scope != scope:
            return None
        later = list(self._events.items())
        start = next(i for i, (event_id, _) in enumerate(later) if event_id == last_event_id) + 1
        for event_id, event in later[start:]:
            if event.scope == scope and event.stream_id == last.stream_id and event.data is not None:
                await send(EventMessage(_MESSAGE.validate_json(event.data), event_id))
        return last.stream_id


class SessionEvents(EventStore):
    """One session's view of the log (see the module docstring)."""

    def __init__(self, log: EventLog, scope: int) -> None:
        self._log = log
        self._scope = scope

    def forget(self) -> None:
        self._log.forget(self._scope)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        return self._log.add(self._scope, stream_id, message)

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        return await self._log.replay(self._scope, last_event_id, send_callback)


def give_each_session_its_own_events(manager: StreamableHTTPSessionManager, log: EventLog) -> None:
    """Hand every new session its own view. The SDK passes `manager.event_store` to the transport it
    creates in `_admit_session` (synchronously, under its session lock), so setting it just before
    is exact; if a later SDK renames that method, fail at startup rather than share one store."""
    if not hasattr(manager, "_admit_session"):
        raise RuntimeError("this mcp version creates sessions differently: per-session event stores need updating")
    admit = manager._admit_session

    def admit_with_own_events(requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        events = manager.event_store = log.session()
        transport = admit(requestor)
        if transport is not None:  # every way a session ends (DELETE, idle, shutdown) terminates its transport
            terminate = transport.terminate

            async def terminate_and_forget() -> None:
                try:
                    await terminate()
                finally:
                    events.forget()

            transport.terminate = terminate_and_forget  # type: ignore[method-assign]
        return transport

    manager._admit_session = admit_with_own_events  # type: ignore[method-assign]
    manager.event_store = log.session()
