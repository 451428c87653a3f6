"""Logging to stderr (stdout is the MCP stdio channel), one format for every command."""

import logging
import re
import sys

# Library chatter (HTTP request lines, SDK internals, WebSocket handshakes) stays out at every level: at
# DEBUG, websockets logs each header of the live view's relay, the sandbox's bearer token among them.
QUIET = ("httpx", "httpcore", "mcp", "docker", "urllib3", "uvicorn.access", "websockets")
# Whatever still reaches a line (a library's message, an exception's text) shows no credential.
_CREDENTIAL = re.compile(r"(?i)\b(bearer|basic)\s+[^\s'\",;]+|(\bbw_live=)[^\s'\",;]+")


class Redact(logging.Filter):
    """Masks bearer and basic credentials, and live view cookies, in the formatted message."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = _CREDENTIAL.sub(lambda m: f"{m.group(1) or m.group(2)}{' ' if m.group(1) else ''}[redacted]", message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


class ClientGone(logging.Filter):
    """A client that hangs up before its request body has arrived is routine (a cancelled call, a closed
    laptop), yet the SDK logs it as an ERROR with a traceback; one line at INFO says it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[0] is not None and record.exc_info[0].__name__ == "ClientDisconnect":
            record.msg, record.args = f"{record.getMessage()}: the client disconnected first", None
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def setup(level: str) -> None:
    """`level` is the host's log_level setting (BOXWRIGHT_LOG_LEVEL or --log-level)."""
    logging.basicConfig(
        level=level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(Redact())
        handler.addFilter(ClientGone())
    for noisy in QUIET:
        logging.getLogger(noisy).setLevel(max(logging.getLevelName(level), logging.WARNING))
