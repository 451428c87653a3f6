"""Logging setup for the agent and the runner daemon (stderr, one line per event)."""

from __future__ import annotations

import logging
import os


def setup_logging(name: str) -> logging.Logger:
    """Configure root logging once; the level comes from BOXWRIGHT_LOG_LEVEL (default INFO)."""
    level = os.environ.get("BOXWRIGHT_LOG_LEVEL", "INFO").upper()
    logging.basicConfig(
        level=getattr(logging, level, logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # aiohttp's access log would add a line per request (and per health probe); we log RPCs ourselves.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    return logging.getLogger(f"boxwright.{name}")
