"""A browser operation's time: the ladder's in-container rung, as Playwright wants it.

Every Playwright timeout is what `LADDER.operation` leaves of the handler's deadline (and of the
call's own timeoutMs), so our structured error (ELEMENT_NOT_FOUND, NAVIGATION_TIMEOUT…) always
reaches the caller before the dispatcher's generic OPERATION_TIMEOUT or the host's backstop fires.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from rpc.deadline import LADDER, Deadline


@dataclass(frozen=True)
class Budget(Deadline):
    """The operation's Deadline, and when it started (for "… within N ms" messages)."""

    started: float = field(default_factory=time.monotonic)

    @classmethod
    def of(cls, handler: Deadline, timeout_ms: int | None) -> Budget:
        started = time.monotonic()
        return cls(LADDER.operation(handler, timeout_ms).at, started)

    def ms(self) -> float:
        """For Playwright's `timeout=`: never 0, which Playwright reads as "no timeout"."""
        return max(1.0, self.remaining() * 1000.0)

    def seconds(self) -> float:
        return self.remaining()

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    @property
    def total_ms(self) -> int:
        """The whole budget, for messages ("… within 10000 ms")."""
        return max(0, int((self.at - self.started) * 1000))
