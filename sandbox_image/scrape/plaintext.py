"""Markdown reduced to the plain text a reader reads: what quality is scored on.

WCXB compares plain text. Our output is markdown, so before scoring the markup goes: link targets
and the link's own brackets (kept: the link text), image references (alt text included: it is not
text on the page), fence lines with their language, table rules and pipes, heading and quote marks,
list markers, emphasis and backslash escapes. Brackets that are not link syntax are text a reader
sees, as a markdown renderer shows them: `[CTRL][ALT][DEL]` stays, and so does a footnote's
`word[1]` (taking those brackets away glued `word1`). `[text][label]` is a link only when `label`
is defined (CommonMark). Code (fenced blocks and code spans) is read as written: `pet_type` and
`__init__` are words of the page, not emphasis.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^[ \t]*(?:>[ \t]?)*[ \t]*(```|~~~).*$", re.MULTILINE)
# A fenced block (its fence lines and the code between them) and a code span: set aside before the
# markup goes, put back after it.
# (A block inside a quote carries the quote's `>` on every line, fences included.)
_FENCED_BLOCK = re.compile(
    r"^[ \t]*((?:>[ \t]?)*)[ \t]*(`{3,}|~{3,})[^\n]*\n(.*?)^[ \t]*(?:>[ \t]?)*[ \t]*\2[ \t]*$", re.MULTILINE | re.DOTALL
)
_QUOTED_LINE = re.compile(r"^[ \t]*(?:>[ \t]?)+", re.MULTILINE)
_PLACEHOLDER = re.compile(r"\x00(\d+)\x01")
# Link and image targets: `](url "title")` or `](<url with spaces>)`, one level of parentheses inside.
# A title may run over lines too (CommonMark: not over a blank line); it is a tooltip, not page text.
_TITLE = r"(?:\s+\"(?:[^\"\n]|\n(?![ \t]*\n))*\")?"
_TARGET_ANGLE = re.compile(r"\]\(\s*<[^>\n]*>" + _TITLE + r"\s*\)")
_TARGET = re.compile(r"\]\((?:[^()\s]|\([^()\s]*\))*" + _TITLE + r"\)")
# A target is replaced by this mark, so only the brackets of links and images are taken away.
_LINK_END = "\x03"
# Alt text may run over lines (CommonMark: a soft break inside link text), but not over a blank line.
_SOFT_BREAK = r"\n(?![ \t]*\n)"
_IMAGE = re.compile(r"!\[(?:[^\[\]\n]|" + _SOFT_BREAK + r"|\\[\[\]]|\[[^\[\]\n]*\])*\]" + _LINK_END)
# Link text, with one level of literal brackets inside ("[Title [v2]](url)").
_LINK = re.compile(r"\[((?:[^\[\]\n]|\\[\[\]]|\[(?:[^\[\]\n]|\\[\[\]])*\])*)\]" + _LINK_END)
_REF_LINK = re.compile(r"\[((?:[^\[\]\n]|\\[\[\]])+)\](?:\[((?:[^\[\]\n]|\\[\[\]])*)\])?")
_REF_DEF = re.compile(r"^\s{0,3}\[([^\]]+)\]:\s+\S+.*$", re.MULTILINE)
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

    text = _FENCED_BLOCK.sub(
        lambda m: set_aside(_QUOTED_LINE.sub("", m.group(3)) if m.group(1) else m.group(3)), markdown
    )
    text = _FENCE.sub("", text)  # a fence left open
    text = _CODE_SPAN.sub(lambda m: set_aside(m.group(2)), text)
    text = _reference_links(text)
    text = _TARGET_ANGLE.sub("]" + _LINK_END, text)
    text = _TARGET.sub("]" + _LINK_END, text)
    text = _IMAGE.sub("", text)  # `[![alt](src)](url)` loses the image, keeps the (empty) link
    for _ in range(3):  # links inside link text, innermost first
        text = _LINK.sub(r"\1", text)
    text = text.replace(_LINK_END, "")
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


def _label(text: str) -> str:
    return " ".join(text.lower().split())


def _reference_links(text: str) -> str:
    """`[text][label]`, `[text][]` and `[text]` reduced to `text` where `label` (or `text`) is defined;
    the definitions go."""
    defined = {_label(m.group(1)) for m in _REF_DEF.finditer(text)}
    if not defined:
        return text

    def link_text(m: re.Match[str]) -> str:
        return m.group(1) if _label(m.group(2) or m.group(1)) in defined else m.group(0)

    return _REF_LINK.sub(link_text, _REF_DEF.sub("", text))
