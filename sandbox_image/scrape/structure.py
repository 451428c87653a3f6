"""Block evidence from the page's repeated structure and from what a block's text looks like.

Round 4 of docs/scrape-quality.md. Three ideas, none naming a site:
- **Template groups.** Pages built from templates repeat the same element path for the same role:
  every post body of a thread, every author line, every signature, every product card, every
  facet entry. Blocks whose path from <body> (tags and first class word, positions ignored) is
  the same form a group, and what the extractors think of the group as a whole (its vote share,
  size, link density, words per block) is evidence for each member: a signature the voters kept
  once is still one of twenty signatures they mostly dropped.
- **Role words** in the class/id/role/itemprop of a block's ancestors, in three families the base
  features lump together or miss: discussion content (comment, reply, post body, message),
  the furniture around posts (author, avatar, signature, badge, votes, reactions), and
  navigation aids inside content areas (facets and filters, tabs, tables of contents).
- **Text and element cues**: a date, a count in parentheses, mostly digits; a <time> or a
  checkbox inside the block; inside a code block, a quote, or a table with header cells.

The idea of treating comments as content on discussion pages, of forum furniture (user panels,
vote controls, action bars) as its own kind of boilerplate, and of repeated items as the content
of listings comes from rs-trafilatura's page-type profiles (github.com/Murrough-Foley/rs-trafilatura);
here they are features the block model weighs, not rules.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from lxml.html import HtmlElement

from sandbox_image.scrape.blocks import Block

_DISCUSSION = re.compile(
    r"(?:^|[\W_])(?:comments?|reply|replies|post-?body|post-?content|post-?text|postbody|message-?body|messages?"
    r"|bbwrapper|answer-?body|answers?|cooked|topic-?body|usertext|discussion)(?:$|[\W_])",
    re.IGNORECASE,
)
_POST_FURNITURE = re.compile(
    r"(?:^|[\W_])(?:author|username|user-?name|user-?info|userinfo|avatar|signature|sig|badges?|votes?|voting"
    r"|reactions?|likes?|rank|karma|joined|post-?count|post-?meta|meta|byline|user-?title|member|usercard"
    r"|permalink|actions?|toolbar|controls?)(?:$|[\W_])",
    re.IGNORECASE,
)
_NAV_AIDS = re.compile(
    r"(?:^|[\W_])(?:facets?|filters?|refine(?:ments?)?|sort|sorting|tabs?|tab-?panel|tablist|toc|table-?of-?contents"
    r"|on-?this-?page|sidenav|side-?menu|swatch(?:es)?|variants?|options?|quantity|qty)(?:$|[\W_])",
    re.IGNORECASE,
)
# A tab panel's content is opened with a click (a product's specifications, a tutorial's code for
# another language); whole_page.hidden_tabs_follow keeps the hidden panels beside a kept one.
_TAB_PANEL = re.compile(
    r"(?:^|[\W_])(?:tab-?panel|tab-?pane|tab-?content|tab-?body|tabbed-?(?:block|content))(?:$|[\W_])",
    re.IGNORECASE,
)
_MONTHS = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_DATE = re.compile(
    rf"\b(?:(?:{_MONTHS})\.? \d{{1,2}}(?:st|nd|rd|th)?,? \d{{2,4}}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)? (?:{_MONTHS})\.?,? \d{{2,4}}"
    r"|\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}|\d+ (?:second|minute|hour|day|week|month|year)s? ago"
    r"|(?:yesterday|today) at)\b",
    re.IGNORECASE,
)
_COUNT = re.compile(r"\(\s*\d[\d,.]*\s*\)")
_TOKEN = re.compile(r"\w+")
FEATURES = (
    "group_log_blocks",
    "group_share",
    "group_votes",
    "group_others_votes",
    "group_log_words_per_block",
    "group_link_density",
    "role_discussion",
    "role_post_furniture",
    "role_nav_aid",
    "text_date",
    "text_count",
    "text_digit_share",
    "has_time",
    "has_checkbox",
    "in_code",
    "in_quote",
    "in_header_table",
    "page_template_groups",
)
ROLE_DEPTH = 8  # how far up role words are looked for
GROUP_DEPTH = 12  # how many ancestors make a block's template path


def _first_class(element: object) -> str:
    get = getattr(element, "get", None)
    if get is None:
        return ""
    classes = (get("class") or "").split()
    return classes[0] if classes else ""


def template_path(block: Block, steps_cache: dict[object, str] | None = None) -> tuple[str, ...]:
    """The block's path from the top, as (tag.first-class) steps; sibling positions are ignored."""
    cache = {} if steps_cache is None else steps_cache
    steps: list[str] = []
    element = block.element
    while element is not None and len(steps) < GROUP_DEPTH:
        step = cache.get(element)
        if step is None:
            tag = element.tag if isinstance(element.tag, str) else ""
            step = cache[element] = "" if tag in ("body", "html") else f"{tag}.{_first_class(element)}"
        if not step:
            break
        steps.append(step)
        element = element.getparent()
    return tuple(reversed(steps))


def tab_panel(element: HtmlElement | None, seen: dict[object, bool] | None = None) -> HtmlElement | None:
    """The nearest tab panel (by class, id or role) among the element and its ROLE_DEPTH - 1 ancestors.

    `seen` remembers each element's answer across calls: a page's blocks share their ancestors."""
    memo: dict[object, bool] = {} if seen is None else seen
    for _ in range(ROLE_DEPTH):
        if element is None or not isinstance(element.tag, str):
            return None
        hit = memo.get(element)
        if hit is None:
            get = element.get
            hit = memo[element] = bool(_TAB_PANEL.search(f"{get('class') or ''} {get('id') or ''} {get('role') or ''}"))
        if hit:
            return element
        element = element.getparent()
    return None


class _Roles:
    """Role words per element, computed once per element: blocks share ancestors.

    Keyed by the element itself (which keeps lxml's proxy alive, so the key stays unique)."""

    def __init__(self) -> None:
        self._words: dict[object, tuple[bool, bool, bool]] = {}

    def words(self, element: HtmlElement) -> tuple[bool, bool, bool]:
        hit = self._words.get(element)
        if hit is None:
            get = element.get
            text = f"{get('class') or ''} {get('id') or ''} {get('role') or ''} {get('itemprop') or ''}"
            if text.strip():
                hit = (bool(_DISCUSSION.search(text)), bool(_POST_FURNITURE.search(text)), bool(_NAV_AIDS.search(text)))
            else:
                hit = (False, False, False)
            self._words[element] = hit
        return hit

    def hits(self, block: Block) -> tuple[float, float, float]:
        """(discussion, post furniture, navigation aid): 1 - depth/ROLE_DEPTH of the nearest hit, else 0."""
        found = [0.0, 0.0, 0.0]
        element: HtmlElement | None = block.element
        for depth in range(ROLE_DEPTH):
            if element is None or not isinstance(element.tag, str):
                break
            for k, hit in enumerate(self.words(element)):
                if hit and not found[k]:
                    found[k] = 1.0 - depth / ROLE_DEPTH
            element = element.getparent()
        return found[0], found[1], found[2]


def _enclosing_tags(blocks: Sequence[Block]) -> dict[int, set[str]]:
    """Per block index: which of the _ENCLOSING tags its element is or sits in (one walk down the
    tree, iterative: unclosed inline tags can nest deeper than Python's recursion limit)."""
    by_element = {b.element: b.index for b in blocks}
    out: dict[int, set[str]] = {}
    if not blocks:
        return out
    stack: list[tuple[HtmlElement, frozenset[str]]] = [(blocks[0].element.getroottree().getroot(), frozenset())]
    while stack:
        element, above = stack.pop()
        tags = above | {element.tag} if element.tag in _ENCLOSING else above
        index = by_element.get(element)
        if index is not None:
            out[index] = set(tags)
        stack.extend((child, tags) for child in element if isinstance(child.tag, str))
    return out


def _owned(blocks: Sequence[Block], tag_test: str) -> set[int]:
    """Indexes of blocks that hold (as the nearest block around it) an element matching `tag_test`."""
    by_element = {b.element: b.index for b in blocks}
    out: set[int] = set()
    if not blocks:
        return out
    root = blocks[0].element.getroottree().getroot()
    for element in root.xpath(tag_test):
        node = element
        while node is not None and node not in by_element:
            node = node.getparent()
        if node is not None:
            out.add(by_element[node])
    return out


_CODE = frozenset({"pre", "code"})
_QUOTE = frozenset({"blockquote", "q"})
_ENCLOSING = _CODE | _QUOTE


def structure_features(blocks: Sequence[Block], vote_sum: Sequence[float]) -> list[dict[str, float]]:
    """One dict of structure features per block (merged into features.py's rows)."""
    n = len(blocks)
    total_words = sum(b.words for b in blocks) or 1
    steps_cache: dict[object, str] = {}
    paths = [template_path(b, steps_cache) for b in blocks]
    groups: dict[tuple[str, ...], list[float]] = {}  # path -> [blocks, words, voted words, link words]
    for b, path, v in zip(blocks, paths, vote_sum, strict=True):
        g = groups.setdefault(path, [0.0, 0.0, 0.0, 0.0])
        g[0] += 1
        g[1] += b.words
        g[2] += v * b.words
        g[3] += b.link_words
    roles = _Roles()
    enclosing = _enclosing_tags(blocks)
    with_time = _owned(blocks, "//time")
    with_choice = _owned(blocks, "//input[@type='checkbox' or @type='radio']")
    out = []
    for i, b in enumerate(blocks):
        count, words, voted, links = groups[paths[i]]
        others = words - b.words
        discussion, furniture, nav_aid = roles.hits(b)
        around = enclosing.get(b.index, set())
        tokens = _TOKEN.findall(b.text)
        digits = sum(1 for t in tokens if t.isdigit())
        table = next(b.element.iterancestors("table"), None) if b.tag in ("td", "th", "tr") else None
        out.append(
            {
                "group_log_blocks": math.log1p(count - 1),
                "group_share": words / total_words,
                "group_votes": voted / words if words else 0.0,
                "group_others_votes": (voted - vote_sum[i] * b.words) / others if others > 0 else -1.0,
                "group_log_words_per_block": math.log1p(words / count),
                "group_link_density": links / words if words else 0.0,
                "role_discussion": discussion,
                "role_post_furniture": furniture,
                "role_nav_aid": nav_aid,
                "text_date": float(bool(_DATE.search(b.text))),
                "text_count": float(bool(_COUNT.search(b.text))),
                "text_digit_share": digits / len(tokens) if tokens else 0.0,
                "has_time": float(b.index in with_time),
                "has_checkbox": float(b.index in with_choice),
                "in_code": float(bool(around & _CODE)),
                "in_quote": float(bool(around & _QUOTE)),
                "in_header_table": float(table is not None and bool(table.xpath(".//th"))),
                "page_template_groups": len(groups) / n,
            }
        )
    return out
