"""The code runner daemon: `python3 -m sandbox_image.code.daemon`, started by the host as user runner.

    docker exec --user runner <container> python3 -m sandbox_image.code.daemon

It serves code.run and process.* on a Unix socket (default /run/boxwright/runner.sock, mode 0660,
group sandbox so the agent can connect) with the same dispatcher as the agent. The socket's
permissions are its authentication: only the agent and runner users can reach it.
"""

from __future__ import annotations

import asyncio
import contextlib
import grp
import logging
import os
import signal
import stat
import sys

from aiohttp import web

from rpc.models.sandbox import Health
from sandbox_image import AGENT_VERSION
from sandbox_image.code import handlers
from sandbox_image.code.background import ProcessManager
from sandbox_image.code.runner import CodeRunner
from sandbox_image.config import ConfigError, RunnerConfig
from sandbox_image.dispatcher import Dispatcher
from sandbox_image.logs import setup_logging
from sandbox_image.server import build_app

SOCKET_MODE = 0o660
log = logging.getLogger("boxwright.runner")


def create_runner_app(config: RunnerConfig) -> web.Application:
    """The daemon's aiohttp app; background processes are killed when the app shuts down."""
    dispatcher = Dispatcher("runner")
    runner = CodeRunner(config)
    manager = ProcessManager(runner)
    handlers.register(dispatcher, runner, manager)

    async def health() -> Health:
        return Health(status="ok", agentVersion=AGENT_VERSION, codeRunnerReady=True)

    app = build_app(dispatcher, health=health, auth=None, max_body_bytes=config.max_body_bytes)

    async def shutdown(_app: web.Application) -> None:
        await manager.shutdown()

    app.on_shutdown.append(shutdown)
    return app


def remove_stale_socket(path: str) -> None:
    """A socket left by a dead daemon blocks bind(); anything that is not a socket is not ours to delete."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise ConfigError(f"{path} exists and is not a socket; refusing to replace it")
    os.unlink(path)


async def start_runner(config: RunnerConfig) -> web.AppRunner:
    """Bind the daemon to its socket (used by `serve` and by tests)."""
    app_runner = web.AppRunner(create_runner_app(config), access_log=None)
    await app_runner.setup()
    remove_stale_socket(config.socket)
    site = web.UnixSite(app_runner, config.socket)
    await site.start()
    os.chmod(config.socket, SOCKET_MODE)
    share_socket(config.socket, config.socket_group)
    return app_runner


def share_socket(path: str, group: str | None) -> None:
    """Give the socket to the shared group: it is created with our primary group (runner), which the
    agent is not in. Changing to a group we belong to needs no capability."""
    if not group:
        return
    try:
        gid = grp.getgrnam(group).gr_gid
    except KeyError:
        log.warning("group %r does not exist; the socket keeps group %d", group, os.stat(path).st_gid)
        return
    os.chown(path, -1, gid)


async def serve(config: RunnerConfig) -> None:
    app_runner = await start_runner(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await app_runner.cleanup()
        with contextlib.suppress(OSError):
            os.unlink(config.socket)


def main() -> int:
    log = setup_logging("runner")
    try:
        config = RunnerConfig.from_env()
    except ConfigError as exc:
        print(f"boxwright runner: {exc}", file=sys.stderr)
        return 2
    log.info("code runner %s listening on %s (uid %d)", AGENT_VERSION, config.socket, os.getuid())
    try:
        asyncio.run(serve(config))
    except ConfigError as exc:
        print(f"boxwright runner: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
