"""Baseline extractors for benchmarks/scrape_quality.py, each `(html, url) -> plain text`.

Standalone on purpose (no project imports): the same file runs as a worker
under another interpreter, e.g. a Python 3.12 venv for rs-trafilatura and magic-html, whose wheels
need 3.12:

    python3.12 benchmarks/scrape_baselines.py worker rs-trafilatura magic-html < jobs.jsonl

Each job line is {"id", "path" (a .html or .html.gz file), "url"}; each answer line is
{"id", "system", "text", "ms"} or {"id", "system", "error"}. The node baselines (Mozilla
Readability and Defuddle on jsdom) run through `node_worker.js` beside this file in the same way.
"""

from __future__ import annotations

import gzip
import json
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

TIMEOUT_S = 30


def html_to_text(fragment: str) -> str:
    """Text of an HTML fragment that an extractor returned, with block breaks kept."""
    if not fragment or not fragment.strip():
        return ""
    import html_text

    return html_text.extract_text(fragment, guess_layout=True)


def _trafilatura(html: str, url: str) -> str:
    import trafilatura

    return trafilatura.extract(html, url=url or None) or ""


def _trafilatura_recall(html: str, url: str) -> str:
    import trafilatura

    return trafilatura.extract(html, url=url or None, favor_recall=True) or ""


def _trafilatura_precision(html: str, url: str) -> str:
    import trafilatura

    return trafilatura.extract(html, url=url or None, favor_precision=True) or ""


def _readability_lxml(html: str, url: str) -> str:
    from readability import Document

    return html_to_text(Document(html, url=url or None).summary(html_partial=True))


def _justext(html: str, url: str) -> str:
    import justext

    paragraphs = justext.justext(html.encode("utf-8"), justext.get_stoplist("English"))
    return "\n\n".join(p.text for p in paragraphs if not p.is_boilerplate)


def _goose3(html: str, url: str) -> str:
    from goose3 import Goose

    with Goose() as goose:
        return goose.extract(raw_html=html).cleaned_text or ""


def _newspaper4k(html: str, url: str) -> str:
    import newspaper

    # fetch_images=False: by default newspaper4k downloads the page's images to pick a top image.
    article = newspaper.Article(url or "http://localhost/", fetch_images=False)
    article.download(input_html=html)
    article.parse()
    return article.text or ""


def _boilerpy3(html: str, url: str) -> str:
    from boilerpy3 import extractors

    return extractors.ArticleExtractor(raise_on_failure=False).get_content(html) or ""


def _resiliparse(html: str, url: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(html, main_content=True)


def _readabilipy(html: str, url: str) -> str:
    from readabilipy import simple_json_from_html_string

    article = simple_json_from_html_string(html, use_readability=False)
    return "\n\n".join(p.get("text", "") for p in article.get("plain_text") or [])


def _trafilaturacore(html: str, url: str) -> str:
    import trafilaturacore

    return html_to_text(trafilaturacore.clean(html, url=url or None).html or "")


def _html_text(html: str, url: str) -> str:
    import html_text

    return html_text.extract_text(html, guess_layout=True)


def _inscriptis(html: str, url: str) -> str:
    from inscriptis import get_text

    return get_text(html)


def _rs_trafilatura(html: str, url: str) -> str:
    import rs_trafilatura

    return rs_trafilatura.extract(html, url=url or None).main_content or ""


def _magic_html(html: str, url: str) -> str:
    from magic_html import GeneralExtractor

    return html_to_text(GeneralExtractor().extract(html, base_url=url or "").get("html") or "")


# name -> (function, what it is); "full page" systems are not main-content extractors: they show
# the recall ceiling and how much boilerplate a page carries.
EXTRACTORS: dict[str, Callable[[str, str], str]] = {
    "trafilatura": _trafilatura,
    "trafilatura-recall": _trafilatura_recall,
    "trafilatura-precision": _trafilatura_precision,
    "readability-lxml": _readability_lxml,
    "justext": _justext,
    "goose3": _goose3,
    "newspaper4k": _newspaper4k,
    "boilerpy3": _boilerpy3,
    "resiliparse": _resiliparse,
    "readabilipy": _readabilipy,
    "trafilaturacore": _trafilaturacore,
    "html-text (full page)": _html_text,
    "inscriptis (full page)": _inscriptis,
    "rs-trafilatura": _rs_trafilatura,
    "magic-html": _magic_html,
}
# Which need a Python 3.12 (their wheels say so); the rest run in the project's venv.
NEEDS_PY312 = ("rs-trafilatura", "magic-html")


class _Timeout(Exception):
    pass


def _alarm(_signum: int, _frame: object) -> None:
    raise _Timeout()


def run_one(name: str, html: str, url: str) -> dict[str, object]:
    """One extractor on one page, bounded by TIMEOUT_S (SIGALRM: main thread only)."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT_S)
    started = time.perf_counter()
    try:
        text = EXTRACTORS[name](html, url)
        return {"text": text or "", "ms": (time.perf_counter() - started) * 1000}
    except _Timeout:
        return {"error": f"timeout after {TIMEOUT_S} s"}
    except Exception as exc:  # a baseline failing on a page scores 0 there, as in WCXB
        return {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    finally:
        signal.alarm(0)


def read_html(path: str) -> str:
    if path.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
            return f.read()
    return Path(path).read_text(encoding="utf-8", errors="replace")


def forbid_network() -> None:
    """No baseline may reach the network (some fetch images by default): refuse every lookup and
    connection, so a page's original host is never contacted, whatever a library's defaults."""
    import socket

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise OSError("network access is disabled in the benchmark worker")

    socket.getaddrinfo = refuse  # type: ignore[assignment]
    socket.create_connection = refuse  # type: ignore[assignment]
    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse  # type: ignore[method-assign]


def worker(names: list, stdin=sys.stdin, stdout=sys.stdout) -> None:
    forbid_network()
    for name in names:
        if name not in EXTRACTORS:
            raise SystemExit(f"unknown extractor {name!r}")
    for line in stdin:
        job = json.loads(line)
        html = read_html(job["path"])
        for name in names:
            answer: dict[str, object | None] = {"id": job["id"], "system": name}
            answer.update(run_one(name, html, job.get("url") or ""))
            stdout.write(json.dumps(answer) + "\n")
            stdout.flush()


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] != "worker":
        raise SystemExit("usage: scrape_baselines.py worker NAME [NAME ...] < jobs.jsonl")
    worker(sys.argv[2:])
