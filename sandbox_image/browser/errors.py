"""Playwright exceptions → short, clean BoxwrightErrors (never a call log or a stack trace)."""

from __future__ import annotations

import re

# The classes playwright.async_api re-exports, from the small module that defines them: importing
# playwright.async_api itself costs the agent ~7 MiB at start, so it waits for the first launch
# (tests/unit/test_browser_lazy_import.py checks these are still the same classes).
from playwright._impl._errors import Error as PlaywrightError
from playwright._impl._errors import TimeoutError as PlaywrightTimeoutError

from rpc.errors import BoxwrightError, ErrorCode

__all__ = [
    "NET_ERROR",
    "PlaywrightError",
    "PlaywrightTimeoutError",
    "blocking_reason",
    "clean_message",
    "execution_error",
    "net_error_to_code",
]

MAX_MESSAGE = 300
_API_PREFIX = re.compile(r"^[A-Z][A-Za-z]*\.[a-z_][A-Za-z_]*: ")  # "Locator.click: "
# What Playwright's call log says when an element exists but cannot be acted on.
_REASON = re.compile(
    r"element is not (?:visible|enabled|stable|editable|attached)"
    r"|element is outside of the viewport"
    r"|element was detached from the DOM"
    r"|did not find some options"
    r"|<[^>\n]{1,120}> (?:from <[^>\n]{1,60}> subtree )?intercepts pointer events"
)


def clean_message(exc: BaseException) -> str:
    """The first line of an error, without the "Locator.click: Error: " prefix and the call log."""
    text = exc.message if isinstance(exc, PlaywrightError) else str(exc)
    text = text.split("\nCall log:", 1)[0].strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    first = _API_PREFIX.sub("", first).removeprefix("Error: ")
    return first if len(first) <= MAX_MESSAGE else first[: MAX_MESSAGE - 1] + "…"


def blocking_reason(exc: BaseException) -> str | None:
    """Why Playwright kept waiting on an element that exists ("element is not enabled"), if it said."""
    found = _REASON.findall(str(exc))
    return found[-1][:200] if found else None


def is_closed(exc: BaseException) -> bool:
    text = str(exc)
    return "has been closed" in text or "Target closed" in text or "Target crashed" in text


def execution_error(what: str, exc: BaseException, **details: object) -> BoxwrightError:
    return BoxwrightError(ErrorCode.EXECUTION_ERROR, f"{what} failed: {clean_message(exc)}", details=dict(details))


# -- why a navigation failed: Chromium's net error, as our most specific code -------------------------
NET_ERROR = re.compile(r"net::(ERR_[A-Z0-9_]+)")  # Chromium's name for why a request failed

DNS_ERRORS = frozenset({"ERR_NAME_NOT_RESOLVED", "ERR_NAME_RESOLUTION_FAILED", "ERR_DNS_TIMED_OUT"})
UNREACHABLE_ERRORS = frozenset(
    {
        "ERR_CONNECTION_REFUSED",
        "ERR_CONNECTION_TIMED_OUT",
        "ERR_CONNECTION_FAILED",
        "ERR_CONNECTION_RESET",
        "ERR_CONNECTION_CLOSED",
        "ERR_ADDRESS_UNREACHABLE",
        "ERR_ADDRESS_INVALID",
        "ERR_NETWORK_ACCESS_DENIED",
        "ERR_INTERNET_DISCONNECTED",
        "ERR_TIMED_OUT",
        "ERR_EMPTY_RESPONSE",
        "ERR_SOCKET_NOT_CONNECTED",
    }
)


# The proxy (a context's `proxy`) did not answer, would not connect on, or refused the credentials.
PROXY_ERRORS = frozenset(
    {
        "ERR_PROXY_CONNECTION_FAILED",
        "ERR_TUNNEL_CONNECTION_FAILED",
        "ERR_SOCKS_CONNECTION_FAILED",
        "ERR_SOCKS_CONNECTION_HOST_UNREACHABLE",
        "ERR_PROXY_AUTH_UNSUPPORTED",
        "ERR_PROXY_AUTH_REQUESTED",
        "ERR_PROXY_CERTIFICATE_INVALID",
        "ERR_NO_SUPPORTED_PROXIES",
    }
)
PROXY_HINT = (
    "check proxy.server — it must answer from the sandbox (its network mode must let it reach the proxy) — and "
    "its username and password; or leave proxy out to go straight to the site"
)

# The site asked for HTTP authentication (a 401 challenge) and had no answer, or refused the one it got.
AUTH_ERROR = "ERR_INVALID_AUTH_CREDENTIALS"


def net_error_to_code(net_error: str) -> ErrorCode:
    if net_error in PROXY_ERRORS:
        return ErrorCode.HOST_UNREACHABLE
    if net_error in DNS_ERRORS or net_error.startswith("ERR_DNS_"):
        return ErrorCode.DNS_FAILURE
    if net_error in UNREACHABLE_ERRORS:
        return ErrorCode.HOST_UNREACHABLE
    if net_error.startswith(("ERR_CERT_", "ERR_SSL_", "ERR_TLS_")) or "SSL" in net_error:
        return ErrorCode.TLS_ERROR
    return ErrorCode.NAVIGATION_FAILED
