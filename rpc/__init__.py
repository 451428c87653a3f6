"""Boxwright's wire contract: the JSON-RPC envelope, method table, models, errors and deadlines.

Both the host and the in-container agent import this package; nothing that crosses the wire is
described anywhere else.
"""

from rpc.deadline import DEADLINE_FIELD, Deadline
from rpc.envelope import RpcError, RpcErrorData, RpcRequest, RpcResponse
from rpc.errors import BoxwrightError, ErrorBody, ErrorCode
from rpc.methods import BY_NAME, Method

PROTOCOL_VERSION = "1"

__all__ = [
    "BY_NAME",
    "DEADLINE_FIELD",
    "PROTOCOL_VERSION",
    "BoxwrightError",
    "Deadline",
    "ErrorBody",
    "ErrorCode",
    "Method",
    "RpcError",
    "RpcErrorData",
    "RpcRequest",
    "RpcResponse",
]
