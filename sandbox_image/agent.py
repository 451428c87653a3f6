"""Assembles the agent: one dispatcher, feature modules registering their handlers, the HTTP app.

A new feature (the browser, template runs) adds one `register(...)` line here and nothing else.
"""

from __future__ import annotations

import pwd

from aiohttp import web

from rpc.models.live import LIVE_PATH
from rpc.models.sandbox import Health
from sandbox_image import activity, browser, claim, files, info, scrape, tasks
from sandbox_image.auth import TokenAuth
from sandbox_image.browser import live
from sandbox_image.code import client as code_client
from sandbox_image.config import SandboxSettings
from sandbox_image.dispatcher import Dispatcher
from sandbox_image.server import build_app


def uid_of(user: str) -> int | None:
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        return None


def create_agent_app(settings: SandboxSettings) -> web.Application:
    dispatcher = Dispatcher("agent")
    runner = code_client.RunnerLink(
        settings.runner_socket,
        runner_uid=uid_of(settings.runner_user),
        secret_sha256=settings.runner_secret_sha256,
        group=settings.runner_socket_group,
    )

    auth = TokenAuth(settings.agent_token_sha256())
    info.register(dispatcher, workspace=settings.workspace, runner=runner)
    claim.register(dispatcher, auth=auth, pooled=settings.pooled, workspace=settings.workspace, runner=runner)
    files.register(dispatcher, files.Workspace(settings.workspace))
    code_client.register(dispatcher, runner)
    browser_service = browser.register(dispatcher, settings)
    task_service = tasks.register(dispatcher, browser_service)
    activity.register(dispatcher, runner=runner, runs=task_service.runs)
    scrape.register(dispatcher, browser_service)  # the engine loads on the first scrape

    async def health() -> Health:
        return await info.health(runner)

    app = build_app(
        dispatcher,
        health=health,
        auth=auth,
        max_body_bytes=settings.max_body_bytes,
    )
    app.router.add_get(LIVE_PATH, live.handler(browser_service, auth))  # the live view's WebSocket

    async def open_runner(_app: web.Application) -> None:
        await runner.start()

    async def close_runner(_app: web.Application) -> None:
        await runner.close()

    app.on_startup.append(open_runner)
    app.on_cleanup.append(close_runner)
    app.on_startup.append(browser_service.on_startup)
    app.on_cleanup.append(task_service.on_cleanup)  # runs end before the browser closes
    app.on_cleanup.append(browser_service.on_cleanup)
    return app
