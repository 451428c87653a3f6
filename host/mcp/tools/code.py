"""code_run and the background process tools."""

from typing import Any

from mcp.types import ToolAnnotations

from host.mcp.forward import forward_tool
from host.mcp.registry import ToolSpec
from host.sandboxes.manager import SandboxManager
from rpc import methods
from rpc.models.code import CodeRunParams, CodeRunResult, ProcessOutputParams, ProcessOutputResult


def _code_summary(p: CodeRunParams, r: CodeRunResult) -> str:
    if r.processId:
        return f"started background process {r.processId}"
    if r.timedOut:
        return f"timed out after {r.durationMs} ms (process group killed)"
    oom = " (killed: the sandbox ran out of memory)" if r.outOfMemory else ""
    tail = " (output truncated)" if r.truncated else ""
    return f"exit {r.exitCode}{oom} in {r.durationMs} ms{tail}"


def _output_summary(_: ProcessOutputParams, r: ProcessOutputResult) -> str:
    oom = " (killed: the sandbox ran out of memory)" if r.outOfMemory else ""
    state = "running" if r.running else f"exited {r.exitCode}{oom}"
    return f"{r.processId} {state}, {r.nextOffset - r.offset} bytes from offset {r.offset}"


def tools(manager: SandboxManager) -> list[ToolSpec[Any]]:
    return [
        forward_tool(
            manager,
            methods.CODE_RUN,
            title="Run code in the sandbox",
            description=(
                "Run Python or Bash code inside the sandbox (as an unprivileged user, working directory "
                "/workspace). Returns stdout, stderr, exitCode, durationMs, timedOut, outOfMemory and truncated. On "
                "timeout the whole process group is killed. With background=true it starts a long-running "
                "process (e.g. a web server to browse) and returns its processId at once; read its output "
                "with process_output and stop it with process_kill."
            ),
            summary=_code_summary,
            annotations=ToolAnnotations(destructive_hint=True, open_world_hint=True),
        ),
        forward_tool(
            manager,
            methods.PROCESS_LIST,
            title="List background processes",
            description="List the background processes started with code_run background=true, running or ended.",
            summary=lambda _, r: f"{len(r.processes)} processes",
            annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
        ),
        forward_tool(
            manager,
            methods.PROCESS_OUTPUT,
            title="Read a background process's output",
            description=(
                "Read the combined stdout+stderr of a background process from a byte offset; pass the "
                "returned nextOffset next time to get only new output. waitMs waits for new output or exit."
            ),
            summary=_output_summary,
            annotations=ToolAnnotations(read_only_hint=True),
        ),
        forward_tool(
            manager,
            methods.PROCESS_KILL,
            title="Stop a background process",
            description="Send a signal (TERM by default) to a background process's whole process group.",
            summary=lambda _, r: f"{r.processId} {'still running' if r.running else 'stopped'}",
            annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True),
        ),
    ]
