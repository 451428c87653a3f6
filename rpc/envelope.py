"""JSON-RPC 2.0 envelope shared by the host client, the agent and the runner daemon."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rpc.errors import BoxwrightError, ErrorBody, ErrorCode

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

    def to_wire(self) -> dict[str, Any]:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self.id}
        if self.error is not None:
            body["error"] = self.error.model_dump(mode="json", exclude_none=True)
        else:
            body["result"] = self.result
        return body
