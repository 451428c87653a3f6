"""How a long text is cut into parts: at most maxChars characters and MAX_CONTENT_BYTES of JSON each,
read on from `nextOffset`. The agent cuts scrape's text this way, and the host cuts a text it kept
(host/readings.py) the same way, so a caller's offsets mean the same wherever the part came from."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from rpc.models.scrape import MAX_CONTENT_BYTES

# A whole text sent for the host to keep (scrape's parts): past this it is cut like any answer.
MAX_WHOLE_BYTES = 32 * 1024 * 1024


def json_size(text: str) -> int:
    """Bytes of `text` as a JSON string on the wire (escapes counted, UTF-8 kept as is)."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8"))


def result_size(text: str) -> int:
    """Bytes of `text` in a tool result: once as JSON in structuredContent, and once more inside the text
    block, where that JSON is itself a JSON string (a newline takes 2 + 3 bytes, a control character
    6 + 7, a plain letter 1 + 1)."""
    escaped = json.dumps(text, ensure_ascii=False)
    return len(escaped.encode("utf-8")) + json_size(escaped)


def cap_text(text: str, max_bytes: int = MAX_CONTENT_BYTES, size: Callable[[str], int] = json_size) -> tuple[str, bool]:
    """`text`, or its longest prefix (cut at a line end when there is one nearby) that fits `max_bytes`
    (as measured by `size`)."""
    if size(text) <= max_bytes:
        return text, False
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix that fits
        mid = (lo + hi + 1) // 2
        if size(text[:mid]) <= max_bytes:
            lo = mid
        else:
            hi = mid - 1
    cut = text[:lo]
    newline = cut.rfind("\n", max(0, lo - 2000))
    return (cut[: newline + 1] if newline > 0 else cut), True


def head_and_tail(text: str, max_bytes: int, size: Callable[[str], int] = json_size) -> tuple[str, str]:
    """The longest head and tail of `text` of at most `max_bytes` each (cut at a line end nearby), for a
    text whose middle may go — it is the part of a flood of output worth losing."""
    head, _ = cap_text(text, max_bytes, size)
    tail, _ = cap_text(text[len(head) :][::-1], max_bytes, size)  # escapes are per character: same size
    return head, tail[::-1]


@dataclass(frozen=True)
class TextPart:
    text: str
    truncated: bool
    next_offset: int | None  # where the rest starts; None when this part runs to the end
    total: int

    def fields(self, fmt: str) -> dict[str, object]:
        """The result's fields for this part of a markdown/html text."""
        return {fmt: self.text, "truncated": self.truncated, "totalChars": self.total, "nextOffset": self.next_offset}


def text_part(text: str, offset: int = 0, max_chars: int | None = None, *, whole: bool = False) -> TextPart:
    """The part of `text` from character `offset`: at most `max_chars` characters and MAX_CONTENT_BYTES as
    JSON, cut at a line end in its last half (its last 2,000 characters at most) when there is one. The
    caller reads on from next_offset: nothing is lost, parts read in order add up to the text.

    `whole`: all of it, uncut, when it fits MAX_WHOLE_BYTES (for the host to keep and cut itself)."""
    if whole and json_size(text) <= MAX_WHOLE_BYTES:
        return TextPart(text, False, None, len(text))
    rest = text[offset:]
    if max_chars is not None and len(rest) > max_chars:
        rest = rest[:max_chars]
        newline = rest.rfind("\n", max_chars - min(2000, max_chars // 2))
        rest = rest[: newline + 1] if newline > 0 else rest
    part, _ = cap_text(rest)
    end = min(offset, len(text)) + len(part)
    return TextPart(part, end < len(text), end if end < len(text) else None, len(text))
