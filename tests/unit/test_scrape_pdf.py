"""PDFs read as text (sandbox_image.scrape.pdf): the child reader on real PDF bytes, the renderers, and
that a PDF the reader cannot read, or one that takes too long, ends in a clear error with the child gone."""

from __future__ import annotations

import asyncio
import runpy
from pathlib import Path

import pytest

from rpc.errors import BoxwrightError
from sandbox_image.scrape import pdf

SITE = Path(__file__).parents[1] / "integration" / "assets" / "scrape_site.py"
make_pdf = runpy.run_path(str(SITE))["make_pdf"]  # the PDF the integration test's sandbox serves
REPORT_PDF: bytes = make_pdf("Fox report", ["Foxes run fast.", "Dogs sleep late."], "https://example.org/fox")
URL = "https://example.org/docs/report.pdf"


async def test_text_links_and_metadata_come_out() -> None:
    doc = await pdf.read_pdf(REPORT_PDF, URL, 30)
    assert doc.pages == ["Foxes run fast.", "Dogs sleep late."] and doc.page_count == 2
    assert (doc.title, doc.author, doc.language) == ("Fox report", "Ann Writer", "en-GB")
    assert doc.created == "2026-11-01T10:00:00+00:00"
    assert pdf.links_of(doc, URL) == ["https://example.org/fox"]


def test_renderers() -> None:
    pages = ["Intro line one\nline two\n\nSecond <para>", ""]
    doc = pdf.PdfDocument(pages=pages, links=["/a", "/a", "mailto:x@y", "b"])
    assert pdf.to_markdown(doc, URL) == "# report.pdf\n\nIntro line one  \nline two\n\nSecond <para>\n"
    assert pdf.to_html(doc, URL) == (
        "<h1>report.pdf</h1>\n"
        '<section data-page="1"><p>Intro line one<br>line two</p><p>Second &lt;para&gt;</p></section>\n'
        '<section data-page="2"></section>'
    )
    assert pdf.links_of(doc, URL) == ["https://example.org/a", "https://example.org/docs/b"]


@pytest.mark.parametrize("data", [b"%PDF-1.4\n%%EOF\n", b"not a pdf at all", REPORT_PDF[: len(REPORT_PDF) // 2]])
async def test_an_unreadable_pdf_is_a_clear_error(data: bytes) -> None:
    with pytest.raises(BoxwrightError) as caught:
        await pdf.read_pdf(data, URL, 30)
    err = caught.value
    assert err.code.value == "UNSUPPORTED_CONTENT_TYPE" and "could not be read" in err.message
    assert err.details == {"url": URL, "contentType": "application/pdf"} and "code_run" in err.hint


async def test_out_of_time_kills_the_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[asyncio.subprocess.Process] = []
    real = asyncio.create_subprocess_exec

    async def spy(*args: object, **kwargs: object) -> asyncio.subprocess.Process:
        proc = await real("sleep", "30", **kwargs)  # type: ignore[arg-type]
        started.append(proc)
        return proc

    monkeypatch.setattr(asyncio, "create_subprocess_exec", spy)
    with pytest.raises(BoxwrightError) as caught:
        await pdf.read_pdf(REPORT_PDF, URL, 0.3)
    assert caught.value.code.value == "OPERATION_TIMEOUT"
    assert started[0].returncode is not None  # killed and reaped
