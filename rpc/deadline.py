"""The one timeout mechanism: a monotonic deadline that shrinks as it travels inward.

The MCP tool layer creates a Deadline; the RPC client gives the agent less than what is left
(`child`); the agent gives its operation less again. The innermost layer therefore always fires
first and answers with a structured timeout; outer layers are backstops.

On the wire the deadline travels as `deadlineMs`: the milliseconds the callee may spend, counted
from when it receives the request. A relative budget is immune to clock skew between host and
container (remote Docker engines included).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

DEADLINE_FIELD = "deadlineMs"


@dataclass(frozen=True)
class Deadline:
    at: float  # time.monotonic() seconds; the same clock asyncio's loop.time() uses

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + max(0.0, seconds))

    @classmethod
    def after_ms(cls, ms: float) -> Deadline:
        return cls.after(ms / 1000.0)

    def remaining(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def remaining_ms(self) -> int:
        return int(self.remaining() * 1000)

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self.at

    def child(self, margin: float) -> Deadline:
        """A deadline `margin` seconds earlier, for the next layer in."""
        return Deadline(self.at - margin)

    def cap(self, seconds: float) -> Deadline:
        """This deadline or `seconds` from now, whichever comes first."""
        return Deadline(min(self.at, time.monotonic() + max(0.0, seconds)))

    def timeout(self) -> asyncio.Timeout:
        """An `async with` scope raising TimeoutError when the deadline passes."""
        return asyncio.timeout_at(self.at)
