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
from rpc.settings import SettingsError
from sandbox_image import AGENT_VERSION
from sandbox_image.code import handlers
from sandbox_image.code.background import ProcessManager
from sandbox_image.code.runner import CodeRunner
from sandbox_image.config import SandboxSettings, load_or_exit
from sandbox_image.dispatcher import Dispatcher
from sandbox_image.logs import setup_logging
from sandbox_image.server import build_app

SOCKET_MODE = 0o660
log = logging.getLogger("boxwright.runner")


def create_runner_app(settings: SandboxSettings) -> web.Application:
    """The daemon's aiohttp app; background processes are killed when the app shuts down."""
    dispatcher = Dispatcher("runner")
    runner = CodeRunner(settings)
    manager = ProcessManager(runner)
    handlers.register(dispatcher, runner, manager)

    async def health() -> Health:
        return Health(status="ok", agentVersion=AGENT_VERSION, codeRunnerReady=True)

    app = build_app(dispatcher, health=health, auth=None, max_body_bytes=settings.max_body_bytes)

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
        raise SettingsError(f"{path} exists and is not a socket; refusing to replace it")
    os.unlink(path)


async def start_runner(settings: SandboxSettings) -> web.AppRunner:
    """Bind the daemon to its socket (used by `serve` and by tests)."""
    app_runner = web.AppRunner(create_runner_app(settings), access_log=None)
    await app_runner.setup()
    remove_stale_socket(settings.runner_socket)
    site = web.UnixSite(app_runner, settings.runner_socket)
    await site.start()
    os.chmod(settings.runner_socket, SOCKET_MODE)
    share_socket(settings.runner_socket, settings.runner_socket_group)
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


async def serve(settings: SandboxSettings) -> None:
    app_runner = await start_runner(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await app_runner.cleanup()
        with contextlib.suppress(OSError):
            os.unlink(settings.runner_socket)


def main() -> int:
    settings = load_or_exit("runner")
    log = setup_logging("runner", settings.log_level)
    log.info("code runner %s listening on %s (uid %d)", AGENT_VERSION, settings.runner_socket, os.getuid())
    try:
        asyncio.run(serve(settings))
    except SettingsError as exc:
        print(f"boxwright runner: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
