"""How a long text is cut into parts: at most maxChars characters and MAX_CONTENT_BYTES of JSON each,
read on from `nextOffset`. The agent cuts scrape's text this way, and the host cuts a text it kept
(host/readings.py) the same way, so a caller's offsets mean the same wherever the part came from."""

from __future__ import annotations

from dataclasses import dataclass

from rpc import sizes
from rpc.models.scrape import MAX_CONTENT_BYTES
from rpc.sizes import json_size

# A whole text sent for the host to keep (scrape's parts): past this it is cut like any answer.
MAX_WHOLE_BYTES = 32 * 1024 * 1024


def cap_text(text: str, max_bytes: int = MAX_CONTENT_BYTES) -> tuple[str, bool]:
    """`text`, or its longest prefix (cut at a line end when there is one nearby) of at most `max_bytes`
    of JSON."""
    return sizes.cap_text(text, max_bytes)


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
