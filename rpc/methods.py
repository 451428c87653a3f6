"""Every RPC method: its name and its params/result models. Both sides dispatch on this table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from rpc.models.base import Params, Result
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
from rpc.models.files import (
    FileListParams,
    FileListResult,
    FileReadParams,
    FileReadResult,
    FileWriteParams,
    FileWriteResult,
)
from rpc.models.sandbox import SandboxInfoParams, SandboxInfoResult

AGENT_SLACK_MS = 2_000

P = TypeVar("P", bound=Params)
R = TypeVar("R", bound=Result)


@dataclass(frozen=True)
class Method(Generic[P, R]):
    name: str
    params: type[P]
    result: type[R]
    default_timeout_ms: int = 30_000

    def budget_ms(self, params: Params) -> int:
        """How long the agent may spend: the operation's own timeout (or the method default), plus
        any long-poll wait, plus slack so the operation's own timeout fires before the agent's."""
        op = getattr(params, "timeoutMs", None) or self.default_timeout_ms
        return int(op) + int(getattr(params, "waitMs", 0) or 0) + AGENT_SLACK_MS


SANDBOX_INFO = Method("sandbox.info", SandboxInfoParams, SandboxInfoResult, 5_000)
CODE_RUN = Method("code.run", CodeRunParams, CodeRunResult)
PROCESS_LIST = Method("process.list", ProcessListParams, ProcessListResult, 5_000)
PROCESS_OUTPUT = Method("process.output", ProcessOutputParams, ProcessOutputResult)
PROCESS_KILL = Method("process.kill", ProcessKillParams, ProcessKillResult, 10_000)
FILE_READ = Method("file.read", FileReadParams, FileReadResult)
FILE_WRITE = Method("file.write", FileWriteParams, FileWriteResult)
FILE_LIST = Method("file.list", FileListParams, FileListResult)

ALL: tuple[Method, ...] = (
    SANDBOX_INFO,
    CODE_RUN,
    PROCESS_LIST,
    PROCESS_OUTPUT,
    PROCESS_KILL,
    FILE_READ,
    FILE_WRITE,
    FILE_LIST,
)
BY_NAME: dict[str, Method] = {m.name: m for m in ALL}

# Methods the agent forwards to the code runner daemon (which runs as a separate user).
RUNNER_METHODS = frozenset({CODE_RUN.name, PROCESS_LIST.name, PROCESS_OUTPUT.name, PROCESS_KILL.name})
