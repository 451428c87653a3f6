"""Per-call time budget for Playwright steps.

Every Playwright timeout is min(the call's timeoutMs, what the dispatcher's deadline leaves minus a
safety margin), so our structured error (ELEMENT_NOT_FOUND, NAVIGATION_TIMEOUT…) always reaches the
caller before the dispatcher's generic OPERATION_TIMEOUT or the host's backstop fires.
"""

from __future__ import annotations

import time

from rpc.deadline import Deadline

# Time kept back for translating an error and the small follow-up calls that explain it.
SAFETY_S = 0.15


class Budget:
    def __init__(self, deadline: Deadline, timeout_ms: int | None) -> None:
        self.started = time.monotonic()
        end = deadline.at - SAFETY_S
        if timeout_ms is not None:
            end = min(end, self.started + timeout_ms / 1000.0)
        self.end = end

    def ms(self) -> float:
        """For Playwright's `timeout=`: never 0, which Playwright reads as "no timeout"."""
        return max(1.0, (self.end - time.monotonic()) * 1000.0)

    def seconds(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    @property
    def total_ms(self) -> int:
        """The whole budget, for messages ("… within 10000 ms")."""
        return max(0, int((self.end - self.started) * 1000))
