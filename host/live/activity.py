"""Which browser sessions a tool call is acting on right now, for the live view's "the agent is acting"
banner. A SandboxManager listener: every browser call names its session (the default one when it
names none); views subscribe to theirs."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import anyio

from host.profiles.publisher import session_of
from host.sandboxes.models import SandboxRecord
from rpc.methods import Method

Key = tuple[str, str]  # (sandbox id, session id)
State = tuple[bool, str | None]  # (acting, the tool acting)


class _Watch:
    """A change flag a viewer waits on: set by any number of changes, cleared when the viewer reads."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def set(self) -> None:
        self._event.set()

    async def wait(self) -> None:
        await self._event.wait()
        self._event = anyio.Event()


class Activity:
    def __init__(self) -> None:
        self._acting: Counter[Key] = Counter()
        self._tool: dict[Key, str] = {}
        self._subscribers: dict[Key, list[_Watch]] = {}

    def acting(self, sandbox_id: str, session_id: str) -> bool:
        return self._acting[(sandbox_id, session_id)] > 0

    def state(self, key: Key) -> State:
        return (self._acting[key] > 0, self._tool.get(key))

    def _changed(self, key: Key) -> None:
        for watch in self._subscribers.get(key, []):
            watch.set()

    @contextmanager
    def subscribe(self, sandbox_id: str, session_id: str) -> Iterator[AsyncIterator[State]]:
        """The session's state, then each time it changes. A viewer that reads slowly skips intermediate
        states and gets the latest: nothing is queued for it (a stalled viewer once held every change)."""
        key = (sandbox_id, session_id)
        watch = _Watch()
        self._subscribers.setdefault(key, []).append(watch)
        try:
            yield self._states(key, watch)
        finally:
            self._subscribers[key].remove(watch)
            if not self._subscribers[key]:
                del self._subscribers[key]

    async def _states(self, key: Key, watch: _Watch) -> AsyncIterator[State]:
        while True:
            await watch.wait()
            yield self.state(key)

    @contextmanager
    def marked(self, sandbox_id: str, session_id: str, what: str) -> Iterator[None]:
        """Mark a session as acted on for the duration of a block (e.g. a template run on it)."""
        key = (sandbox_id, session_id)
        self._start(key, what)
        try:
            yield
        finally:
            self._end(key)

    def _start(self, key: Key, tool: str) -> None:
        self._acting[key] += 1
        self._tool[key] = tool
        self._changed(key)

    def _end(self, key: Key) -> None:
        self._acting[key] -= 1
        if self._acting[key] <= 0:
            del self._acting[key]
            self._tool.pop(key, None)
        self._changed(key)

    # -- from the SandboxManager's listener (host.live.service) ------------------------------
    def call_started(self, rec: SandboxRecord, method: Method[Any, Any], params: Any) -> None:
        session_id = session_of(method, params)
        if session_id is not None:
            self._start((rec.id, session_id), method.name.replace(".", "_"))

    def call_ended(self, rec: SandboxRecord, method: Method[Any, Any], params: Any) -> None:
        session_id = session_of(method, params)
        if session_id is not None:
            self._end((rec.id, session_id))
