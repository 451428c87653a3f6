"""The sandboxes this server manages: each one's ownership lock (so no other server touches it) and
record, who owns which, each session's default, and the recently destroyed ids (so a stale id is
answered "destroyed" rather than "unknown").

Owner isolation lives here: another owner's sandbox is reported exactly like a missing one.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeVar

from host.sandboxes.locks import OwnershipLocks
from host.sandboxes.models import Caller, SandboxRecord
from rpc.errors import BoxwrightError, ErrorCode

TOMBSTONES = 256
K = TypeVar("K")
V = TypeVar("V")


@dataclass(eq=False)
class Place:
    """A sandbox being created, from the capacity check to the create's end. Creates wait on the engine,
    the pool and the network guard before their record exists, so concurrent creates count each other's
    places — without them every one would pass the check. A place stands for its record once there is
    one, and counts again if that record goes before the create ends (a pooled sandbox failing its claim)."""

    owner: str
    sandbox_id: str | None = None


class SandboxRegistry:
    def __init__(self, locks: OwnershipLocks) -> None:
        self.locks = locks
        self._records: dict[str, SandboxRecord] = {}
        self._defaults: dict[tuple[str, str | None], str] = {}  # (owner, session) -> sandbox id
        self._destroyed: OrderedDict[str, str] = OrderedDict()  # sandbox id -> owner
        self._removed: OrderedDict[str, None] = OrderedDict()  # every sandbox this process removed
        self._places: list[Place] = []
        # (owner, session) -> the default that went, and why: a call without sandboxId then says so
        self._gone_defaults: OrderedDict[tuple[str, str | None], tuple[str, str]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._records)

    def count(self, owner: str | None = None) -> int:
        """Sandboxes (of `owner`, or all) against the limits: the records and the places of creates
        whose record does not exist (yet, or any more)."""
        waiting = (p for p in self._places if p.sandbox_id not in self._records)
        if owner is None:
            return len(self._records) + sum(1 for _ in waiting)
        mine = sum(1 for r in self._records.values() if r.owner == owner)
        return mine + sum(1 for p in waiting if p.owner == owner)

    def hold_place(self, owner: str) -> Place:
        place = Place(owner)
        self._places.append(place)
        return place

    def free_place(self, place: Place) -> None:
        """The create ended; freeing twice is harmless."""
        if place in self._places:
            self._places.remove(place)

    def __iter__(self) -> Iterator[SandboxRecord]:
        return iter(list(self._records.values()))

    def record(self, sandbox_id: str) -> SandboxRecord | None:
        """Any owner's record (for the server's own housekeeping, never for a caller)."""
        return self._records.get(sandbox_id)

    def claim(self, sandbox_id: str) -> bool:
        """Take the sandbox's ownership lock; False when a live server (maybe another) holds it."""
        return sandbox_id in self._records or self.locks.try_acquire(sandbox_id)

    def unclaim(self, sandbox_id: str) -> None:
        """Give back a lock taken without adding a record (e.g. to remove an orphan volume)."""
        if sandbox_id not in self._records:
            self.locks.release(sandbox_id)

    def add(self, rec: SandboxRecord, place: Place | None = None) -> None:
        """Manage `rec` (its lock is claimed); the place its create held becomes the record."""
        self._records[rec.id] = rec
        if place is not None:
            place.sandbox_id = rec.id

    def hand_over(self) -> None:
        """Stop managing everything but leave the sandboxes be: the next server adopts them."""
        for sid in list(self._records):
            self.locks.release(sid, forget=False)
        self._records.clear()

    def make_default(self, caller: Caller, sandbox_id: str) -> None:
        if caller.session is not None:  # a sessionless caller's default would be every client's of the owner
            self._defaults[(caller.owner, caller.session)] = sandbox_id
            self._gone_defaults.pop((caller.owner, caller.session), None)

    def forget(self, rec: SandboxRecord, *, tombstone: bool = True) -> None:
        """The sandbox is gone: drop its record and its lock."""
        self._records.pop(rec.id, None)
        self.locks.release(rec.id)
        for key in [k for k, v in self._defaults.items() if v == rec.id]:
            del self._defaults[key]
            _remember(self._gone_defaults, key, (rec.id, rec.removed_because or "removed"))
        if tombstone:
            _remember(self._destroyed, rec.id, rec.owner)
        _remember(self._removed, rec.id, None)

    def removed_here(self, sandbox_id: str) -> bool:
        """Whether this process removed that sandbox (a listing made before its removal may still show it)."""
        return sandbox_id in self._removed

    # -- as a caller sees them ---------------------------------------------------------------
    def owned_by(self, caller: Caller) -> list[SandboxRecord]:
        mine = (r for r in self._records.values() if r.owner == caller.owner)
        return sorted(mine, key=lambda r: (r.created_at, r.id))

    def default_id(self, caller: Caller) -> str | None:
        sid = self._defaults.get((caller.owner, caller.session))
        return sid if sid in self._records else None

    def get(self, caller: Caller, sandbox_id: str) -> SandboxRecord:
        rec = self._records.get(sandbox_id)
        if rec is not None and rec.owner == caller.owner:
            return rec
        if self._destroyed.get(sandbox_id) == caller.owner:
            raise BoxwrightError(
                ErrorCode.SANDBOX_NOT_FOUND,
                f"sandbox {sandbox_id} was destroyed",
                hint="call sandbox_create to make a new sandbox",
                details={"sandboxId": sandbox_id, "reason": "destroyed"},
            )
        # Another owner's sandbox is reported exactly like a missing one: existence is not leaked.
        raise BoxwrightError(ErrorCode.SANDBOX_NOT_FOUND, f"no sandbox {sandbox_id}", details={"sandboxId": sandbox_id})

    def _yours(self, caller: Caller) -> list[SandboxRecord]:
        """The sandboxes a call may pick without an id: a throw-away sandbox of a running job is counted
        in the owner's limits but is not theirs to act on by default."""
        return [r for r in self.owned_by(caller) if r.job is None]

    def implicit_id(self, caller: Caller) -> str | None:
        """The sandbox a call without sandboxId acts on, if there is exactly one (as `resolve` picks it)."""
        default = self.default_id(caller)
        if default:
            return default
        mine = self._yours(caller)
        return mine[0].id if len(mine) == 1 else None

    def resolve(self, caller: Caller, sandbox_id: str | None) -> SandboxRecord:
        """An explicit id, else the session's default sandbox, else the owner's only sandbox."""
        if sandbox_id:
            return self.get(caller, sandbox_id)
        implicit = self.implicit_id(caller)
        if implicit:
            return self._records[implicit]
        mine = self._yours(caller)
        if not mine:
            gone = self._gone_defaults.get((caller.owner, caller.session))
            if gone is not None:
                raise BoxwrightError(
                    ErrorCode.NO_DEFAULT_SANDBOX,
                    f"your default sandbox {gone[0]} is gone ({gone[1]}): this call needs one",
                    details={"sandboxId": gone[0], "reason": "destroyed"},
                )
            raise BoxwrightError(ErrorCode.NO_DEFAULT_SANDBOX, "no sandbox yet: this call needs one")
        raise BoxwrightError(
            ErrorCode.AMBIGUOUS_SANDBOX,
            f"you have {len(mine)} sandboxes and no default one",
            details={"sandboxIds": [r.id for r in mine]},
        )


def _remember(memory: OrderedDict[K, V], key: K, value: V) -> None:
    """Keep what went in a bounded memory: the oldest entries are forgotten past TOMBSTONES."""
    memory[key] = value
    while len(memory) > TOMBSTONES:
        memory.popitem(last=False)
