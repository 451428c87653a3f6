"""Which URLs the sandbox browser may be sent to, and how URLs appear in logs."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from rpc.errors import BoxwrightError, ErrorCode

ERROR_PAGE = "chrome-error:"  # the URL of the page Chromium shows for a navigation that failed
ALLOWED_SCHEMES = frozenset({"http", "https", "about", "data", "chrome"})
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(.*)$", re.DOTALL)
_SERVE_FILES_HINT = (
    "the browser cannot open local files: serve them over HTTP instead, e.g. start `python3 -m http.server 8000` "
    "in the workspace with code_run (background=true) and open http://127.0.0.1:8000/<path>"
)


def check_url(url: str, field: str = "url") -> str:
    """The URL to navigate to, or INVALID_PARAMETER for anything outside http(s), about:, data:, chrome:."""
    url = url.strip()
    match = _SCHEME.match(url)
    if match is None or re.match(r"\d+(/|$)", match.group(2)):  # "example.com", "localhost:8000/x"
        raise BoxwrightError(
            ErrorCode.INVALID_PARAMETER,
            f"{field} is not an absolute URL",
            hint="include the scheme, e.g. https://example.com or http://127.0.0.1:8000/",
            details={"field": field},
        )
    scheme = match.group(1).lower()
    if scheme not in ALLOWED_SCHEMES:
        raise BoxwrightError(
            ErrorCode.INVALID_PARAMETER,
            f"{scheme}: URLs are not allowed in the sandbox browser",
            hint=_SERVE_FILES_HINT if scheme == "file" else "use an http(s), about:, data: or chrome: URL",
            details={"field": field, "scheme": scheme, "allowedSchemes": sorted(ALLOWED_SCHEMES)},
        )
    return url


def redact(url: str) -> str:
    """scheme://host/path only: user info, query strings and fragments may carry tokens, data: URLs whole pages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable url>"
    if parts.scheme in ("data", "javascript"):
        return f"{parts.scheme}:…"
    host = parts.netloc.rsplit("@", 1)[-1]  # user:password@ is a credential too
    return f"{parts.scheme}://{host}{parts.path}"[:200] if parts.netloc else f"{parts.scheme}:{parts.path}"[:200]
