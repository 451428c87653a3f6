"""The jusText voter's linear revision gives jusText's own classes (its revision is quadratic in runs of
short paragraphs: a page of thousands of table cells spent seconds to minutes in it)."""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass

import justext
from justext.core import revise_paragraph_classification

from sandbox_image.scrape.voters import _revise_classification, _stoplist, jus_text


@dataclass
class Para:
    cf_class: str
    heading: bool
    text: str
    class_type: str = ""


def test_the_revision_matches_jusText_on_random_pages() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        page = [
            Para(
                rng.choice(["short", "neargood", "good", "bad"]), rng.random() < 0.3, "x" * rng.choice([0, 5, 90, 250])
            )
            for _ in range(rng.randint(0, 40))
        ]
        theirs, ours = copy.deepcopy(page), copy.deepcopy(page)
        revise_paragraph_classification(theirs, 200)
        _revise_classification(ours, 200)
        assert [p.class_type for p in ours] == [p.class_type for p in theirs], page


def test_the_voter_matches_jusText_on_a_page() -> None:
    html = (
        "<html><body><nav><a href='/'>Home</a> <a href='/a'>About</a></nav><h1>Rivers</h1>"
        + "".join(
            f"<p>In the year {i} the river flooded in the spring, and when the water went down all of the "
            "valley was green again; the people who lived there went back to their fields as they had "
            "done before, and they were glad of it.</p>"
            for i in range(8)
        )
        + "".join(f"<li>item {i}</li>" for i in range(30))
        + "<footer>© 2026 Someone</footer></body></html>"
    )
    expected = "\n\n".join(p.text for p in justext.justext(html, _stoplist("en")) if not p.is_boilerplate)
    assert "year 3" in expected and jus_text(html, "", "en") == expected
