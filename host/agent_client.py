"""JSON-RPC client for a sandbox's agent, with deadline propagation.

The caller hands in the RPC-layer Deadline. The agent is told (`deadlineMs`) a little less than
that, so the agent answers with a structured timeout before this client's own backstop fires; if
the agent is frozen or gone, the backstop turns the hang into RPC_TIMEOUT / AGENT_UNREACHABLE.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from pydantic import ValidationError

from rpc.deadline import DEADLINE_FIELD, Deadline
from rpc.envelope import RpcResponse
from rpc.errors import BoxwrightError, ErrorCode
from rpc.methods import Method, P, R
from rpc.models.sandbox import Health

log = logging.getLogger(__name__)

# Transport time reserved between this client's deadline and the one given to the agent.
TRANSPORT_MARGIN_S = 0.75


@dataclass(frozen=True)
class AgentEndpoint:
    base_url: str
    token: str = field(repr=False)


class AgentClient:
    def __init__(self) -> None:
        # No pooled keep-alive across sandboxes is needed; one client keeps connections per host:port.
        self._http = httpx.AsyncClient(timeout=None, trust_env=False)
        self._ids = itertools.count(1)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def health(self, endpoint: AgentEndpoint, timeout_s: float = 2.0) -> Health:
        resp = await self._http.get(f"{endpoint.base_url}/healthz", timeout=timeout_s)
        resp.raise_for_status()
        return Health.model_validate(resp.json())

    async def call(self, endpoint: AgentEndpoint, method: Method[P, R], params: P, deadline: Deadline) -> R:
        agent_ms = max(1, deadline.child(TRANSPORT_MARGIN_S).remaining_ms())
        body = encode_request(method, params, agent_ms, next(self._ids))
        started = time.monotonic()
        try:
            async with deadline.timeout():
                resp = await self._http.post(
                    f"{endpoint.base_url}/rpc",
                    content=json.dumps(body),
                    headers={"Authorization": f"Bearer {endpoint.token}", "Content-Type": "application/json"},
                    timeout=httpx.Timeout(None, connect=min(5.0, max(0.1, deadline.remaining()))),
                )
        except TimeoutError as exc:
            raise BoxwrightError(
                ErrorCode.RPC_TIMEOUT,
                f"the sandbox did not answer {method.name} within {time.monotonic() - started:.1f}s",
                details={"method": method.name},
            ) from exc
        except httpx.TransportError as exc:
            raise BoxwrightError(
                ErrorCode.AGENT_UNREACHABLE,
                f"cannot reach the sandbox agent ({type(exc).__name__})",
                details={"method": method.name},
            ) from exc
        return decode_response(method, resp)


def encode_request(method: Method[P, R], params: P, deadline_ms: int, request_id: int) -> dict[str, Any]:
    wire_params = params.model_dump(mode="json", exclude_none=True)
    wire_params[DEADLINE_FIELD] = deadline_ms
    return {"jsonrpc": "2.0", "id": request_id, "method": method.name, "params": wire_params}


def decode_response(method: Method[P, R], resp: httpx.Response) -> R:
    """The agent's answer as the method's result model, or its error as a BoxwrightError."""
    try:
        envelope = RpcResponse.model_validate(resp.json())
    except (ValueError, ValidationError) as exc:
        code = {401: ErrorCode.UNAUTHORIZED, 413: ErrorCode.PAYLOAD_TOO_LARGE}.get(
            resp.status_code, ErrorCode.AGENT_UNREACHABLE
        )
        raise BoxwrightError(
            code,
            f"the sandbox agent answered HTTP {resp.status_code} without a JSON-RPC body",
            details={"method": method.name, "httpStatus": resp.status_code},
        ) from exc
    if envelope.error is not None:
        raise envelope.error.to_exception()
    try:
        return method.result.model_validate(envelope.result)
    except ValidationError as exc:
        raise BoxwrightError(
            ErrorCode.INTERNAL_ERROR,
            f"the sandbox agent returned a malformed {method.name} result (version mismatch?)",
            hint="rebuild the sandbox image (`boxwright image build`) and recreate the sandbox",
            details={"method": method.name, "errors": [str(e["loc"]) for e in exc.errors()][:10]},
        ) from exc
