"""scrape's readings of a page, kept a while: for the next parts of a long text, and for `maxAge`.

A markdown or html answer cut into parts (maxChars, or the 1 MiB cap) used to load the page again for
each part: a second or more each time (a throw-away sandbox, then the page), and a page that changed in
between shifted under the offsets. The host asks the agent for the whole text, answers the part asked
for, and keeps the reading: a call with offset > 0 and otherwise the same arguments is cut from it, at
once. A first call with `maxAge` is answered from a reading no older than that (a page an agent reads
again a moment later; links too). Kept per owner (the key is a hash of the owner and the arguments, a
password included; no other owner's call can match it), for MAX_REUSE_AGE_MS, within MAX_CHARS in all
(the least recently used go first).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from rpc.models.scrape import MAX_REUSE_AGE_MS, ScrapePageResult, ScrapeRequest
from rpc.paging import text_part

TTL_S = MAX_REUSE_AGE_MS / 1000
MAX_CHARS = 64 * 1024 * 1024
TEXT_FORMATS = ("markdown", "html")  # read whole and answered in parts
KEPT_FORMATS = (*TEXT_FORMATS, "links")


@dataclass(frozen=True)
class Reading:
    result: ScrapePageResult  # with the whole text
    read_at: float  # on the store's clock
    size: int


def key_of(owner: str, args: ScrapeRequest) -> str:
    """The same for two calls that read the same page alike: everything but where the part starts, its length
    and how old an answer may be."""
    stable = args.model_dump(mode="json", exclude={"offset", "maxChars", "maxAge"})
    return hashlib.sha256(json.dumps([owner, stable], sort_keys=True).encode()).hexdigest()


def part_of(whole: ScrapePageResult, offset: int, max_chars: int | None) -> ScrapePageResult:
    """The part of a whole text's answer that offset/maxChars ask for (cut as the agent cuts: rpc.paging)."""
    fmt = whole.format
    part = text_part(getattr(whole, fmt) or "", offset, max_chars)
    return whole.model_copy(
        update={
            fmt: part.text,
            "truncated": part.truncated or whole.truncated,  # whole.truncated: a file's own pages or entries cut
            "totalChars": part.total,
            "nextOffset": part.next_offset,
        }
    )


def _size(result: ScrapePageResult) -> int:
    if result.format == "links":
        return sum(len(link) for link in result.links or ())
    return len(getattr(result, result.format) or "")


class Readings:
    def __init__(self, ttl_s: float = TTL_S, max_chars: int = MAX_CHARS, clock: Callable[[], float] = time.monotonic):
        self._ttl_s, self._max_chars, self._clock = ttl_s, max_chars, clock
        self._kept: OrderedDict[str, Reading] = OrderedDict()
        self._size = 0

    def get(self, key: str, max_age_ms: int | None = None) -> Reading | None:
        """The reading kept under `key`, while it is fresh (and, given max_age_ms, no older than that)."""
        self._expire()
        kept = self._kept.get(key)
        if kept is None or (max_age_ms is not None and self.age_ms(kept) > max_age_ms):
            return None
        self._kept.move_to_end(key)
        return kept

    def age_ms(self, reading: Reading) -> int:
        return int((self._clock() - reading.read_at) * 1000)

    def reused(self, reading: Reading, answer: ScrapePageResult) -> ScrapePageResult:
        """`answer` (the reading, or a part of it) as a reused one: no time in a browser, and its age."""
        return answer.model_copy(update={"reused": True, "elapsedMs": 0, "ageMs": self.age_ms(reading)})

    def keep(self, key: str, whole: ScrapePageResult) -> None:
        size = _size(whole)
        if size > self._max_chars:
            return
        self._drop(key)
        self._kept[key] = Reading(whole.model_copy(update={"storageState": None}), self._clock(), size)
        self._size += size
        while self._size > self._max_chars:
            self._drop(next(iter(self._kept)))

    def _drop(self, key: str) -> None:
        kept = self._kept.pop(key, None)
        if kept is not None:
            self._size -= kept.size

    def _expire(self) -> None:
        oldest = self._clock() - self._ttl_s
        for key in [k for k, kept in self._kept.items() if kept.read_at <= oldest]:
            self._drop(key)
