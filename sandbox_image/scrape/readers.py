"""The files scrape reads as text rather than as the page the browser made of them — a PDF, a feed, a
sitemap (loading.Loaded.reader) — each by its module; one table for `scrape` and `browser_scrape`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sandbox_image.scrape import feed, loading, output, pdf, sitemap

READERS: dict[loading.FileReader, Callable[[bytes, str, str, float], Awaitable[output.FileText]]] = {
    "pdf": pdf.read_file,
    "feed": feed.read_file,
    "sitemap": sitemap.read_file,
}
