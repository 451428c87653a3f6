"""host.logs: no credential reaches the server's log, whatever the level."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from host import logs


@pytest.fixture
def debug_logging() -> Iterator[io.StringIO]:
    """The server's logging set up at DEBUG, writing into a buffer instead of stderr."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    root.handlers = []
    try:
        logs.setup("DEBUG")
        buffer = io.StringIO()
        for handler in root.handlers:
            assert isinstance(handler, logging.StreamHandler)
            handler.setStream(buffer)
        yield buffer
    finally:
        root.handlers, root.level = saved[0], saved[1]
        for name in logs.QUIET:
            logging.getLogger(name).setLevel(logging.NOTSET)


def test_at_debug_the_websocket_handshake_and_any_credential_stay_out(
    debug_logging: pytest.CaptureFixture[str],
) -> None:
    # What websockets logs at DEBUG for the live view's relay to the agent (the header with the sandbox's token).
    logging.getLogger("websockets.client").debug("> Authorization: Bearer %s", "agent-token-1")
    logging.getLogger("host.live").debug("relay headers %s", {"Authorization": "Bearer agent-token-2"})
    logging.getLogger("host.live").info("cookie bw_live=view-secret-3; path=/")
    logging.getLogger("host.mcp").info("Basic dXNlcjpwYXNz from a proxy URL")
    logging.getLogger("host.mcp").info("a line with no credential, name=%s", "alice")
    err = debug_logging.getvalue()
    for secret in ("agent-token-1", "agent-token-2", "view-secret-3", "dXNlcjpwYXNz"):
        assert secret not in err
    assert "Bearer [redacted]" in err and "bw_live=[redacted]" in err
    assert "a line with no credential, name=alice" in err


def test_a_client_that_hangs_up_is_one_line_not_a_traceback(debug_logging: io.StringIO) -> None:
    """The SDK logs a body cut short by the client as an ERROR with a traceback, one per cancelled call."""
    from starlette.requests import ClientDisconnect

    try:
        raise ClientDisconnect()
    except ClientDisconnect:
        logging.getLogger("mcp.server.streamable_http").exception("Error handling POST request")
    try:
        raise ValueError("a real failure")
    except ValueError:
        logging.getLogger("mcp.server.streamable_http").exception("Error handling POST request")
    lines = debug_logging.getvalue().splitlines()
    assert "INFO    mcp.server.streamable_http: Error handling POST request: the client disconnected first" in lines[0]
    assert "ERROR" in lines[1] and "Traceback" in lines[2] and "ClientDisconnect" not in debug_logging.getvalue()


def test_the_no_token_warning_reaches_the_log_whole(debug_logging: io.StringIO) -> None:
    """It read "no bearer [redacted] configured": worded so the redactor has nothing to mask, which still
    masks whatever follows "bearer"."""
    from host.mcp.server import NO_TOKENS_WARNING

    logging.getLogger("host.mcp.server").warning(NO_TOKENS_WARNING)
    logging.getLogger("host.mcp.server").warning("no bearer tokens configured")
    err = debug_logging.getvalue()
    assert NO_TOKENS_WARNING in err and "[redacted]" not in err.split("\n")[0]
    assert "no bearer [redacted] configured" in err  # the redactor is as strict as before
