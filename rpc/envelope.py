"""JSON-RPC 2.0 as Boxwright speaks it, encoded and decoded in this one place.

The callers (the host's agent client, the testing container, the agent forwarding to its code
runner) encode a request and decode the answer here; the callee (the dispatcher, in the agent and
in the runner daemon) decodes the request and encodes the answer here. The clients themselves are
transports: they move bytes and map their own failures (connection refused, HTTP status) to errors.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rpc.deadline import DEADLINE_FIELD
from rpc.errors import BoxwrightError, ErrorBody, ErrorCode, FieldError, field_errors, from_validation_error
from rpc.method import Method, P, R

RequestId = int | str | None


class RpcRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    jsonrpc: Literal["2.0"]
    id: RequestId = None
    method: str = Field(min_length=1, max_length=128)
    params: dict[str, Any] = Field(default_factory=dict)


class RpcErrorData(BaseModel):
    errorCode: ErrorCode
    recoverHint: str = ""
    details: dict[str, Any] = Field(default_factory=dict)


class RpcError(BaseModel):
    code: int
    message: str
    data: RpcErrorData | None = None

    def to_exception(self) -> BoxwrightError:
        if self.data is None:  # a peer that is not Boxwright
            return BoxwrightError(ErrorCode.INTERNAL_ERROR, self.message, details={"jsonrpcCode": self.code})
        return BoxwrightError.from_body(
            ErrorBody(
                error=self.message,
                errorCode=self.data.errorCode,
                recoverHint=self.data.recoverHint,
                details=self.data.details,
            )
        )

    @classmethod
    def from_exception(cls, exc: BoxwrightError) -> RpcError:
        return cls(
            code=exc.code.jsonrpc_code,
            message=exc.message,
            data=RpcErrorData(errorCode=exc.code, recoverHint=exc.hint, details=dict(exc.details)),
        )


class RpcResponse(BaseModel):
    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId = None
    result: Any = None
    error: RpcError | None = None


# -- the caller's side ------------------------------------------------------------------------
def encode_request(method: Method[P, R], params: P, *, deadline_ms: int, request_id: int) -> bytes:
    """A request body for `method`; the callee may spend `deadline_ms` from when it receives it.

    Arguments left at their defaults are not sent: the callee's models have the same defaults, and an agent
    of an older image (a sandbox adopted after an upgrade) refuses fields it does not know — so a call that
    uses nothing new still reaches it."""
    wire_params = params.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    wire_params[DEADLINE_FIELD] = deadline_ms
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method.name, "params": wire_params}).encode()


class UnreadableResponse(Exception):
    """The peer's answer is not a JSON-RPC response at all (what to say about it is the transport's call)."""


class MalformedResult(UnreadableResponse):
    """A JSON-RPC result that does not fit the method's result model (a peer of another version)."""

    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__("the result does not fit the method's model")
        self.errors = errors


def decode_response(method: Method[P, R], body: bytes) -> R:
    """The result as the method's model; the peer's error is raised as the BoxwrightError it describes."""
    try:
        envelope = RpcResponse.model_validate_json(body)
    except ValidationError as exc:
        raise UnreadableResponse("not a JSON-RPC response") from exc
    if envelope.error is not None:
        raise envelope.error.to_exception()
    try:
        return method.result.model_validate(envelope.result)
    except ValidationError as exc:
        raise MalformedResult(field_errors(exc)[:10]) from exc


# -- the callee's side ------------------------------------------------------------------------
def parse_json(body: bytes) -> Any:
    """JSON-decode a request body; anything undecodable is PARSE_ERROR, never an exception."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):  # JSONDecodeError, bad UTF-8, huge ints, absurd nesting
        raise BoxwrightError(ErrorCode.PARSE_ERROR, "request body is not valid JSON") from None


def request_id_of(obj: Any) -> RequestId:
    """The id to echo in an error, if the (possibly invalid) request has a usable one."""
    if isinstance(obj, dict):
        rid = obj.get("id")
        if isinstance(rid, str | int) and not isinstance(rid, bool) and len(str(rid)) <= 256:
            return rid
    return None


def decode_request(obj: Any) -> RpcRequest:
    """A parsed body as one request: batches, non-objects and bad envelopes are INVALID_REQUEST."""
    if isinstance(obj, list):
        raise BoxwrightError(
            ErrorCode.INVALID_REQUEST,
            "batch requests are not supported: send one JSON-RPC request per HTTP call",
        )
    if not isinstance(obj, dict):
        raise BoxwrightError(ErrorCode.INVALID_REQUEST, "the request must be a JSON object")
    try:
        return RpcRequest.model_validate(obj)
    except ValidationError as exc:
        what = "not a valid JSON-RPC 2.0 request"
        raise from_validation_error(exc, what, code=ErrorCode.INVALID_REQUEST) from None


def encode_result(request_id: RequestId, result: BaseModel) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result.model_dump(mode="json")}


def encode_error(exc: BoxwrightError, request_id: RequestId = None) -> dict[str, Any]:
    """An error response (also the body of the agent's 401/405/413 answers)."""
    error = RpcError.from_exception(exc).model_dump(mode="json", exclude_none=True)
    return {"jsonrpc": "2.0", "id": request_id, "error": error}
