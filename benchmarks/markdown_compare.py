"""HTML-to-markdown converters side by side: correctness on the constructs scrape must get right,
and speed on real pages. Run by hand (needs the `bench` extra):

    .venv/bin/python benchmarks/markdown_compare.py [--corpus DIR] [--pages 60]

Converters: html-to-markdown 3.x (what scrape uses), markdownify, and trafilatura's own markdown
output (extraction + markdown in one, so its speed includes extraction). html2text is left out:
it is GPL-3.0, so it cannot ship in the image whatever it scores.
"""

from __future__ import annotations

import argparse
import gzip
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

BASE = "https://example.org/docs/page.html"

# (name, HTML, check on the markdown)
CASES: list[tuple[str, str, Callable[[str], bool]]] = [
    (
        "GFM table",
        "<table><tr><th>Name</th><th>Value</th></tr><tr><td>a</td><td>1</td></tr></table>",
        lambda m: bool(re.search(r"\|\s*Name\s*\|\s*Value\s*\|\n\|\s*:?-{3,}", m)),
    ),
    (
        "pipe in a cell escaped",
        "<table><tr><th>k</th><th>v</th></tr><tr><td>a | b</td><td>1</td></tr></table>",
        lambda m: "a \\| b" in m,
    ),
    (
        "code block with language",
        '<pre><code class="language-python">x = 1\n</code></pre>',
        lambda m: "```python\nx = 1" in m,
    ),
    (
        "nested list indented",
        "<ul><li>one<ul><li>two</li></ul></li><li>three</li></ul>",
        lambda m: bool(re.search(r"^[-*+] one\n\s{2,4}[-*+] two\n[-*+] three", m.strip(), re.M)),
    ),
    (
        "ordered list",
        "<ol><li>first</li><li>second</li></ol>",
        lambda m: bool(re.search(r"^1\. first\n2\. second", m.strip(), re.M)),
    ),
    (
        "emphasis",
        "<p><strong>bold</strong> and <em>italic</em></p>",
        lambda m: bool(re.search(r"(\*\*|__)bold(\*\*|__) and [*_]italic[*_]", m)),
    ),
    (
        "inline code with backtick",
        "<p><code>a`b</code></p>",
        lambda m: "``a`b``" in m or "`` a`b ``" in m,
    ),
    (
        "relative link made absolute",
        '<p><a href="../guide/">Guide</a></p>',
        lambda m: "(https://example.org/guide/)" in m,
    ),
    (
        "relative image made absolute",
        '<p><img src="img/a.png" alt="A"></p>',
        lambda m: "![A](https://example.org/docs/img/a.png)" in m,
    ),
    (
        "heading",
        "<h2>Section</h2><p>text</p>",
        lambda m: "## Section" in m,
    ),
]


def html_to_markdown_3(html: str) -> str:
    from sandbox_image.scrape.dom import parse_html
    from sandbox_image.scrape.markdown import to_markdown

    root = parse_html(html if "<html" in html else f"<html><body>{html}</body></html>")
    body = root.find("body")
    return to_markdown(body if body is not None else root, BASE)


def markdownify_(html: str) -> str:
    from markdownify import markdownify

    # markdownify has no base URL: links stay as written.
    return markdownify(html, heading_style="ATX", bullets="-")


def trafilatura_markdown(html: str) -> str:
    import trafilatura

    # Embedded in an article long enough that trafilatura keeps it: its markdown comes with extraction.
    filler = "<p>" + "This paragraph is here so that the extractor sees a real article body. " * 4 + "</p>"
    document = html if "<html" in html else f"<html><body><article>{filler}{html}{filler}</article></body></html>"
    return (
        trafilatura.extract(
            document,
            url=BASE,
            output_format="markdown",
            include_formatting=True,
            include_links=True,
            include_images=True,
        )
        or ""
    )


CONVERTERS: dict[str, Callable[[str], str]] = {
    "html-to-markdown 3 (ours)": html_to_markdown_3,
    "markdownify": markdownify_,
    "trafilatura markdown": trafilatura_markdown,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared/corpora/wcxb-dev-300")
    parser.add_argument("--pages", type=int, default=60)
    args = parser.parse_args()

    print("| construct | " + " | ".join(CONVERTERS) + " |")
    print("|---|" + "---|" * len(CONVERTERS))
    for name, html, check in CASES:
        cells = []
        for convert in CONVERTERS.values():
            try:
                cells.append("yes" if check(convert(html)) else "no")
            except Exception as exc:  # a converter crashing on a construct is a "no"
                cells.append(f"error ({type(exc).__name__})")
        print(f"| {name} | " + " | ".join(cells) + " |")

    pages = sorted((args.corpus / "html").glob("*.html.gz"))[: args.pages]
    htmls = []
    for path in pages:
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
            htmls.append(f.read())
    print(f"\nspeed on {len(htmls)} whole pages (ms per page, median / mean):")
    for label, convert in CONVERTERS.items():
        times = []
        for html in htmls:
            started = time.perf_counter()
            try:
                convert(html)
            except Exception:  # speed only: a failure is just not timed
                continue
            times.append((time.perf_counter() - started) * 1000)
        print(f"- {label}: {statistics.median(times):.1f} / {statistics.fmean(times):.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
