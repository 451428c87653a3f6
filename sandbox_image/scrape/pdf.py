"""A PDF scraped as markdown, html or links: its text page by page, its link annotations, and the title,
author, subject, date and language it states.

The PDF is parsed by pdf_reader.py in a child process (child.py: memory and CPU limits, killed at the
call's deadline or when the call is cancelled), never in the agent: it comes from an untrusted site. There is
no "main content" in a PDF: the whole text is returned (`mainContent` false), whatever onlyMainContent
says.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.scrape import ScrapeMetadata
from sandbox_image.browser.urls import redact
from sandbox_image.scrape.child import ReaderFailed, run_reader
from sandbox_image.scrape.output import FileText

PDF_TYPE = "application/pdf"
READER = Path(__file__).with_name("pdf_reader.py")


@dataclass(frozen=True)
class PdfDocument:
    pages: list[str]
    title: str = ""
    author: str = ""
    subject: str = ""
    created: str = ""
    language: str = ""
    links: list[str] = field(default_factory=list)
    page_count: int = 0

    def paragraphs(self) -> list[list[str]]:
        """Each page's paragraphs (runs of non-blank lines), lines stripped."""
        out = []
        for text in self.pages:
            paras: list[str] = []
            current: list[str] = []
            for line in text.splitlines():
                if line.strip():
                    current.append(line.strip())
                elif current:
                    paras.append("\n".join(current))
                    current = []
            if current:
                paras.append("\n".join(current))
            out.append(paras)
        return out


def unreadable(url: str, why: str) -> BoxwrightError:
    return BoxwrightError(
        ErrorCode.UNSUPPORTED_CONTENT_TYPE,
        f"{redact(url)} is a PDF that could not be read: {why}",
        hint="the PDF is damaged, encrypted or too complex to read here: fetch the file with code_run (curl) and "
        "process it with a tool of your choice",
        details={"url": redact(url), "contentType": PDF_TYPE},
    )


async def read_pdf(data: bytes, url: str, timeout_s: float) -> PdfDocument:
    """Parse `data` in a child process within `timeout_s`; killed when the time is up or the call ends."""
    try:
        parsed = await run_reader(READER, data, timeout_s, what="PDF", url=url)
    except ReaderFailed as exc:
        raise unreadable(url, str(exc)) from None
    return PdfDocument(
        pages=[str(p) for p in parsed["pages"]],
        title=parsed["title"],
        author=parsed["author"],
        subject=parsed["subject"],
        created=parsed["created"],
        language=parsed["language"],
        links=[str(link) for link in parsed["links"]],
        page_count=int(parsed["pageCount"]),
    )


def title_of(doc: PdfDocument, url: str) -> str:
    """The title the PDF states, else its file name."""
    return doc.title or Path(urlsplit(url).path).name or url


def to_markdown(doc: PdfDocument, url: str) -> str:
    """`# title`, then each page's paragraphs (a line break inside a paragraph kept as a hard break)."""
    blocks = [f"# {title_of(doc, url)}"]
    for paras in doc.paragraphs():
        blocks.extend("  \n".join(para.splitlines()) for para in paras)
    return "\n\n".join(blocks) + "\n"


def to_html(doc: PdfDocument, url: str) -> str:
    """A minimal document: the title, then one <section> per page with its paragraphs."""
    parts = [f"<h1>{html.escape(title_of(doc, url))}</h1>"]
    for number, paras in enumerate(doc.paragraphs(), 1):
        body = "".join(f"<p>{'<br>'.join(html.escape(line) for line in para.splitlines())}</p>" for para in paras)
        parts.append(f'<section data-page="{number}">{body}</section>')
    return "\n".join(parts)


def links_of(doc: PdfDocument, url: str) -> list[str]:
    """The link annotations' http(s) targets, absolute, deduplicated, in document order."""
    seen: dict[str, None] = {}
    for link in doc.links:
        absolute = urljoin(url, link)
        if urlsplit(absolute).scheme in ("http", "https"):
            seen.setdefault(absolute)
    return list(seen)


async def read_file(data: bytes, url: str, _content_type: str, timeout_s: float) -> FileText:
    """The PDF as scrape answers it; pages past what is read (pdf_reader.MAX_PAGES) count as cut."""
    doc = await read_pdf(data, url, timeout_s)
    stated = {"author": doc.author, "description": doc.subject, "publishedDate": doc.created,
              "language": doc.language}  # fmt: skip
    return FileText(
        url=url,
        title=title_of(doc, url),
        content_type=PDF_TYPE,
        metadata=ScrapeMetadata.model_validate({k: v for k, v in stated.items() if v}),
        markdown=lambda: to_markdown(doc, url),
        html=lambda: to_html(doc, url),
        links=lambda: links_of(doc, url),
        cut=doc.page_count > len(doc.pages),
    )
