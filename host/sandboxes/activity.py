"""Is an idle-looking sandbox really idle? The idle timeout counts from the last tool call, but work
goes on without calls: a call still in flight (a long code_run, a sync template run), background
processes, template runs — the host's own (queued for a slot or running) and the agent's —, a person
driving its browser through the live view (a login takes minutes without a tool call). Before the
idle timeout pauses or removes a sandbox, it asks here; busy means the sandbox counts as used now.
The TTL is not asked: it is the hard limit.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from host.agent_client import AgentClient
from host.sandboxes.models import SandboxRecord
from rpc import methods
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError
from rpc.models.sandbox import SandboxActivityParams

log = logging.getLogger(__name__)

ASK_TIMEOUT_S = 5.0
BusySource = Callable[[str], bool]  # sandbox id -> whether something of the host's still needs it


class Activity:
    def __init__(self, agent: AgentClient) -> None:
        self.agent = agent
        self.sources: list[BusySource] = []  # the RunManager's runs in flight, the live view's viewers
        self._in_flight: Counter[str] = Counter()

    @contextmanager
    def call(self, rec: SandboxRecord) -> Iterator[None]:
        """Around every call into the sandbox: it is busy while one is in flight."""
        self._in_flight[rec.id] += 1
        try:
            yield
        finally:
            self._in_flight[rec.id] -= 1
            if self._in_flight[rec.id] <= 0:
                del self._in_flight[rec.id]

    def hosts_work(self, rec: SandboxRecord) -> str | None:
        """Work the server itself is waiting on in the sandbox (calls in flight, its runs, a live view):
        freezing the sandbox would leave that work hanging until its timeout."""
        if n := self._in_flight.get(rec.id):
            return f"{n} call(s) in flight"
        if any(source(rec.id) for source in self.sources):
            return "work of the server's own (a template run, or a person on its live view)"
        return None

    async def busy(self, rec: SandboxRecord) -> str | None:
        """Why the sandbox must not count as idle, or None when nothing runs in it."""
        if reason := self.hosts_work(rec):
            return reason
        if rec.endpoint is None:
            return None
        try:
            found = await self.agent.call(
                rec.endpoint, methods.SANDBOX_ACTIVITY, SandboxActivityParams(), Deadline.after(ASK_TIMEOUT_S)
            )
        except BoxwrightError as exc:
            # Cannot tell (an older image, a sick agent): keep it; the TTL still ends it.
            return f"activity unknown ({exc.code.value})"
        if found.runningProcesses is None:
            return "the code runner is down, its processes may live"
        if found.runningProcesses:
            return f"{found.runningProcesses} background process(es) running"
        if found.runsInFlight:
            return f"{found.runsInFlight} template run(s) in flight"
        return None
