"""scrape: the block features are the same on every run.

Until round 7 the ancestor figures (`up1/up2/up4_*`) were keyed by the `id()` of lxml's short-lived
proxy objects; a freed proxy's id came back as another ancestor's, so they were mostly missing and
otherwise another element's, differently from one process to the next. These tests fail on that code.
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
from sandbox_image.scrape.features import block_features

ROOT = Path(__file__).resolve().parents[2]

# Regions whose wrappers (section, div) hold no block of their own: their proxies are made and freed
# while walking up from each block, which is where the old id() keys collided.
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
document = choose_document(sys.stdin.read())
held = list(document.root.iter()) if sys.argv[1] == "hold" else []  # another memory state: no proxy freed
blocks = segment(document.root)
votes = {"a": [i % 3 != 0 for i in range(len(blocks))], "b": [i % 2 == 0 for i in range(len(blocks))]}
print(json.dumps(block_features(blocks, votes), sort_keys=True))
"""


def test_two_fresh_processes_give_the_same_features() -> None:
    outputs = []
    for seed, hold in (("1", "free"), ("2", "hold")):  # another hash seed, another memory state
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [sys.executable, "-c", _IN_A_FRESH_PROCESS, hold],
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


def test_no_feature_is_keyed_by_object_identity() -> None:
    """The features of a page do not change with what else holds its elements (proxies kept alive)."""
    document = choose_document(PAGE)
    blocks = segment(document.root)
    plain = block_features(blocks, _votes(blocks))
    held = list(document.root.iter())  # every element's proxy alive: ids can no longer be recycled
    assert block_features(blocks, _votes(blocks)) == plain
    del held


def test_look_alike_siblings_are_counted_once_per_parent() -> None:
    """Counted again for every block, an article of 8000 paragraphs took minutes to read (quadratic)."""
    from sandbox_image.scrape import features

    cards = "".join(f'<div class="card"><p>card number {i} text</p></div>' for i in range(5))
    paras = "".join(f"<p>para {i} words here</p>" for i in range(6))
    html = f"<html><body><article>{paras}{cards}</article></body></html>"
    blocks = segment(choose_document(html).root)
    kinds: features._Kinds = {}
    alike = [features._siblings_alike(b, kinds) for b in blocks]
    assert alike == [5] * 6 + [4] * 5  # six <p> among themselves; each card's <p> alone, its <div> among five
    assert len(kinds) == 7  # <body>, <article> and the five cards, each counted once
