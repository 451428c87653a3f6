"""Text that was UTF-8 once, read back as Windows-1252 or Latin-1, put right before anything reads it.

A CMS or a crawler that decodes UTF-8 bytes with the wrong codec and stores the result as UTF-8 again
serves `itâ€™s` for `it’s` and `cafÃ©` for `café`; the browser shows exactly that, because the
bytes it got are valid UTF-8. Readers, and every extractor downstream, should see the words the
author wrote, so the document's text is repaired once, right after parsing (document.py): the
voters, the block model, markdown, content HTML and metadata all read the repaired text.

ftfy (Apache-2.0) does the repair: `fix_encoding` only undoes wrong decodings (no quote
straightening or other normalising) and leaves text that does not look mis-decoded alone. Most
pages have no candidate at all, so a cheap pattern — a UTF-8 lead byte read as one character
followed by a continuation byte read as another — decides which strings ftfy is asked about.
"""

from __future__ import annotations

import re

from ftfy import fix_encoding
from lxml.html import HtmlElement

# Â..ô (what 0xC2..0xF4, a UTF-8 lead byte, reads as) followed by what a continuation byte
# 0x80..0xBF reads as: itself in Latin-1, or Windows-1252's printable characters at 0x80..0x9F.
_SUSPECT = re.compile(
    "[\u00c2-\u00f4][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc"
    "\u2013\u2014\u2018-\u201e\u2020-\u2022\u2026\u2030\u2039\u203a\u20ac\u2122]"
)
# What lxml refuses in a text node (C0 controls but tab, newline and return; U+FFFE/U+FFFF): ftfy reads
# `À€` (C0 80, "modified UTF-8") as NUL, and such a "repair" is no repair at all.
_NOT_XML_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# Attributes whose text reaches the output (image text, link titles, meta descriptions and titles).
_TEXT_ATTRIBUTES = ("alt", "title", "content", "aria-label")


def _repaired(value: str | None) -> str | None:
    """The repaired text, or None when there is nothing to repair."""
    if not value or not _SUSPECT.search(value):
        return None
    fixed = fix_encoding(value)
    return fixed if fixed != value and not _NOT_XML_TEXT.search(fixed) else None


def repair_document(root: HtmlElement) -> None:
    """Repair every text node and text-bearing attribute under `root` in place."""
    for element in root.iter():
        for side in ("text", "tail"):
            fixed = _repaired(getattr(element, side))
            if fixed is not None:
                setattr(element, side, fixed)
        if isinstance(element.tag, str):
            for name in _TEXT_ATTRIBUTES:
                fixed = _repaired(element.get(name))
                if fixed is not None:
                    element.set(name, fixed)
