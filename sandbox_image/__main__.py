"""`python3 -m sandbox_image`: the agent's HTTP server (user agent, port rpc.agent.AGENT_PORT)."""

from __future__ import annotations

import sys

# No OpenSSL in the agent (~2.6 MiB less per sandbox: issue 12, density): it speaks no TLS (plain HTTP on
# the sandbox's published port, a Unix socket to the runner), but asyncio and aiohttp load `ssl` when they
# can and run without it when they cannot. Set before they are imported, and only when run as the agent.
if __name__ == "__main__" and "ssl" not in sys.modules:
    sys.modules["ssl"] = None  # type: ignore[assignment]  # the import system's "no such module" marker

import os

from aiohttp import web

from sandbox_image import AGENT_VERSION
from sandbox_image.agent import create_agent_app
from sandbox_image.config import load_or_exit
from sandbox_image.lifetime import watch_expiry
from sandbox_image.logs import setup_logging

# Files the agent writes into the workspace must stay editable by the runner (group sandbox).
AGENT_UMASK = 0o002


def main() -> int:
    settings = load_or_exit("agent", agent=True)
    log = setup_logging("agent", settings.log_level)
    os.umask(AGENT_UMASK)
    log.info(
        "agent %s listening on %s:%d (workspace %s, runner socket %s)",
        AGENT_VERSION,
        settings.host,
        settings.port,
        settings.workspace,
        settings.runner_socket,
    )
    if settings.expires_at is not None:
        watch_expiry(settings.expires_at, settings.expiry_grace)
    web.run_app(
        create_agent_app(settings),
        host=settings.host,
        port=settings.port,
        access_log=None,
        print=None,
        handler_cancellation=True,  # a call the host gave up on (cancelled, timed out) stops here too
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
