"""Which URLs the sandbox browser may be sent to, and how URLs appear in logs."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.browser import port_error

ERROR_PAGE = "chrome-error:"  # the URL of the page Chromium shows for a navigation that failed
# No chrome: (nor chrome-extension:, devtools:, chrome-untrusted:, which were never allowed): the browser's own
# pages are debugging tools, and some break the tab — chrome://hang wedges it (every later call times out),
# chrome://crash kills its renderer.
ALLOWED_SCHEMES = frozenset({"http", "https", "about", "data"})
INTERNAL_SCHEMES = frozenset({"chrome", "chrome-extension", "chrome-untrusted", "devtools", "chrome-search"})
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(.*)$", re.DOTALL)
_SERVE_FILES_HINT = (
    "the browser cannot open local files: serve them over HTTP instead, e.g. start `python3 -m http.server 8000` "
    "in the workspace with code_run (background=true) and open http://127.0.0.1:8000/<path>"
)


def check_url(url: str, field: str = "url") -> str:
    """The URL to navigate to, or INVALID_PARAMETER for anything outside http(s), about: and data: (or with a port
    no server can have: Playwright would refuse it later with an internal message)."""
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
            hint=_hint_for(scheme),
            details={"field": field, "scheme": scheme, "allowedSchemes": sorted(ALLOWED_SCHEMES)},
        )
    if scheme in ("http", "https") and not _host_of(url):
        raise BoxwrightError(
            ErrorCode.INVALID_PARAMETER,
            f"{field} names no host (or a broken one)",
            hint="give the whole address, e.g. https://example.com/ or http://[::1]:8000/",
            details={"field": field},
        )
    problem = port_error(url)
    if problem is not None:
        raise BoxwrightError(
            ErrorCode.INVALID_PARAMETER,
            f"{field} cannot be opened: {problem}",
            hint="give a port from 1 to 65535, e.g. http://127.0.0.1:8000/, or none for the scheme's default",
            details={"field": field},
        )
    return url


def _host_of(url: str) -> str:
    """The host of an http(s) URL, or '' when it has none ("http://") or it does not parse ("http://[::1")."""
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


def _hint_for(scheme: str) -> str:
    if scheme == "file":
        return _SERVE_FILES_HINT
    if scheme in INTERNAL_SCHEMES:
        return (
            f"{scheme}: pages are the browser's own and are not opened for callers (some hang or crash the tab); "
            "use an http(s), about: or data: URL"
        )
    return "use an http(s), about: or data: URL"


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
