"""Template runs in the sandbox: task.* methods, the StepExecutor and the three templates (seed 000).

Modules: service (the task.* handlers, run start and end), runs (runs in flight: state, steps,
progress, cancel flag, outcome), executor (StepExecutor: one step with cancel/deadline checks and
retry), window (sliding-window concurrency), actions (browser operations called directly on explicit
tabs), context (what a template's code gets), verdict (end state and run error), artifacts (result
JSON/CSV, chunked reads, inline result), comparison (multi_tab_compare's rules), templates/ (one
module per template, in one table).
"""

from __future__ import annotations

from rpc import methods as m
from sandbox_image.browser import BrowserService
from sandbox_image.dispatcher import Dispatcher
from sandbox_image.tasks.service import TaskService

__all__ = ["TaskService", "register"]


def register(dispatcher: Dispatcher, browser: BrowserService) -> TaskService:
    """Serve every task.* method on top of the agent's browser; the agent hooks the service's on_cleanup."""
    service = TaskService(browser)
    dispatcher.register(m.TASK_TEMPLATES, service.list_templates)
    dispatcher.register(m.TASK_START, service.start)
    dispatcher.register(m.TASK_STATUS, service.status)
    dispatcher.register(m.TASK_CANCEL, service.cancel)
    dispatcher.register(m.TASK_LIST, service.list_runs)
    dispatcher.register(m.TASK_ARTIFACT_READ, service.artifact_read)
    return service
