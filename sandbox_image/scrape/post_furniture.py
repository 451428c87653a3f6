"""Per-post furniture of the common forum and Q&A platforms, which is never a thread's content.

Every post of a thread on XenForo, phpBB, Invision, vBulletin or Stack Exchange comes with the same
panel about its author — rank or title, join date, post count, reaction score, reputation — and
often a signature. A reader of the thread does not want them, and WCXB's references agree: on the
1,197 development pages the models learn from, 96 % of the words in these containers are not main
content (docs/scrape-quality.md, round 14), and so on the held-out test pages. They are short,
repeated and sit right beside the posts, so the block model, which has met few threads of each
platform, keeps them about as often as the post bodies next to them; a thread with short replies
comes out as much furniture as text.

So the rule: a block inside an element with one of these classes is not main content, on a page
where that class comes back for at least MIN_REPEATS elements (a thread of posts: a single author
box elsewhere is left to the model). The classes are the platforms' own names for the author's
statistics, titles and signature — not for the author's name or the post's date, which references
of threads often keep.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from lxml.html import HtmlElement

from sandbox_image.scrape.blocks import Block

FURNITURE_CLASSES = frozenset(
    {
        # XenForo 2: the stats pairs (joined, messages, reaction score), the user title, banners, signature
        "message-userExtras",
        "message-userTitle",
        "userBanner",
        "message-signature",
        # XenForo 1
        "extraUserInfo",
        "userTitle",
        # phpBB (prosilver): rank, post count and join date under the author
        "profile-rank",
        "profile-posts",
        "profile-joined",
        # Invision Community 4: rank, badges and counts under the author
        "cAuthorPane_info",
        "cAuthorPane_badge",
        # vBulletin 4
        "userinfo_extra",
        "usertitle",
        # Stack Exchange: the asker's and answerer's cards (name, reputation, badges)
        "user-info",
        # signatures, on many platforms
        "signature",
    }
)
MIN_REPEATS = 2  # elements with the class on the page: a thread's posts, not a one-off box
ANCESTOR_LIMIT = 40  # how far up a block's containers are looked at


def _classes(element: HtmlElement) -> list[str]:
    return [c for c in (element.get("class") or "").split() if c in FURNITURE_CLASSES]


def furniture_blocks(root: HtmlElement, blocks: Sequence[Block]) -> set[int]:
    """Indices of the blocks inside per-post furniture (see the module's docstring)."""
    counts: Counter[str] = Counter()
    for node in root.iter():
        if isinstance(node.tag, str):
            counts.update(set(_classes(node)))
    repeated = {c for c, n in counts.items() if n >= MIN_REPEATS}
    if not repeated:
        return set()
    seen: dict[HtmlElement, bool] = {}  # keyed by the element (kept alive), never by id()
    out = set()
    for block in blocks:
        path: list[HtmlElement] = []
        element: HtmlElement | None = block.element
        inside = False
        while element is not None and isinstance(element.tag, str) and len(path) < ANCESTOR_LIMIT:
            known = seen.get(element)
            if known is not None:
                inside = known
                break
            path.append(element)
            if not repeated.isdisjoint(_classes(element)):
                inside = True
                break
            element = element.getparent()
        for visited in path:
            seen[visited] = inside
        if inside:
            out.add(block.index)
    return out
