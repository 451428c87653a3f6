"""scrape: the block features are exact and the same on every run.

The ancestor figures (`up1/up2/up4_*`) were once keyed by the `id()` of lxml's short-lived proxy
objects; a freed proxy's id came back as another ancestor's, so the figures of different regions
merged, differently from one process to the next. These tests fail on that code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sandbox_image.scrape.blocks import Block, segment
from sandbox_image.scrape.document import choose_document
from sandbox_image.scrape.extract import extract_html
from sandbox_image.scrape.features import CONTAINER_LEVELS, block_features

ROOT = Path(__file__).resolve().parents[2]

# Regions whose wrappers (section, div) hold no block of their own: their proxies are made and freed
# while walking up from each block, which is where id() keys collided.
PAGE = (
    "<html><body>"
    + "".join(
        f"<div class='region{i}'><section><div><div><p>Paragraph {i} {'word ' * (i + 1)}</p>"
        f"<p><a href='/l{i}'>link {i}</a></p></div></div></section></div>"
        for i in range(30)
    )
    + "</body></html>"
)


def _votes(blocks: list[Block]) -> dict[str, list[bool]]:
    return {"a": [i % 3 != 0 for i in range(len(blocks))], "b": [i % 2 == 0 for i in range(len(blocks))]}


def _ancestor(element: object, level: int) -> object:
    for _ in range(level):
        parent = element.getparent()  # type: ignore[attr-defined]
        if parent is None:
            break
        element = parent
    return element


def test_ancestor_figures_count_exactly_the_blocks_below_each_ancestor() -> None:
    blocks = segment(choose_document(PAGE).root)
    votes = _votes(blocks)
    rows = block_features(blocks, votes, with_structure=False)
    total = sum(b.words for b in blocks)
    vote_sum = [sum(flags[i] for flags in votes.values()) / len(votes) for i in range(len(blocks))]
    for b, row in zip(blocks, rows, strict=True):
        for level in CONTAINER_LEVELS:
            ancestor = _ancestor(b.element, level)
            below = [(o, v) for o, v in zip(blocks, vote_sum, strict=True) if ancestor in o.element.iterancestors()]
            words = sum(o.words for o, _ in below)
            voted = sum(v * o.words for o, v in below)
            assert row[f"up{level}_share"] == words / total
            assert row[f"up{level}_votes"] == (voted / words if words else 0.0)
    # Each region's figures are its own: the first region's share is not the whole page's.
    assert rows[0]["up4_share"] < 0.1


def test_the_same_page_gives_the_same_features_and_markdown_twice() -> None:
    def run() -> tuple[list[dict[str, float]], str]:
        blocks = segment(choose_document(PAGE).root)
        rows = block_features(blocks, _votes(blocks))
        answers = {"a": "Paragraph 3 word word word word", "b": "Paragraph 7"}
        return rows, extract_html(PAGE, "https://example.org/", voter_texts=answers).markdown

    first = run()
    litter = [segment(choose_document(PAGE).root) for _ in range(3)]  # other proxies come and go
    assert run() == first
    del litter


_IN_A_FRESH_PROCESS = """
import json, sys
from sandbox_image.scrape.blocks import segment
from sandbox_image.scrape.document import choose_document
from sandbox_image.scrape.features import block_features
blocks = segment(choose_document(sys.stdin.read()).root)
votes = {"a": [i % 3 != 0 for i in range(len(blocks))], "b": [i % 2 == 0 for i in range(len(blocks))]}
print(json.dumps(block_features(blocks, votes), sort_keys=True))
"""


def test_two_fresh_processes_give_the_same_features() -> None:
    outputs = []
    for seed in ("1", "2"):  # another hash seed, another memory state
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [sys.executable, "-c", _IN_A_FRESH_PROCESS],
            input=PAGE,
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(json.loads(done.stdout))
    assert outputs[0] == outputs[1]
    assert len(outputs[0]) == 60
