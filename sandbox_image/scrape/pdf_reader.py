"""Read a PDF's text, links and stated metadata: `python pdf_reader.py < file.pdf` prints one JSON object.

Run by sandbox_image.scrape.pdf as a child process of its own, by path (so it imports nothing of the
agent but pypdf), under memory and CPU limits set (reader_main.serve) before the PDF is touched: the PDF comes from an
untrusted site, and a parser's worst cases (loops, memory blow-ups) then cost this process only.
Stdlib and pypdf only.
"""

from __future__ import annotations

import sys
from io import BytesIO
from typing import Any

MAX_PAGES = 2000  # more pages than this are left out (the text is capped further by the caller)
MEMORY_BYTES = 1024 * 1024 * 1024
CPU_SECONDS = 120  # the caller kills it at the call's deadline anyway; this bounds a child left behind


def _text(value: Any) -> str:
    return " ".join(str(value).split()) if value else ""


def _uri(annotation: Any) -> str:
    """The URI a link annotation points to ("" for internal links and anything else)."""
    try:
        obj = annotation.get_object()
        action = obj.get("/A")
        action = action.get_object() if action is not None else None
        if action is not None and action.get("/S") == "/URI":
            return _text(action.get("/URI"))
    except Exception:  # a malformed annotation is skipped, not fatal
        pass
    return ""


def read(data: bytes) -> dict[str, Any]:
    from pypdf import PdfReader

    reader = PdfReader(BytesIO(data))
    if reader.is_encrypted and not reader.decrypt(""):
        raise ValueError("the PDF is encrypted with a password")
    info = reader.metadata
    created = ""
    if info is not None:
        try:
            stamp = info.creation_date
            created = stamp.isoformat() if stamp else ""
        except Exception:  # an unparseable /CreationDate is left out
            created = ""
    root = reader.root_object
    pages: list[str] = []
    links: list[str] = []
    for page in reader.pages[:MAX_PAGES]:
        try:
            pages.append(page.extract_text() or "")
        except Exception:  # one unreadable page does not lose the others
            pages.append("")
        for annotation in page.get("/Annots") or []:
            if uri := _uri(annotation):
                links.append(uri)
    return {
        "pages": pages,
        "pageCount": len(reader.pages),
        "links": links,
        "title": _text(info.title) if info is not None else "",
        "author": _text(info.author) if info is not None else "",
        "subject": _text(info.subject) if info is not None else "",
        "created": created,
        "language": _text(root.get("/Lang")),
    }


def main() -> int:
    # Beside this script, which is run by path (its directory first on sys.path); not a package import.
    from reader_main import serve  # type: ignore[import-not-found]

    return serve(read, memory_bytes=MEMORY_BYTES, cpu_seconds=CPU_SECONDS)


if __name__ == "__main__":
    sys.exit(main())
