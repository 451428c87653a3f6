"""The one timeout mechanism: a monotonic deadline that shrinks as it travels inward, and the ladder
that says by how much at each layer.

The MCP tool layer creates a Deadline; each layer inward asks `LADDER` for its own, a little
earlier than the one it was handed, so the innermost layer always fires first and answers with a
structured timeout, and every outer layer is a backstop that never leaves a call hanging:

    in-container operation < agent handler < agent (`deadlineMs`) < RPC backstop < tool backstop

On the wire the deadline travels as `deadlineMs`: the milliseconds the callee may spend, counted
from when it receives the request. A relative budget is immune to clock skew between host and
container (remote Docker engines included).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rpc.method import Method

DEADLINE_FIELD = "deadlineMs"


@dataclass(frozen=True)
class Deadline:
    at: float  # time.monotonic() seconds; the same clock asyncio's loop.time() uses

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + max(0.0, seconds))

    def remaining(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def remaining_ms(self) -> int:
        return int(self.remaining() * 1000)

    def child(self, margin: float) -> Deadline:
        """A deadline `margin` seconds earlier, for the next layer in."""
        return Deadline(self.at - margin)

    def cap(self, seconds: float) -> Deadline:
        """This deadline or `seconds` from now, whichever comes first."""
        return Deadline(min(self.at, time.monotonic() + max(0.0, seconds)))

    def timeout(self) -> asyncio.Timeout:
        """An `async with` scope raising TimeoutError when the deadline passes."""
        return asyncio.timeout_at(self.at)


@dataclass(frozen=True)
class Ladder:
    """How a call's time is shared between the layers it crosses; each layer asks for its own rung."""

    # The agent may spend the operation's own timeout (or the method's default), any long-poll
    # wait, and this much more: time to notice the operation's timeout and answer with it.
    agent_slack_s: float = 2.0
    # The host's HTTP call (the RPC backstop) waits this much longer than the agent's deadline.
    transport_s: float = 0.75
    # The tool layer's backstop fires this much after the RPC backstop.
    tool_s: float = 3.0
    # An agent handler stops this much before the agent's deadline (its structured answer still
    # arrives in time) — but never more than `handler_share` of a small budget.
    handler_s: float = 0.25
    handler_share: float = 0.1
    # The in-container operation (a code run, a Playwright step) ends this much before its handler's
    # deadline: time to collect its output or translate its error and explain it.
    operation_s: float = 0.15

    def agent_budget_ms(self, method: Method[Any, Any], params: object) -> int:
        """The agent's `deadlineMs` for a call made with a fresh deadline (what the tool layer plans for)."""
        op = getattr(params, "timeoutMs", None) or method.default_timeout_ms
        # waitMs: a long-poll's wait; waits_ms: scrape's waitFor and wait actions. Both come on top of timeoutMs.
        waits = int(getattr(params, "waitMs", 0) or 0) + int(getattr(params, "waits_ms", 0) or 0)
        return int(op) + waits + int(self.agent_slack_s * 1000)

    def tool_budget_s(self, method: Method[Any, Any], params: object) -> float:
        """The tool layer's backstop: the agent's budget plus the transport and tool margins."""
        return self.agent_budget_ms(method, params) / 1000 + self.transport_s + self.tool_s

    def rpc(self, tool: Deadline) -> Deadline:
        """The RPC backstop (the host's HTTP call), inside the tool layer's deadline."""
        return tool.child(self.tool_s)

    def agent(self, rpc: Deadline) -> Deadline:
        """What the agent is told (`deadlineMs`), inside the RPC backstop."""
        return rpc.child(self.transport_s)

    def handler(self, agent: Deadline, budget_ms: float) -> Deadline:
        """A dispatcher's handler deadline, inside the `budget_ms` it was given."""
        return agent.child(min(self.handler_s, budget_ms / 1000.0 * self.handler_share))

    def operation(self, handler: Deadline, timeout_ms: float | None = None) -> Deadline:
        """The in-container operation's deadline: its own timeout, and always inside its handler's."""
        end = handler.at - self.operation_s
        if timeout_ms is not None:
            end = min(end, time.monotonic() + timeout_ms / 1000.0)
        return Deadline(end)


LADDER = Ladder()
