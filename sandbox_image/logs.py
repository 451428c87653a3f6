"""Logging setup for the agent and the runner daemon (stderr, one line per event)."""

from __future__ import annotations

import logging


def setup_logging(name: str, level: str) -> logging.Logger:
    """Configure root logging once, at the log_level setting (an unknown name means INFO)."""
    level = level.upper()
    logging.basicConfig(
        level=getattr(logging, level, logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # aiohttp's access log would add a line per request (and per health probe); we log RPCs ourselves.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    return logging.getLogger(f"boxwright.{name}")
