"""The one error model of Boxwright.

Every failure at any layer — agent, runner daemon, host, MCP tool — is a `BoxwrightError`
carrying an `ErrorCode`, a human message, a recovery hint and details. It crosses JSON-RPC as
`error.data` and ends in front of the MCP client as `{error, errorCode, recoverHint, details}`.

Each code carries its data: a category (what kind of failure it is, so callers branch on that
rather than on lists of codes), the default hint (what to do next; a raise site may give a more
specific one) and its JSON-RPC number. An error is immutable once made: a layer that knows more
raises a new error from the old one (`raise exc.with_details(...) from exc`).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Any, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError

# JSON-RPC 2.0 numbers; a code without its own is an application error.
APPLICATION_ERROR = -32000


class Category(StrEnum):
    CALLER = "caller"  # the call is wrong or names what is not there: change it before retrying
    SANDBOX = "sandbox"  # the sandbox failed to start, stopped or does not answer: the host inspects it
    TRANSIENT = "transient"  # out of time or a crashed page: the same call may succeed later
    SERVER = "server"  # Boxwright, its image or the engine is broken: an operator must act


CALLER, SANDBOX, TRANSIENT, SERVER = Category.CALLER, Category.SANDBOX, Category.TRANSIENT, Category.SERVER


class ErrorCode(StrEnum):
    """A stable code with its category, default recovery hint and JSON-RPC number."""

    category: Category
    hint: str
    jsonrpc_code: int

    def __new__(cls, value: str, category: Category, hint: str, jsonrpc_code: int = APPLICATION_ERROR) -> ErrorCode:
        member = str.__new__(cls, value)
        member._value_ = value
        member.category = category
        member.hint = hint
        member.jsonrpc_code = jsonrpc_code
        return member

    # Tool level.
    ELEMENT_NOT_FOUND = ("ELEMENT_NOT_FOUND", CALLER, "call browser_snapshot and use one of the returned refs")
    STALE_REF = (
        "STALE_REF",
        CALLER,
        "the page changed since that snapshot: call browser_snapshot again and use a new ref",
    )
    NAVIGATION_TIMEOUT = (
        "NAVIGATION_TIMEOUT",
        TRANSIENT,
        "the page did not load in time: raise timeoutMs, use waitUntil='commit', or check that the site responds",
    )
    NAVIGATION_FAILED = (
        "NAVIGATION_FAILED",
        CALLER,
        "check the URL and that the server is reachable from inside the sandbox "
        "(network 'public' blocks private and host addresses, 'none' everything; see sandbox_list)",
    )
    SESSION_NOT_FOUND = (
        "SESSION_NOT_FOUND",
        CALLER,
        "omit sessionId to use the default session, or create a new one",
    )
    SESSION_LIMIT_REACHED = ("SESSION_LIMIT_REACHED", CALLER, "close a browser session you no longer need")
    TAB_NOT_FOUND = ("TAB_NOT_FOUND", CALLER, "call browser_tabs with action 'list' to see the open tabs")
    TAB_LIMIT_REACHED = (
        "TAB_LIMIT_REACHED",
        CALLER,
        "close tabs you no longer need with browser_tabs action 'close'",
    )
    PAGE_CRASHED = ("PAGE_CRASHED", TRANSIENT, "the page crashed and was replaced by a fresh one: navigate again")
    DIALOG_PENDING = (
        "DIALOG_PENDING",
        CALLER,
        "a dialog is open on this tab: answer it with browser_handle_dialog",
    )
    INVALID_PARAMETER = ("INVALID_PARAMETER", CALLER, "fix the arguments named in details and call again", -32602)
    EXECUTION_ERROR = ("EXECUTION_ERROR", TRANSIENT, "see details; the operation may be retried")
    OPERATION_TIMEOUT = (
        "OPERATION_TIMEOUT",
        TRANSIENT,
        "the operation ran out of time: raise timeoutMs or do less per call",
    )
    # Code and processes.
    PROCESS_NOT_FOUND = ("PROCESS_NOT_FOUND", CALLER, "call process_list to see the processes of this sandbox")
    PROCESS_LIMIT_REACHED = (
        "PROCESS_LIMIT_REACHED",
        CALLER,
        "kill background processes you no longer need with process_kill",
    )
    CODE_RUNNER_UNAVAILABLE = (
        "CODE_RUNNER_UNAVAILABLE",
        SANDBOX,
        "the sandbox's code runner is not up; retry in a moment or recreate the sandbox",
    )
    # Files.
    FILE_NOT_FOUND = ("FILE_NOT_FOUND", CALLER, "check the path with file_list; paths are relative to the workspace")
    PATH_OUTSIDE_WORKSPACE = (
        "PATH_OUTSIDE_WORKSPACE",
        CALLER,
        "use a path inside the workspace (relative, without '..' escaping it)",
    )
    NOT_A_FILE = ("NOT_A_FILE", CALLER, "the path is a directory: use file_list")
    NOT_A_DIRECTORY = ("NOT_A_DIRECTORY", CALLER, "the path is a file: use file_read")
    FILE_TOO_LARGE = ("FILE_TOO_LARGE", CALLER, "read it in parts with offset and limit")
    NOT_TEXT = ("NOT_TEXT", CALLER, "the file is not UTF-8 text: read it with encoding 'base64'")
    PERMISSION_DENIED = (
        "PERMISSION_DENIED",
        CALLER,
        "the file's permissions do not allow this; change them with code_run (chmod)",
    )
    # Runtime level (template runs and their artifacts).
    TEMPLATE_NOT_FOUND = ("TEMPLATE_NOT_FOUND", CALLER, "call list_task_templates to see the available templates")
    TEMPLATE_VERSION_UNSUPPORTED = ("TEMPLATE_VERSION_UNSUPPORTED", CALLER, "switch to a supported template version")
    TRUST_LEVEL_NOT_ALLOWED = (
        "TRUST_LEVEL_NOT_ALLOWED",
        CALLER,
        "not allowed for remote callers: connect over stdio or use another tool",
    )
    RUN_NOT_FOUND = ("RUN_NOT_FOUND", CALLER, "check the runId with list_task_runs")
    RUN_TIMEOUT = ("RUN_TIMEOUT", TRANSIENT, "raise options.timeoutMs or split the task")
    RUN_CANCELED = ("RUN_CANCELED", CALLER, "create a new run")
    STEP_EXECUTION_FAILED = ("STEP_EXECUTION_FAILED", CALLER, "see details.failedStep and details.stepErrorCode")
    ARTIFACT_NOT_FOUND = ("ARTIFACT_NOT_FOUND", CALLER, "check the artifactId in the run's artifacts")
    ARTIFACT_EXPIRED = ("ARTIFACT_EXPIRED", CALLER, "run the task again to produce a fresh artifact")
    # Sandbox level.
    SANDBOX_NOT_FOUND = (
        "SANDBOX_NOT_FOUND",
        CALLER,
        "call sandbox_list to see your sandboxes, or sandbox_create to make one",
    )
    SANDBOX_NOT_RUNNING = (
        "SANDBOX_NOT_RUNNING",
        SANDBOX,
        "the sandbox stopped: destroy it and call sandbox_create",
    )
    SANDBOX_LIMIT_REACHED = (
        "SANDBOX_LIMIT_REACHED",
        CALLER,
        "destroy a sandbox you no longer need with sandbox_destroy",
    )
    SANDBOX_START_FAILED = (
        "SANDBOX_START_FAILED",
        SANDBOX,
        "see details; check `boxwright doctor`, then retry sandbox_create",
    )
    SANDBOX_START_TIMEOUT = (
        "SANDBOX_START_TIMEOUT",
        SANDBOX,
        "the sandbox did not become ready in time; retry, or check `boxwright doctor`",
    )
    NO_DEFAULT_SANDBOX = ("NO_DEFAULT_SANDBOX", CALLER, "call sandbox_create first (or pass sandboxId)")
    AMBIGUOUS_SANDBOX = (
        "AMBIGUOUS_SANDBOX",
        CALLER,
        "you have several sandboxes: pass sandboxId (see sandbox_list)",
    )
    AGENT_UNREACHABLE = (
        "AGENT_UNREACHABLE",
        SANDBOX,
        "the sandbox's agent does not answer; destroy the sandbox and create a new one",
    )
    RPC_TIMEOUT = (
        "RPC_TIMEOUT",
        SANDBOX,
        "the sandbox did not answer in time; it may be overloaded or frozen — retry, or recreate it",
    )
    TOOL_TIMEOUT = (
        "TOOL_TIMEOUT",
        TRANSIENT,
        "the call took too long and was abandoned; retry with a larger timeoutMs",
    )
    IMAGE_NOT_FOUND = ("IMAGE_NOT_FOUND", SERVER, "build the sandbox image: `boxwright image build`")
    IMAGE_BUILD_FAILED = (
        "IMAGE_BUILD_FAILED",
        SERVER,
        "see details for the build log tail; fix and run `boxwright image build` again",
    )
    DOCKER_UNAVAILABLE = (
        "DOCKER_UNAVAILABLE",
        SERVER,
        "start the Docker engine (or set DOCKER_HOST) and check `boxwright doctor`",
    )
    UNAUTHORIZED = ("UNAUTHORIZED", CALLER, "send the sandbox's bearer token in the Authorization header")
    # Protocol.
    PARSE_ERROR = ("PARSE_ERROR", CALLER, "send a valid JSON-RPC 2.0 request body", -32700)
    INVALID_REQUEST = (
        "INVALID_REQUEST",
        CALLER,
        "send a JSON-RPC 2.0 object with jsonrpc='2.0', a method and object params",
        -32600,
    )
    METHOD_NOT_FOUND = ("METHOD_NOT_FOUND", CALLER, "see rpc.methods for the supported methods", -32601)
    PAYLOAD_TOO_LARGE = ("PAYLOAD_TOO_LARGE", CALLER, "send less data per call (split large files into parts)")
    INTERNAL_ERROR = (
        "INTERNAL_ERROR",
        SERVER,
        "this is a bug in Boxwright; retry, and report it if it persists",
        -32603,
    )


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


def unauthorized(authorization: str | None, *, hint: str | None = None) -> BoxwrightError:
    """The 401 of both HTTP faces (the MCP server and the agent): which of the two went wrong, never the token."""
    message = "invalid bearer token" if authorization else "missing bearer token"
    return BoxwrightError(ErrorCode.UNAUTHORIZED, message, hint=hint)
