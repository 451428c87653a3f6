"""code.run and the background process methods (process.list / process.output / process.kill)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from rpc.models.base import Params, Result

Language = Literal["python", "bash"]

DEFAULT_CODE_TIMEOUT_MS = 30_000
MAX_CODE_TIMEOUT_MS = 600_000
DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024
# Per stream and call. More output: write it to a file and read it in parts.
MAX_OUTPUT_BYTES = 1024 * 1024
# What one stream's text may take in a tool result (rpc.sizes.result_size): both streams then fit one
# MCP message. Ordinary output at the largest cap stays well under it; a flood of short lines, control
# characters (\u0001: 6 + 7 bytes each) or invalid bytes has its middle cut further (truncated=true).
MAX_OUTPUT_WIRE_BYTES = 2816 * 1024
# What process_output's one text may take: a part of control characters comes back shorter (nextOffset).
MAX_PROCESS_OUTPUT_WIRE_BYTES = 2 * MAX_OUTPUT_WIRE_BYTES
# Linux refuses to start a program (E2BIG) when one "NAME=value" string, with its NUL, exceeds
# MAX_ARG_STRLEN (32 pages), or when argv plus environment exceed a quarter of the stack limit.
MAX_ENV_STRING_BYTES = 128 * 1024 - 1
MAX_ENV_TOTAL_BYTES = 1024 * 1024


class CodeRunParams(Params):
    language: Language = Field(description="Interpreter: 'python' (python3) or 'bash'")
    code: str = Field(min_length=1, max_length=1_000_000, description="Source code to run")
    timeoutMs: int = Field(
        DEFAULT_CODE_TIMEOUT_MS,
        ge=100,
        le=MAX_CODE_TIMEOUT_MS,
        description="Kill the whole process group after this many ms (ignored when background)",
    )
    background: bool = Field(
        False,
        description="Start a long-running process (e.g. a web server) and return its processId at once",
    )
    cwd: str = Field(".", max_length=4096, description="Working directory, relative to the workspace")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables")
    stdin: str | None = Field(None, max_length=1_000_000, description="Text fed to standard input")
    maxOutputBytes: int = Field(
        DEFAULT_MAX_OUTPUT_BYTES,
        ge=1024,
        le=MAX_OUTPUT_BYTES,
        description="Cap per stream; beyond it the middle is cut and truncated=true",
    )

    @field_validator("env")
    @classmethod
    def _env_fits_exec(cls, env: dict[str, str]) -> dict[str, str]:
        """Refuse what execve would refuse with E2BIG, before anything runs (never echoing a value)."""
        total = 0
        for name, value in env.items():
            size = len(f"{name}={value}".encode("utf-8", "surrogatepass"))
            if size > MAX_ENV_STRING_BYTES:
                shown = name if len(name) <= 64 else name[:64] + "…"
                raise ValueError(
                    f"variable {shown!r} is {size} bytes as NAME=value; at most {MAX_ENV_STRING_BYTES} bytes each "
                    "(pass large data in a file or stdin instead)"
                )
            total += size + 1
        if total > MAX_ENV_TOTAL_BYTES:
            raise ValueError(
                f"the variables total {total} bytes; at most {MAX_ENV_TOTAL_BYTES} bytes "
                "(pass large data in a file or stdin instead)"
            )
        return env


OUT_OF_MEMORY = (
    "The kernel killed it (exitCode 137) when the sandbox ran out of memory: use less at once, or ask the "
    "operator for a larger sandbox memory limit"
)


class CodeRunResult(Result):
    stdout: str = ""
    stderr: str = ""
    exitCode: int | None = Field(None, description="Exit status; 128+N when killed by signal N; null if running")
    timedOut: bool = False
    outOfMemory: bool = Field(False, description=OUT_OF_MEMORY)
    durationMs: int = 0
    truncated: bool = Field(False, description="Some output was cut to respect maxOutputBytes")
    processId: str | None = Field(None, description="Set when background=true: use it with process_output/kill")


class ProcessInfo(Result):
    processId: str
    language: Language
    command: str = Field(description="First line of the code, shortened")
    pid: int
    running: bool
    exitCode: int | None = None
    outOfMemory: bool = Field(False, description=OUT_OF_MEMORY)
    startedAt: str = Field(description="ISO 8601 UTC")
    durationMs: int
    outputBytes: int = Field(description="Total bytes of output produced so far")


class ProcessListParams(Params):
    pass


class ProcessListResult(Result):
    processes: list[ProcessInfo]


class ProcessOutputParams(Params):
    processId: str = Field(min_length=1, max_length=64)
    offset: int = Field(0, ge=0, description="Byte offset into the combined stdout+stderr stream")
    maxBytes: int = Field(DEFAULT_MAX_OUTPUT_BYTES, ge=1, le=MAX_OUTPUT_BYTES)
    waitMs: int = Field(0, ge=0, le=30_000, description="Wait up to this long for new output or exit")


class ProcessOutputResult(Result):
    processId: str
    running: bool
    exitCode: int | None = None
    outOfMemory: bool = Field(False, description=OUT_OF_MEMORY)
    output: str = Field(description="Combined stdout and stderr, in order")
    offset: int = Field(description="Offset of the first returned byte")
    nextOffset: int = Field(description="Pass as offset to read what follows")
    droppedBytes: int = Field(0, description="Output older than the retained buffer, skipped")


class ProcessKillParams(Params):
    processId: str = Field(min_length=1, max_length=64)
    signal: Literal["TERM", "KILL", "INT"] = "TERM"


class ProcessKillResult(Result):
    processId: str
    running: bool
    exitCode: int | None = None
