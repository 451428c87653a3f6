"""`python3 -m sandbox_image`: the agent's HTTP server (user agent, port 8080)."""

from __future__ import annotations

import os
import sys

from aiohttp import web

from sandbox_image import AGENT_VERSION
from sandbox_image.agent import create_agent_app
from sandbox_image.config import AgentConfig, ConfigError
from sandbox_image.logs import setup_logging

# Files the agent writes into the workspace must stay editable by the runner (group sandbox).
AGENT_UMASK = 0o002


def main() -> int:
    log = setup_logging("agent")
    try:
        config = AgentConfig.from_env()
    except ConfigError as exc:
        print(f"boxwright agent: {exc}", file=sys.stderr)
        return 2
    os.umask(AGENT_UMASK)
    log.info(
        "agent %s listening on %s:%d (workspace %s, runner socket %s)",
        AGENT_VERSION,
        config.host,
        config.port,
        config.workspace,
        config.runner_socket,
    )
    web.run_app(create_agent_app(config), host=config.host, port=config.port, access_log=None, print=None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
