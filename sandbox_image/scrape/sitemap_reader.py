"""Read an XML sitemap: `python sitemap_reader.py < sitemap.xml` prints one JSON object.

Run by sandbox_image.scrape.sitemap as a child process of its own (child.py), by path, under memory and
CPU limits set (reader_main.serve) before the document is touched: it comes from an untrusted site. The
standard library's expat parser resolves no external entities and bounds entity expansion. Stdlib only.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from io import BytesIO
from typing import Any

MAX_ENTRIES = 50_000  # the sitemap protocol's own limit per file
MEMORY_BYTES = 512 * 1024 * 1024
CPU_SECONDS = 60  # the caller kills it at the call's deadline anyway; this bounds a child left behind


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1].lower()


def read(data: bytes) -> dict[str, Any]:
    kind = ""
    entries: list[dict[str, str]] = []
    count = 0
    for event, element in ET.iterparse(BytesIO(data), events=("start", "end")):
        name = _local(element.tag)
        if event == "start":
            if not kind:
                if name not in ("urlset", "sitemapindex"):
                    return {"error": f"it is XML with a <{name}> root, not a sitemap"}
                kind = name
            continue
        if name in ("url", "sitemap"):
            count += 1
            if len(entries) < MAX_ENTRIES:
                fields = {_local(child.tag): (child.text or "").strip() for child in element}
                if fields.get("loc"):
                    entries.append({"loc": fields["loc"], "lastmod": fields.get("lastmod", "")})
            element.clear()
    return {"kind": kind, "entries": entries, "count": count}


def main() -> int:
    # Beside this script, which is run by path (its directory first on sys.path); not a package import.
    from reader_main import serve  # type: ignore[import-not-found]

    return serve(read, memory_bytes=MEMORY_BYTES, cpu_seconds=CPU_SECONDS)


if __name__ == "__main__":
    sys.exit(main())
