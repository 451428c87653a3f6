"""Logging to stderr (stdout is the MCP stdio channel), one format for every command."""

import logging
import sys


def setup(level: str) -> None:
    """`level` is the host's log_level setting (BOXWRIGHT_LOG_LEVEL or --log-level)."""
    logging.basicConfig(
        level=level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    # Library chatter (HTTP request lines, SDK internals) stays out unless debugging.
    for noisy in ("httpx", "httpcore", "mcp", "docker", "urllib3", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(max(logging.getLevelName(level), logging.WARNING))
