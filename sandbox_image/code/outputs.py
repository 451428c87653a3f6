"""Bounded output buffers: head+tail capture for sync runs, a ring with absolute offsets for background ones."""

from __future__ import annotations

from rpc.models.code import MAX_OUTPUT_WIRE_BYTES
from rpc.sizes import head_and_tail, result_size
from sandbox_image.utf8 import complete_prefix_len


class CappedBuffer:
    """Keeps the first and the last bytes of a stream within `cap`, counting what was cut.

    The head shows how a program started, the tail how it ended; the middle of a flood is the
    part worth losing.
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._head_cap = cap // 2
        self._tail_cap = cap - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0
        self._squeezed = False  # text() cut more than the cap, for the text to fit MAX_OUTPUT_WIRE_BYTES in a result

    def write(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            if len(self._tail) > 2 * self._tail_cap:  # trim in batches: amortised O(1) per byte
                del self._tail[: len(self._tail) - self._tail_cap]

    @property
    def truncated(self) -> bool:
        return self.total > self.cap or self._squeezed

    def text(self) -> str:
        """The captured output as text (UTF-8, invalid bytes replaced), with a marker where bytes were cut."""
        if self.total <= self.cap:
            text = (bytes(self._head) + bytes(self._tail)).decode("utf-8", "replace")
        else:
            tail = bytes(self._tail[-self._tail_cap :])
            dropped = self.total - len(self._head) - len(tail)
            head = self._head.decode("utf-8", "replace")
            text = f"{head}\n…[{dropped} bytes truncated]…\n{tail.decode('utf-8', 'replace')}"
        if result_size(text) <= MAX_OUTPUT_WIRE_BYTES:
            return text
        self._squeezed = True
        first, last = head_and_tail(text, MAX_OUTPUT_WIRE_BYTES // 2 - 256, result_size)
        dropped = max(0, self.total - len(first.encode()) - len(last.encode()))
        return f"{first}\n…[about {dropped} bytes truncated]…\n{last}"


class RingBuffer:
    """The last `capacity` bytes of a stream, addressed by absolute offsets since the stream began."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._data = bytearray()
        self.start = 0  # absolute offset of self._data[0]

    @property
    def end(self) -> int:
        """Total bytes ever written (the offset the next byte will have)."""
        return self.start + len(self._data)

    def write(self, data: bytes) -> None:
        self._data += data
        excess = len(self._data) - self.capacity
        if excess > 0:
            del self._data[:excess]  # bytearray trims its front cheaply
            self.start += excess

    def read(self, offset: int, max_bytes: int, *, complete: bool) -> tuple[bytes, int, int]:
        """Bytes from `offset` → (data, actual offset, dropped bytes).

        An offset older than what is retained starts at the oldest retained byte and reports the
        gap as dropped; one past the end is clamped to the end. With `complete`, a trailing
        incomplete UTF-8 character is left for the next read (unless that would return nothing).
        """
        dropped = 0
        if offset < self.start:
            dropped = self.start - offset
            offset = self.start
        offset = min(offset, self.end)
        begin = offset - self.start
        data = bytes(self._data[begin : begin + max_bytes])
        if complete:
            keep = complete_prefix_len(data)
            if keep:
                data = data[:keep]
        return data, offset, dropped
