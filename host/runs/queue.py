"""The global run queue (seed 000 §8.6, §10): at most maxConcurrentRuns runs execute at once, on this
server, all owners together; the others wait and start strictly in the order they were submitted.

A semaphore alone does not promise that order, so waiters queue here explicitly, and a slot freed
while someone waits is handed straight to the first of them.
"""

from __future__ import annotations

from collections import deque

import anyio


class FifoSlots:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.holders = 0
        self._waiters: deque[tuple[str, anyio.Event]] = deque()

    def position(self, key: str) -> int | None:
        """How many runs wait ahead of `key` (None when it is not waiting)."""
        for i, (waiting, _) in enumerate(self._waiters):
            if waiting == key:
                return i
        return None

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    async def acquire(self, key: str) -> None:
        """Wait for a slot, first come first served. Cancelling the wait leaves the queue cleanly (a
        slot handed over at that very moment goes on to the next waiter)."""
        if self.holders < self.limit and not self._waiters:
            self.holders += 1
            return
        entry = (key, anyio.Event())
        self._waiters.append(entry)
        try:
            await entry[1].wait()
        except BaseException:
            if entry in self._waiters:
                self._waiters.remove(entry)
            elif entry[1].is_set():
                self.release()
            raise

    def release(self) -> None:
        if self._waiters:
            _, granted = self._waiters.popleft()
            granted.set()  # the slot passes to the first waiter: holders stay the same
        else:
            self.holders -= 1
