"""scrape: per-post furniture (author statistics, titles, signatures) of forum platforms is dropped from
a thread's main content, and only where it comes back post after post."""

from __future__ import annotations

from sandbox_image.scrape.blocks import segment
from sandbox_image.scrape.document import choose_document
from sandbox_image.scrape.extract import extract_html
from sandbox_image.scrape.main_content import _keep_whole
from sandbox_image.scrape.post_furniture import furniture_blocks


def _post(author: str, body: str) -> str:
    """One post as XenForo 2 writes it."""
    return f"""
<article class="message message--post">
  <div class="message-cell message-cell--user">
    <section class="message-user">
      <div class="message-userDetails">
        <h4 class="message-name"><a href="/members/{author}.1/">{author}</a></h4>
        <h5 class="userTitle message-userTitle">Full Member</h5>
      </div>
      <div class="message-userExtras">
        <dl class="pairs pairs--justified"><dt>Joined</dt><dd>Jun 29, 2016</dd></dl>
        <dl class="pairs pairs--justified"><dt>Messages</dt><dd>11</dd></dl>
        <dl class="pairs pairs--justified"><dt>Reaction score</dt><dd>10</dd></dl>
      </div>
    </section>
  </div>
  <div class="message-cell message-cell--main">
    <div class="message-content"><div class="bbWrapper">{body}</div></div>
    <aside class="message-signature"><div class="bbWrapper">My rig: a very long list of parts</div></aside>
  </div>
</article>"""


BODIES = [
    "I heard that the first interview invitations went out this week, so here is a thread for everyone.",
    "Congratulations to everyone who got one. Mine came on Thursday and the date is in two weeks.",
    "Does anyone know whether the interviews are held in person this year or online as before?",
    "In person for most programmes, as far as I know; two of them still offer a video call instead.",
]
THREAD = (
    "<html><head><title>Application thread</title></head><body><main><h1>Application thread</h1>"
    + "".join(_post(f"user{i}", body) for i, body in enumerate(BODIES))
    + "</main></body></html>"
)
FURNITURE = ("Full Member", "Joined", "Jun 29, 2016", "Messages", "Reaction score", "My rig")


def test_the_panels_and_signatures_of_a_thread_are_furniture_and_the_posts_are_not() -> None:
    document = choose_document(THREAD)
    blocks = segment(document.root)
    found = {blocks[i].text for i in furniture_blocks(document.root, blocks)}
    assert {"Full Member", "Joined", "Jun 29, 2016", "Messages", "11", "Reaction score"} <= found
    assert "My rig: a very long list of parts" in found
    assert not found & set(BODIES)
    assert not {"user0", "user1", "Application thread"} & found  # names and the title are not statistics


def test_a_one_off_box_is_left_to_the_model() -> None:
    page = f"<html><body><main>{_post('solo', BODIES[0])}</main></body></html>"
    document = choose_document(page)
    assert furniture_blocks(document.root, segment(document.root)) == set()


def test_the_thread_scraped_has_its_posts_without_the_furniture() -> None:
    markdown = extract_html(THREAD, "https://forum.example.org/threads/1/").markdown
    for body in BODIES:
        assert body in markdown
    for text in FURNITURE:
        assert text not in markdown


SIGNATURES = [
    "Currently playing: a very long list of games, consoles and handhelds of every year since 1990,"
    " with the hours played on each of them and the ones still waiting on the shelf to be started",
    "Pillars of modern warfare, such as paired units and predictive fire, and more of the same in a"
    " quote from a strategy game that the poster has been playing for the last eleven years or so",
    "Favourite games of all time: a list longer than the post above, and the one above that one, in"
    " the order they were released, with the platform of each and the year the poster finished it",
    "hidden gems: eight titles, four consoles, two decades of collecting and a shelf of manuals, all"
    " of them recommended to anyone who reads this far down a signature on a message board thread",
]
TABLE_THREAD = (
    "<html><body><h1>Showcase thread</h1><table class='board message msg_list'>"
    + "".join(
        f"<tr><td class='msg'><div class='msg_body'><div class='msg_text'>{body}</div>"
        f"<div class='signature'><div class='sig_text'>{signature}</div></div></div></td></tr>"
        for body, signature in zip(BODIES, SIGNATURES, strict=True)
    )
    + "</table></body></html>"
)


def test_a_thread_laid_out_as_a_table_keeps_its_posts_when_the_signatures_go() -> None:
    # The signatures hold more words than the posts: counted in the table's majority, dropping them
    # took every post with them (a thread of GameFAQs, dev-rest page 0574).
    document = choose_document(TABLE_THREAD)
    blocks = segment(document.root)
    furniture = furniture_blocks(document.root, blocks)
    assert {blocks[i].text for i in furniture} == set(SIGNATURES)
    posts = {b.index for b in blocks if b.text in BODIES}
    assert _keep_whole(blocks, posts, set(), "table") == set()  # the hazard: counted, they outweigh the posts
    assert _keep_whole(blocks, posts, furniture, "table") == posts
