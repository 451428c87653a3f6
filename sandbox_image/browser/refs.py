"""Our element refs (`ref_N`) on top of Playwright's aria refs (`e5`, `f1e5`).

Playwright's ref counter restarts in every new document, so a bare `e5` after a navigation may name
another element. A `ref_N` is therefore bound to (navigation epoch, Playwright ref): the tab bumps
the epoch whenever any of its frames navigates (same-document navigations included: conservative),
and a ref from an older epoch is refused as stale instead of being resolved in the new document.
Within an epoch a Playwright ref names one element for good (Playwright never reuses a number in a
document and keeps an element's ref while its role and name hold), so the same element keeps the
same `ref_N` across snapshots. N is monotonic per tab and never reused.

Between our epoch check and the action, a navigation leaves a document whose Playwright script has
taken no snapshot yet, so `aria-ref=` matches nothing there and the action ends STALE_REF. That holds
because Playwright launches Chromium with --disable-back-forward-cache: no old document (with its
old snapshot) is ever restored by back/forward.
"""

from __future__ import annotations

import re

from rpc.errors import BoxwrightError, ErrorCode

REF_PATTERN = re.compile(r"^\[?ref_(\d{1,9})\]?$")
# Refs kept resolvable per epoch; older ones (a long-lived page that keeps adding elements) go stale.
MAX_LIVE_REFS = 50_000


def parse_ref(selector: str) -> int | None:
    """N for "ref_N" (also "[ref_N]" as printed in a snapshot), None for anything else (a CSS selector)."""
    match = REF_PATTERN.match(selector.strip())
    return int(match.group(1)) if match else None


class RefRegistry:
    def __init__(self) -> None:
        self.epoch = 0
        self._next = 1
        self._epoch_start = 1  # first N issued in the current epoch
        self._by_pw: dict[str, int] = {}
        self._by_n: dict[int, tuple[str, str]] = {}  # N -> (Playwright ref, short description)

    def advance(self) -> None:
        """A frame of the tab navigated (or the page was replaced): every ref issued so far is stale."""
        self.epoch += 1
        self._epoch_start = self._next
        self._by_pw.clear()
        self._by_n.clear()

    def issue(self, epoch: int, pw_ref: str, description: str) -> str:
        """The ref_N for a Playwright ref seen in a snapshot taken at `epoch`.

        A snapshot that raced a navigation (epoch moved on meanwhile) gets fresh numbers that are
        never resolvable: stale from birth, so they cannot be resolved against the new document."""
        if epoch == self.epoch:
            known = self._by_pw.get(pw_ref)
            if known is not None:
                self._by_n[known] = (pw_ref, description)
                return f"ref_{known}"
        n = self._next
        self._next += 1
        if epoch == self.epoch:
            self._by_pw[pw_ref] = n
            self._by_n[n] = (pw_ref, description)
            if len(self._by_n) > MAX_LIVE_REFS:
                old_n, (old_pw, _) = next(iter(self._by_n.items()))
                del self._by_n[old_n]
                self._by_pw.pop(old_pw, None)
        return f"ref_{n}"

    def lookup(self, n: int) -> tuple[str, str]:
        """(Playwright ref, description) for ref_N of the current epoch, else a clear error."""
        ref = f"ref_{n}"
        if not 1 <= n < self._next:
            raise BoxwrightError(
                ErrorCode.ELEMENT_NOT_FOUND,
                f"{ref} was never issued on this tab",
                details={"selector": ref},
            )
        found = self._by_n.get(n)
        if found is None:
            why = (
                "the page navigated since that snapshot"
                if n < self._epoch_start
                else "the page navigated while that snapshot was taken, or the ref is too old"
            )
            raise BoxwrightError(ErrorCode.STALE_REF, f"{ref} is stale: {why}", details={"selector": ref})
        return found
