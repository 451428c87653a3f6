"""scrape's long texts, kept for the parts after the first.

A markdown or html answer cut into parts (maxChars, or the 1 MiB cap) used to load the page again for
each part: a second or more each time (a throw-away sandbox, then the page), and a page that changed in
between shifted under the offsets. The host now asks the agent for the whole text, answers the part
asked for, and keeps the text while more parts are to come: a call with offset > 0 and otherwise the
same arguments is cut from that reading, at once. Kept per owner (the key is a hash of the owner and the
arguments, a password included; no other owner's call can match it), for TTL_S, within MAX_CHARS in all
(the oldest go first).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from rpc.models.scrape import ScrapePageResult, ScrapeRequest
from rpc.paging import text_part

TTL_S = 600.0
MAX_CHARS = 64 * 1024 * 1024
TEXT_FORMATS = ("markdown", "html")


@dataclass(frozen=True)
class _Kept:
    result: ScrapePageResult  # with the whole text
    until: float
    size: int


def key_of(owner: str, args: ScrapeRequest) -> str:
    """The same for two calls that read the same text: everything but where the part starts and its length."""
    stable = args.model_dump(mode="json", exclude={"offset", "maxChars"})
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


class TextParts:
    def __init__(self, ttl_s: float = TTL_S, max_chars: int = MAX_CHARS, clock: Callable[[], float] = time.monotonic):
        self._ttl_s, self._max_chars, self._clock = ttl_s, max_chars, clock
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._size = 0

    def get(self, key: str) -> ScrapePageResult | None:
        """The whole text kept under `key`, while it is fresh."""
        self._expire()
        kept = self._kept.get(key)
        if kept is None:
            return None
        self._kept.move_to_end(key)
        return kept.result

    def keep(self, key: str, whole: ScrapePageResult) -> None:
        text = getattr(whole, whole.format) or ""
        if len(text) > self._max_chars:
            return
        self._drop(key)
        self._kept[key] = _Kept(whole.model_copy(update={"storageState": None}), self._clock() + self._ttl_s, len(text))
        self._size += len(text)
        while self._size > self._max_chars:
            self._drop(next(iter(self._kept)))

    def _drop(self, key: str) -> None:
        kept = self._kept.pop(key, None)
        if kept is not None:
            self._size -= kept.size

    def _expire(self) -> None:
        now = self._clock()
        for key in [k for k, kept in self._kept.items() if kept.until <= now]:
            self._drop(key)
