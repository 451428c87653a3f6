"""The one error model of Boxwright.

Every failure at any layer — agent, runner daemon, host, MCP tool — is a `BoxwrightError`
carrying an `ErrorCode`, a human message, a recovery hint and details. It crosses JSON-RPC as
`error.data` and ends in front of the MCP client as `{error, errorCode, recoverHint, details}`.

Each code carries its data: a category (what kind of failure it is, so callers branch on that
rather than on lists of codes), a default hint (what to do next; a raise site may give a more
specific one) and a JSON-RPC number. An error is immutable once made: a layer that knows more
raises a new error from the old one (`raise exc.with_details(...) from exc`).
"""

from __future__ import annotations

import errno
from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Any, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class Category(StrEnum):
    CALLER = "caller"  # the call is wrong or names what is not there: change it before retrying
    SANDBOX = "sandbox"  # the sandbox failed to start, stopped or does not answer: the host inspects it
    TRANSIENT = "transient"  # out of time or a crashed page: the same call may succeed later
    SERVER = "server"  # Boxwright, its image or the engine is broken: an operator must act


class ErrorCode(StrEnum):
    """A stable code; its category, default hint and JSON-RPC number are data (the tables below)."""

    # Tool level.
    ELEMENT_NOT_FOUND = "ELEMENT_NOT_FOUND"
    STALE_REF = "STALE_REF"
    NAVIGATION_TIMEOUT = "NAVIGATION_TIMEOUT"
    NAVIGATION_FAILED = "NAVIGATION_FAILED"
    SESSION_NOT_FOUND = "SESSION_NOT_FOUND"
    SESSION_LIMIT_REACHED = "SESSION_LIMIT_REACHED"
    TAB_NOT_FOUND = "TAB_NOT_FOUND"
    TAB_LIMIT_REACHED = "TAB_LIMIT_REACHED"
    PAGE_CRASHED = "PAGE_CRASHED"
    DIALOG_PENDING = "DIALOG_PENDING"
    INVALID_PARAMETER = "INVALID_PARAMETER"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    OPERATION_TIMEOUT = "OPERATION_TIMEOUT"
    # Loading a page (scrape): why it could not be read.
    DNS_FAILURE = "DNS_FAILURE"
    HOST_UNREACHABLE = "HOST_UNREACHABLE"
    TLS_ERROR = "TLS_ERROR"
    UNSUPPORTED_CONTENT_TYPE = "UNSUPPORTED_CONTENT_TYPE"
    PAGE_TOO_LARGE = "PAGE_TOO_LARGE"
    # Code and processes.
    PROCESS_NOT_FOUND = "PROCESS_NOT_FOUND"
    PROCESS_LIMIT_REACHED = "PROCESS_LIMIT_REACHED"
    CODE_RUNNER_UNAVAILABLE = "CODE_RUNNER_UNAVAILABLE"  # no runner: the call never reached one
    RUN_OUTCOME_UNKNOWN = "RUN_OUTCOME_UNKNOWN"  # the runner went away after the call was handed to it
    # Files.
    FILE_NOT_FOUND = "FILE_NOT_FOUND"
    PATH_OUTSIDE_WORKSPACE = "PATH_OUTSIDE_WORKSPACE"
    NOT_A_FILE = "NOT_A_FILE"
    NOT_A_DIRECTORY = "NOT_A_DIRECTORY"
    FILE_TOO_LARGE = "FILE_TOO_LARGE"
    NOT_TEXT = "NOT_TEXT"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    # Runtime level (template runs and their artifacts).
    TEMPLATE_NOT_FOUND = "TEMPLATE_NOT_FOUND"
    TEMPLATE_VERSION_UNSUPPORTED = "TEMPLATE_VERSION_UNSUPPORTED"
    TRUST_LEVEL_NOT_ALLOWED = "TRUST_LEVEL_NOT_ALLOWED"
    RUN_NOT_FOUND = "RUN_NOT_FOUND"
    RUN_TIMEOUT = "RUN_TIMEOUT"
    RUN_CANCELED = "RUN_CANCELED"
    STEP_EXECUTION_FAILED = "STEP_EXECUTION_FAILED"
    ARTIFACT_NOT_FOUND = "ARTIFACT_NOT_FOUND"
    ARTIFACT_EXPIRED = "ARTIFACT_EXPIRED"
    # Login profiles.
    PROFILE_NOT_FOUND = "PROFILE_NOT_FOUND"
    PROFILE_BUSY = "PROFILE_BUSY"
    SANDBOX_BUSY = "SANDBOX_BUSY"  # sandbox_pause while calls or runs are still going on in it
    # Sandbox level.
    SANDBOX_NOT_FOUND = "SANDBOX_NOT_FOUND"
    SANDBOX_NOT_RUNNING = "SANDBOX_NOT_RUNNING"
    SANDBOX_LIMIT_REACHED = "SANDBOX_LIMIT_REACHED"
    QUOTA_EXCEEDED = "QUOTA_EXCEEDED"  # an owner's memory or CPU total (the count is SANDBOX_LIMIT_REACHED)
    SANDBOX_START_FAILED = "SANDBOX_START_FAILED"
    SANDBOX_START_TIMEOUT = "SANDBOX_START_TIMEOUT"
    NO_DEFAULT_SANDBOX = "NO_DEFAULT_SANDBOX"
    AMBIGUOUS_SANDBOX = "AMBIGUOUS_SANDBOX"
    AGENT_UNREACHABLE = "AGENT_UNREACHABLE"
    RPC_TIMEOUT = "RPC_TIMEOUT"
    TOOL_TIMEOUT = "TOOL_TIMEOUT"
    IMAGE_NOT_FOUND = "IMAGE_NOT_FOUND"
    IMAGE_BUILD_FAILED = "IMAGE_BUILD_FAILED"
    DOCKER_UNAVAILABLE = "DOCKER_UNAVAILABLE"
    UNAUTHORIZED = "UNAUTHORIZED"
    # Protocol.
    PARSE_ERROR = "PARSE_ERROR"
    INVALID_REQUEST = "INVALID_REQUEST"
    METHOD_NOT_FOUND = "METHOD_NOT_FOUND"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    INTERNAL_ERROR = "INTERNAL_ERROR"

    @property
    def category(self) -> Category:
        return next((c for c, codes in CATEGORIES.items() if self in codes), Category.CALLER)

    @property
    def hint(self) -> str:
        """What an agent (human or LLM) should do next; a raise site may give a more specific hint."""
        return DEFAULT_HINTS[self]

    @property
    def jsonrpc_code(self) -> int:
        return JSONRPC_CODES.get(self, APPLICATION_ERROR)


# Every code not listed here is a caller error.
CATEGORIES: dict[Category, frozenset[ErrorCode]] = {
    Category.SANDBOX: frozenset(
        {
            ErrorCode.CODE_RUNNER_UNAVAILABLE,
            ErrorCode.RUN_OUTCOME_UNKNOWN,
            ErrorCode.SANDBOX_NOT_RUNNING,
            ErrorCode.SANDBOX_START_FAILED,
            ErrorCode.SANDBOX_START_TIMEOUT,
            ErrorCode.AGENT_UNREACHABLE,
            ErrorCode.RPC_TIMEOUT,
        }
    ),
    Category.TRANSIENT: frozenset(
        {
            ErrorCode.NAVIGATION_TIMEOUT,
            ErrorCode.PAGE_CRASHED,
            ErrorCode.EXECUTION_ERROR,
            ErrorCode.OPERATION_TIMEOUT,
            ErrorCode.HOST_UNREACHABLE,
            ErrorCode.RUN_TIMEOUT,
            ErrorCode.TOOL_TIMEOUT,
            ErrorCode.PROFILE_BUSY,
            ErrorCode.SANDBOX_BUSY,
        }
    ),
    Category.SERVER: frozenset(
        {
            ErrorCode.IMAGE_NOT_FOUND,
            ErrorCode.IMAGE_BUILD_FAILED,
            ErrorCode.DOCKER_UNAVAILABLE,
            ErrorCode.INTERNAL_ERROR,
        }
    ),
}

DEFAULT_HINTS: dict[ErrorCode, str] = {
    ErrorCode.ELEMENT_NOT_FOUND: "call browser_snapshot and use one of the returned refs",
    ErrorCode.STALE_REF: "the page changed since that snapshot: call browser_snapshot again and use a new ref",
    ErrorCode.NAVIGATION_TIMEOUT: "the page did not load in time: raise timeoutMs, use waitUntil='commit', "
    "or check that the site responds",
    ErrorCode.NAVIGATION_FAILED: "check the URL and that the server is reachable from inside the sandbox "
    "(network 'public' blocks private and host addresses, 'none' everything; see sandbox_list)",
    ErrorCode.SESSION_NOT_FOUND: "omit sessionId to use the default session, or create a new one",
    ErrorCode.SESSION_LIMIT_REACHED: "close a browser session you no longer need",
    ErrorCode.TAB_NOT_FOUND: "call browser_tabs with action 'list' to see the open tabs",
    ErrorCode.TAB_LIMIT_REACHED: "close tabs you no longer need with browser_tabs action 'close'",
    ErrorCode.PAGE_CRASHED: "the page crashed and was replaced by a fresh one: navigate again",
    ErrorCode.DIALOG_PENDING: "a dialog is open on this tab: answer it with browser_handle_dialog; a page that "
    "keeps opening them (an alert in a loop) is left with browser_goto to another URL, or browser_tabs close",
    ErrorCode.INVALID_PARAMETER: "fix the arguments named in details and call again",
    ErrorCode.EXECUTION_ERROR: "see details; the operation may be retried",
    ErrorCode.OPERATION_TIMEOUT: "the operation ran out of time: raise timeoutMs or do less per call",
    ErrorCode.DNS_FAILURE: "the host name does not resolve: check the spelling of the URL's host",
    ErrorCode.HOST_UNREACHABLE: "nothing answered at that address: check the host and port, that the server is up, "
    "and that the sandbox's network mode lets it through ('public' blocks private and host addresses, 'none' all)",
    ErrorCode.TLS_ERROR: "the site's HTTPS certificate or TLS setup was refused (expired, self-signed, wrong host): "
    "use the site's correct https:// address, or http:// if the site serves it; if you trust the site (a dev server, "
    "an intranet), skipTlsVerification: true opens it without checking its certificate",
    ErrorCode.UNSUPPORTED_CONTENT_TYPE: "the URL is not a web page: an image can be seen with format 'screenshot', "
    "a PDF is read as text with markdown, html or links; fetch any other file with code_run (curl, python)",
    ErrorCode.PAGE_TOO_LARGE: "the page is too large to read in one call: scrape a smaller page, or fetch it with "
    "code_run and process it in parts",
    ErrorCode.PROCESS_NOT_FOUND: "call process_list to see the processes of this sandbox",
    ErrorCode.PROCESS_LIMIT_REACHED: "kill background processes you no longer need with process_kill",
    ErrorCode.CODE_RUNNER_UNAVAILABLE: "the sandbox's code runner is not up; retry in a moment or recreate the sandbox",
    ErrorCode.RUN_OUTCOME_UNKNOWN: "the code runner stopped (killed, or out of memory) while this ran: check what it "
    "did (files, processes) before running it again; the next call starts a new runner",
    ErrorCode.FILE_NOT_FOUND: "check the path with file_list; paths are relative to the workspace",
    ErrorCode.PATH_OUTSIDE_WORKSPACE: "use a path inside the workspace (relative, without '..' escaping it)",
    ErrorCode.NOT_A_FILE: "the path is a directory: use file_list",
    ErrorCode.NOT_A_DIRECTORY: "the path is a file: use file_read",
    ErrorCode.FILE_TOO_LARGE: "read it in parts with offset and limit",
    ErrorCode.NOT_TEXT: "the file is not UTF-8 text: read it with encoding 'base64'",
    ErrorCode.PERMISSION_DENIED: "the file's permissions do not allow this; change them with code_run (chmod)",
    ErrorCode.TEMPLATE_NOT_FOUND: "call list_task_templates to see the available templates",
    ErrorCode.TEMPLATE_VERSION_UNSUPPORTED: "switch to a supported template version",
    ErrorCode.TRUST_LEVEL_NOT_ALLOWED: "not allowed for remote callers: connect over stdio or use another tool",
    ErrorCode.RUN_NOT_FOUND: "check the runId with list_task_runs",
    ErrorCode.RUN_TIMEOUT: "raise options.timeoutMs or split the task",
    ErrorCode.RUN_CANCELED: "create a new run",
    ErrorCode.STEP_EXECUTION_FAILED: "see details.failedStep and details.stepErrorCode",
    ErrorCode.ARTIFACT_NOT_FOUND: "check the artifactId in the run's artifacts",
    ErrorCode.ARTIFACT_EXPIRED: "run the task again to produce a fresh artifact",
    ErrorCode.PROFILE_NOT_FOUND: "check the profileId with profile_list (or `boxwright profile list`); a profile is "
    "created on first use by browser_sessions, scrape or `boxwright login`",
    ErrorCode.SANDBOX_BUSY: "calls or template runs are still going on in this sandbox: pause it when they have "
    "ended (or cancel the run), or pass force=true to freeze them mid-call (they then end at their timeout)",
    ErrorCode.PROFILE_BUSY: "the profile is in use (a login is running, or its snapshot is being written): "
    "retry in a moment, or use another profileId",
    ErrorCode.SANDBOX_NOT_FOUND: "call sandbox_list to see your sandboxes, or sandbox_create to make one",
    ErrorCode.SANDBOX_NOT_RUNNING: "the sandbox stopped: destroy it and call sandbox_create",
    ErrorCode.SANDBOX_LIMIT_REACHED: "destroy a sandbox you no longer need with sandbox_destroy",
    ErrorCode.QUOTA_EXCEEDED: "destroy a sandbox you no longer need with sandbox_destroy, or ask the operator "
    "for a larger quota",
    ErrorCode.SANDBOX_START_FAILED: "see details; check `boxwright doctor`, then retry sandbox_create",
    ErrorCode.SANDBOX_START_TIMEOUT: "the sandbox did not become ready in time; retry, or check `boxwright doctor`",
    ErrorCode.NO_DEFAULT_SANDBOX: "call sandbox_create first (or pass sandboxId)",
    ErrorCode.AMBIGUOUS_SANDBOX: "you have several sandboxes: pass sandboxId (see sandbox_list)",
    ErrorCode.AGENT_UNREACHABLE: "the sandbox's agent does not answer; destroy the sandbox and create a new one",
    ErrorCode.RPC_TIMEOUT: "the sandbox did not answer in time; it may be overloaded or frozen — retry, or recreate it",
    ErrorCode.TOOL_TIMEOUT: "the call took too long and was abandoned; retry with a larger timeoutMs",
    ErrorCode.IMAGE_NOT_FOUND: "build the sandbox image: `boxwright image build`",
    ErrorCode.IMAGE_BUILD_FAILED: "see details for the build log tail; fix and run `boxwright image build` again",
    ErrorCode.DOCKER_UNAVAILABLE: "start the Docker engine (or set DOCKER_HOST) and check `boxwright doctor`",
    ErrorCode.UNAUTHORIZED: "send the sandbox's bearer token in the Authorization header",
    ErrorCode.PARSE_ERROR: "send a valid JSON-RPC 2.0 request body",
    ErrorCode.INVALID_REQUEST: "send a JSON-RPC 2.0 object with jsonrpc='2.0', a method and object params",
    ErrorCode.METHOD_NOT_FOUND: "see rpc.methods for the supported methods",
    ErrorCode.PAYLOAD_TOO_LARGE: "send less data per call (split large files into parts)",
    ErrorCode.INTERNAL_ERROR: "this is a bug in Boxwright; retry, and report it if it persists",
}

# JSON-RPC 2.0 numbers; every code not listed is an application error.
APPLICATION_ERROR = -32000
JSONRPC_CODES: dict[ErrorCode, int] = {
    ErrorCode.PARSE_ERROR: -32700,
    ErrorCode.INVALID_REQUEST: -32600,
    ErrorCode.METHOD_NOT_FOUND: -32601,
    ErrorCode.INVALID_PARAMETER: -32602,
    ErrorCode.INTERNAL_ERROR: -32603,
}


class ErrorBody(BaseModel):
    """The uniform error shape every client sees (MCP structuredContent on isError)."""

    model_config = ConfigDict(extra="forbid")

    error: str = Field(description="What went wrong, in one sentence")
    errorCode: ErrorCode = Field(description="Stable machine-readable code")
    recoverHint: str = Field(description="What to do next")
    details: dict[str, Any] = Field(default_factory=dict, description="Structured context")


class BoxwrightError(Exception):
    """A failure with a stable code; raised anywhere, translated at every boundary, never changed."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        hint: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self._code = code
        self._message = message
        self._hint = hint or code.hint
        self._details: Mapping[str, Any] = MappingProxyType(dict(details or {}))

    @property
    def code(self) -> ErrorCode:
        return self._code

    @property
    def message(self) -> str:
        return self._message

    @property
    def hint(self) -> str:
        return self._hint

    @property
    def details(self) -> Mapping[str, Any]:
        return self._details

    def __repr__(self) -> str:
        return f"BoxwrightError({self.code.value}, {self.message!r})"

    def with_details(self, **details: Any) -> BoxwrightError:
        """The same error with `details` added where it has none of its own (raise it `from` this one)."""
        return type(self)(self.code, self.message, hint=self.hint, details={**details, **self.details})

    def to_body(self) -> ErrorBody:
        return ErrorBody(error=self.message, errorCode=self.code, recoverHint=self.hint, details=dict(self.details))

    @classmethod
    def from_body(cls, body: ErrorBody) -> BoxwrightError:
        return cls(body.errorCode, body.error, hint=body.recoverHint, details=body.details)


# -- constructors for the common shapes -------------------------------------------------------
class FieldError(TypedDict):
    """One rejected argument in `details.errors`: its name and why, never its value."""

    field: str
    message: str


def field_errors(exc: ValidationError, *, root: str = "(root)") -> list[FieldError]:
    """`[{field, message}]` from a pydantic error, without the rejected values (they may be secrets)."""
    return [
        FieldError(field=".".join(str(part) for part in err["loc"]) or root, message=err["msg"])
        for err in exc.errors(include_input=False, include_url=False, include_context=False)
    ]


def invalid_fields(
    errors: list[FieldError],
    message: str,
    *,
    code: ErrorCode = ErrorCode.INVALID_PARAMETER,
    hint: str | None = None,
    **details: Any,
) -> BoxwrightError:
    """Arguments refused: `details.errors` names each of them."""
    return BoxwrightError(code, message, hint=hint, details={**details, "errors": errors})


def invalid_parameter(
    field: str, reason: str, *, message: str | None = None, hint: str | None = None, **details: Any
) -> BoxwrightError:
    """One argument refused: INVALID_PARAMETER naming `field` (and why) in `details.errors`."""
    return invalid_fields(
        [FieldError(field=field, message=reason)], message or f"invalid {field}: {reason}", hint=hint, **details
    )


def from_validation_error(
    exc: ValidationError,
    what: str,
    *,
    code: ErrorCode = ErrorCode.INVALID_PARAMETER,
    root: str = "(root)",
    hint: str | None = None,
    **details: Any,
) -> BoxwrightError:
    """A pydantic ValidationError as `what — field: reason; …` with the fields in `details.errors`."""
    errors = field_errors(exc, root=root)
    listing = "; ".join(f"{e['field']}: {e['message']}" for e in errors[:5])
    return invalid_fields(errors, f"{what} — {listing}", code=code, hint=hint, **details)


PIDS_HINT = (
    "the sandbox reached its process limit: end processes you no longer need (process_list / process_kill), "
    "or recreate the sandbox"
)


def out_of_processes(exc: BaseException) -> bool:
    """Whether `exc` is how a fork or a new thread fails at a pids limit (EAGAIN)."""
    if isinstance(exc, OSError):
        return exc.errno == errno.EAGAIN
    return isinstance(exc, RuntimeError) and "can't start new thread" in str(exc)


def process_limit(what: str) -> BoxwrightError:
    """The sandbox ran out of processes (its pids limit): a resource error, not a bug in Boxwright."""
    return BoxwrightError(ErrorCode.PROCESS_LIMIT_REACHED, f"{what}: the sandbox has no processes left", hint=PIDS_HINT)


def unauthorized(authorization: str | None, *, hint: str | None = None) -> BoxwrightError:
    """The 401 of both HTTP faces (the MCP server and the agent): which of the two went wrong, never the token."""
    message = "invalid bearer token" if authorization else "missing bearer token"
    return BoxwrightError(ErrorCode.UNAUTHORIZED, message, hint=hint)
