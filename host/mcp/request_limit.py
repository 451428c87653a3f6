"""The HTTP request size limit, said in words a user can act on.

The SDK refuses streamable-HTTP request bodies over `MAX_REQUEST_BYTES` with a bare
"Request body too large"; clients show it as an unexplained transport error. Tool limits are
chosen to fit under it (file_write's largest content, base64-encoded, with room to spare), so
only an unusual request gets here — e.g. text that JSON escaping blows up. This answers a declared
oversize body first, with the limit and the way around it (write in parts with append); bodies
without a Content-Length are still cut off by the SDK itself.
"""

from __future__ import annotations

import json

from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from starlette.types import ASGIApp, Receive, Scope, Send

from rpc.errors import ErrorCode
from rpc.models.files import MAX_WRITE_BYTES

MAX_REQUEST_BYTES = DEFAULT_MAX_REQUEST_BODY_SIZE
INVALID_REQUEST = -32600


class RequestSizeLimit:
    def __init__(self, app: ASGIApp, max_bytes: int = MAX_REQUEST_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = dict(scope.get("headers") or []).get(b"content-length", b"") if scope["type"] == "http" else b""
        if declared.isdigit() and int(declared) > self.max_bytes:
            message = (
                f"request body of {int(declared)} bytes is over this server's limit of {self.max_bytes} bytes: "
                "send less per call (fewer or shorter values, e.g. a batch split into several runs); "
                f"send large files in parts: file_write with append=true, at most {MAX_WRITE_BYTES} bytes per call"
            )
            body = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": INVALID_REQUEST,
                    "message": message,
                    "data": {"errorCode": ErrorCode.PAYLOAD_TOO_LARGE.value, "maxRequestBytes": self.max_bytes},
                },
            }
            await send(
                {"type": "http.response.start", "status": 413, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": json.dumps(body).encode()})
            return
        await self.app(scope, receive, send)
