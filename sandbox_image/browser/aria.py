"""Parser for Playwright's `aria_snapshot(mode="ai")` text into a tree of nodes.

The format (Playwright's ariaSnapshotRenderer + yaml helpers) is one node per line:
`- role "json name" [attr] [attr=value] [ref=e5]` optionally followed by `: text` (a single text
child or an input's value) or `:` (children follow, indented by two spaces). `- text: …` lines are
text children, `- /url: …` and `- /placeholder: …` are properties of the parent. A key that would
confuse YAML is single-quoted; a value that would is double-quoted with JSON-like escapes.
A line we cannot read is skipped: a ref we never parsed is a ref we never hand out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

_LINE = re.compile(r"^( *)- (.*)$")
_ATTR = re.compile(r"\[([a-z-]+)(?:=([^\]]*))?\]")
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|.)")
_ESCAPES = {"\\": "\\", '"': '"', "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


@dataclass
class AriaNode:
    role: str
    name: str = ""
    ref: str | None = None
    attrs: dict[str, str] = field(default_factory=dict)  # "checked": "", "level": "2", "cursor": "pointer"…
    value: str | None = None  # the inline text: an input's value or a single text child
    props: dict[str, str] = field(default_factory=dict)  # "url", "placeholder"
    children: list[AriaNode | str] = field(default_factory=list)

    def walk(self) -> list[AriaNode]:
        """This node and its descendants, in document order."""
        out: list[AriaNode] = []
        stack: list[AriaNode] = [self]
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(reversed([c for c in node.children if isinstance(c, AriaNode)]))
        return out

    def text(self, limit: int = 200) -> str:
        """Visible text under this node (names, values and text children), whitespace-collapsed."""
        parts: list[str] = []
        size = 0
        stack: list[AriaNode | str] = [self]
        while stack and size < limit:
            item = stack.pop()
            if isinstance(item, str):
                piece = item
            else:
                piece = item.name or item.value or ""
                if not item.name:  # a named node's text is its name; its children repeat it
                    stack.extend(reversed(item.children))
            if piece:
                parts.append(piece)
                size += len(piece) + 1
        return " ".join(" ".join(parts).split())[:limit]


def _unquote_value(raw: str) -> str:
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':

        def unescape(m: re.Match[str]) -> str:
            code = m.group(1)
            return chr(int(code[1:], 16)) if code[0] == "x" and len(code) == 3 else _ESCAPES.get(code, code)

        return _ESCAPE.sub(unescape, raw[1:-1])
    return raw


def _split(body: str) -> tuple[str, str | None, bool] | None:
    """(key, inline value, has children) of one line's body."""
    if body.startswith("'"):
        chars: list[str] = []
        i = 1
        while i < len(body):
            if body[i] == "'":
                if body[i + 1 : i + 2] == "'":
                    chars.append("'")
                    i += 2
                    continue
                break
            chars.append(body[i])
            i += 1
        else:
            return None
        key, rest = "".join(chars), body[i + 1 :]
    else:
        # An unquoted key never contains ": " or ends with ":" (it would have been quoted).
        cut = body.find(": ")
        if cut >= 0:
            key, rest = body[:cut], body[cut:]
        elif body.endswith(":"):
            key, rest = body[:-1], ":"
        else:
            key, rest = body, ""
    if rest == "":
        return key, None, False
    if rest == ":":
        return key, None, True
    if rest.startswith(": "):
        return key, _unquote_value(rest[2:]), False
    return None


def _node(key: str) -> AriaNode | None:
    role, _, rest = key.partition(" ")
    if not role:
        return None
    node = AriaNode(role=role)
    if rest.startswith('"'):
        try:
            name, end = json.JSONDecoder().raw_decode(rest)
        except ValueError:
            return None
        node.name = str(name)
        rest = rest[end:]
    for attr, value in _ATTR.findall(rest):
        if attr == "ref":
            node.ref = value
        else:
            node.attrs[attr] = value
    return node


def parse(snapshot: str) -> list[AriaNode]:
    """The top-level nodes of a snapshot (usually one root)."""
    roots: list[AriaNode] = []
    stack: list[tuple[int, AriaNode]] = []
    for line in snapshot.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        depth = len(match.group(1)) // 2
        split = _split(match.group(2))
        if split is None:
            continue
        key, value, _has_children = split
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1][1] if stack else None
        if key == "text":
            if parent is not None and value is not None:
                parent.children.append(value)
            continue
        if key.startswith("/"):
            if parent is not None and value is not None:
                parent.props[key[1:]] = value
            continue
        node = _node(key)
        if node is None:
            continue
        node.value = value
        (parent.children if parent is not None else roots).append(node)
        stack.append((depth, node))
    return roots
