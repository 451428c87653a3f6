"""Scrape's voters on pages of many short blocks (a long table, a big list), against their own library
calls in the same run. Run by hand (needs the `bench` extra):

    .venv/bin/python benchmarks/voter_scaling.py [--sizes 1000,4000,16000]

Today it measures jusText: the voter runs justext's steps with a linear revision (voters.py), the baseline
is justext.justext itself, whose neighbour search is quadratic in runs of short paragraphs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def page(rows: int) -> str:
    """A table of `rows` short cells after a paragraph of prose: every cell is a short paragraph to jusText."""
    prose = "<p>" + "The figures below were collected over the years and are given as they were read. " * 4 + "</p>"
    cells = "".join(f"<tr><td>row {i}</td></tr>" for i in range(rows))
    return f"<html><body><h1>Readings</h1>{prose}<table>{cells}</table></body></html>"


def seconds(call: object, html: str) -> float:
    started = time.perf_counter()
    call(html)  # type: ignore[operator]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,4000,16000")
    args = parser.parse_args()
    import justext

    from sandbox_image.scrape.voters import _stoplist, jus_text

    stoplist = _stoplist("en")
    print("| short paragraphs | justext.justext (baseline) s | scrape's jusText voter s |")
    print("|---:|---:|---:|")
    for rows in (int(n) for n in args.sizes.split(",")):
        html = page(rows)
        theirs = seconds(lambda h: justext.justext(h, stoplist), html)
        ours = seconds(lambda h: jus_text(h, "", "en"), html)
        print(f"| {rows} | {theirs:.2f} | {ours:.2f} |", flush=True)


if __name__ == "__main__":
    main()
