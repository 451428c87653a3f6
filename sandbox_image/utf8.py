"""UTF-8 boundary helpers shared by file reads and process output reads."""

from __future__ import annotations


def _sequence_length(lead: int) -> int:
    """Bytes in the UTF-8 sequence that starts with `lead`; 0 for a continuation or invalid byte."""
    if lead < 0x80:
        return 1
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 0


def complete_prefix_len(data: bytes | bytearray | memoryview) -> int:
    """Length of `data` without a trailing, incomplete multibyte sequence.

    Only a sequence that could still be completed by the bytes that follow is cut; invalid bytes
    are left in place so strict decoding reports them instead of hiding them.
    """
    n = len(data)
    # A sequence is at most 4 bytes: its lead byte is within the last 3 bytes if it is incomplete.
    for back in range(1, min(3, n) + 1):
        byte = data[n - back]
        if 0x80 <= byte <= 0xBF:  # continuation byte: keep looking for the lead
            continue
        need = _sequence_length(byte)
        return n - back if need > back else n
    return n


def is_continuation(byte: int) -> bool:
    """True for a byte that can only appear inside a multibyte sequence."""
    return 0x80 <= byte <= 0xBF


def ends_inside_sequence(before: bytes) -> bool:
    """True when the bytes just before an offset end with an unfinished sequence (offset is mid-character)."""
    for i in range(len(before) - 1, -1, -1):
        byte = before[i]
        if is_continuation(byte):
            continue
        need = _sequence_length(byte)
        return need > len(before) - i
    return False
