"""The global run queue (seed 000 §8.6, §10): at most maxConcurrentRuns runs execute at once, on this
server, all owners together; the others wait.

Who goes next when a slot frees: the waiting run whose owner has the fewest runs executing, the
earliest submitted among those — first come, first served for one owner, and an owner who queued
many runs cannot keep the others waiting behind all of them (before, one owner's seven long runs
held every slot and the queue's head until they ended).

A semaphore alone does not promise an order, so waiters queue here explicitly, and a slot freed while
someone waits is handed straight to the one chosen.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import anyio


@dataclass(eq=False)
class _Waiter:
    key: str
    owner: str
    granted: anyio.Event = field(default_factory=anyio.Event)


class RunSlots:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.running: Counter[str] = Counter()  # owner -> runs holding a slot
        self._waiters: list[_Waiter] = []  # in submission order

    @property
    def holders(self) -> int:
        return self.running.total()

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def position(self, key: str) -> int | None:
        """How many runs submitted before `key` still wait (None when it is not waiting)."""
        for i, waiter in enumerate(self._waiters):
            if waiter.key == key:
                return i
        return None

    async def acquire(self, key: str, owner: str) -> None:
        """Wait for a slot. Cancelling the wait leaves the queue cleanly (a slot handed over at that very
        moment goes on to the next one chosen)."""
        if self.holders < self.limit and not self._waiters:
            self.running[owner] += 1
            return
        waiter = _Waiter(key, owner)
        self._waiters.append(waiter)
        try:
            await waiter.granted.wait()
        except BaseException:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
            elif waiter.granted.is_set():
                self.release(owner)
            raise

    def release(self, owner: str) -> None:
        self.running[owner] -= 1
        if self.running[owner] <= 0:
            del self.running[owner]
        if self._waiters:
            chosen = min(self._waiters, key=lambda w: self.running[w.owner])  # min keeps the earliest of a tie
            self._waiters.remove(chosen)
            self.running[chosen.owner] += 1
            chosen.granted.set()
