"""How big a text is on the wire, and the longest part of it that fits: for results that must fit one
MCP message. Imports no models, so the code runner (which loads only what its methods need) can use it."""

from __future__ import annotations

import json
from collections.abc import Callable


def json_size(text: str) -> int:
    """Bytes of `text` as a JSON string on the wire (escapes counted, UTF-8 kept as is)."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8"))


def result_size(text: str) -> int:
    """Bytes of `text` in a tool result: once as JSON in structuredContent, and once more inside the text
    block, where that JSON is itself a JSON string (a newline takes 2 + 3 bytes, a control character
    6 + 7, a plain letter 1 + 1)."""
    escaped = json.dumps(text, ensure_ascii=False)
    return len(escaped.encode("utf-8")) + json_size(escaped)


def cap_text(text: str, max_bytes: int, size: Callable[[str], int] = json_size) -> tuple[str, bool]:
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
