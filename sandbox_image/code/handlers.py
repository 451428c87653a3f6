"""Registers code.run and process.* with the runner daemon's dispatcher."""

from __future__ import annotations

from rpc.deadline import Deadline
from rpc.models.code import (
    CodeRunParams,
    CodeRunResult,
    ProcessKillParams,
    ProcessKillResult,
    ProcessListParams,
    ProcessListResult,
    ProcessOutputParams,
    ProcessOutputResult,
)
from rpc.runner_methods import CODE_RUN, PROCESS_KILL, PROCESS_LIST, PROCESS_OUTPUT
from sandbox_image.code.background import ProcessManager
from sandbox_image.code.runner import CodeRunner
from sandbox_image.dispatcher import Dispatcher


def register(dispatcher: Dispatcher, runner: CodeRunner, manager: ProcessManager) -> None:
    async def code_run(params: CodeRunParams, deadline: Deadline) -> CodeRunResult:
        if params.background:
            return await manager.start(params)
        return await runner.run_sync(params, deadline)

    async def process_list(_params: ProcessListParams, _deadline: Deadline) -> ProcessListResult:
        return manager.list_processes()

    async def process_output(params: ProcessOutputParams, deadline: Deadline) -> ProcessOutputResult:
        return await manager.output(params, deadline)

    async def process_kill(params: ProcessKillParams, deadline: Deadline) -> ProcessKillResult:
        return await manager.kill(params, deadline)

    dispatcher.register(CODE_RUN, code_run)
    dispatcher.register(PROCESS_LIST, process_list)
    dispatcher.register(PROCESS_OUTPUT, process_output)
    dispatcher.register(PROCESS_KILL, process_kill)
