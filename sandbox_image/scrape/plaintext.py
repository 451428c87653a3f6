"""Markdown reduced to the plain text a reader reads: what quality is scored on.

WCXB compares plain text. Our output is markdown, so before scoring the markup goes: link targets
(kept: the link text), image references (alt text included: it is not text on the page), fence
lines with their language, table rules and pipes, heading and quote marks, list markers, emphasis
and backslash escapes. Code (fenced blocks and code spans) is read as written: `pet_type` and
`__init__` are words of the page, not emphasis.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(```|~~~).*$", re.MULTILINE)
# A fenced block (its fence lines and the code between them) and a code span: set aside before the
# markup goes, put back after it.
_FENCED_BLOCK = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.MULTILINE | re.DOTALL)
_PLACEHOLDER = re.compile(r"\x00(\d+)\x01")
# Link and image targets: `](url "title")` or `](<url with spaces>)`, one level of parentheses inside.
_TARGET_ANGLE = re.compile(r"\]\(\s*<[^>\n]*>(?:\s+\"[^\"\n]*\")?\s*\)")
_TARGET = re.compile(r"\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"\n]*\")?\)")
_IMAGE = re.compile(r"!\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]")
_BRACKETED = re.compile(r"\[((?:[^\[\]\n]|\\[\[\]])*)\]")
_REF_LINK = re.compile(r"\[((?:[^\]\\]|\\.)*)\]\[[^\]]*\]")
_REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+\S+.*$", re.MULTILINE)
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$", re.MULTILINE)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+", re.MULTILINE)
_QUOTE = re.compile(r"^\s*(>\s?)+", re.MULTILINE)
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+", re.MULTILINE)
_HRULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$", re.MULTILINE)
_EMPHASIS = re.compile(r"(\*{1,3}|~~|==)(?=\S)(.+?)(?<=\S)\1")
# `_` emphasis only between non-word characters (CommonMark): snake_case is one word.
_UNDERSCORE_EMPHASIS = re.compile(r"(?<!\w)(_{1,3})(?=\S)(.+?)(?<=\S)\1(?!\w)")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|>~=<])")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]+)>")
_SPACES = re.compile(r"[ \t]+")


def markdown_to_text(markdown: str) -> str:
    """Plain text of a markdown document (block breaks kept as newlines)."""
    code: list[str] = []

    def set_aside(content: str) -> str:
        code.append(content)
        return f"\x00{len(code) - 1}\x01"

    text = _FENCED_BLOCK.sub(lambda m: set_aside(m.group(2)), markdown)
    text = _FENCE.sub("", text)  # a fence left open
    text = _CODE_SPAN.sub(lambda m: set_aside(m.group(2)), text)
    text = _REF_DEF.sub("", text)
    text = _REF_LINK.sub(r"\1", text)
    text = _TARGET_ANGLE.sub("]", text)
    text = _TARGET.sub("]", text)
    text = _IMAGE.sub("", text)  # images are `![alt]` now; nested `[![alt]]` loses the image too
    for _ in range(3):  # link text, innermost brackets first
        text = _BRACKETED.sub(r"\1", text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _TABLE_RULE.sub("", text)
    text = _HRULE.sub("", text)
    text = _QUOTE.sub("", text)
    text = _LIST_MARKER.sub("", text)
    text = _HEADING.sub("", text)  # after the list markers: "## 1. Step one" keeps its "1."
    for _ in range(2):  # nested emphasis (***a* b**)
        text = _EMPHASIS.sub(r"\2", text)
        text = _UNDERSCORE_EMPHASIS.sub(r"\2", text)
    text = text.replace("\\|", "\x02").replace("|", " ").replace("\x02", "|")
    text = _ESCAPE.sub(r"\1", text)
    text = _PLACEHOLDER.sub(lambda m: code[int(m.group(1))], text)
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
