"""The transport to a sandbox's agent: JSON-RPC (encoded by `rpc.envelope`) over HTTP, with deadline
propagation.

The caller hands in the RPC-layer Deadline and the agent is told (`deadlineMs`) the agent deadline
of the ladder (`rpc.deadline.LADDER`), a little less, so that it answers with a structured timeout
before this client's own backstop fires; if the agent is frozen or gone, the backstop turns the hang
into RPC_TIMEOUT / AGENT_UNREACHABLE. Every failure leaves here as a BoxwrightError.
"""

from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass, field

import httpx
from pydantic import ValidationError

from rpc.deadline import LADDER, Deadline
from rpc.envelope import MalformedResult, UnreadableResponse, decode_response, encode_request
from rpc.errors import BoxwrightError, ErrorCode, invalid_fields
from rpc.methods import Method, P, R
from rpc.models.sandbox import Health

log = logging.getLogger(__name__)

HEADERS = {"Content-Type": "application/json"}


@dataclass(frozen=True)
class AgentEndpoint:
    base_url: str
    token: str = field(repr=False)

    @property
    def headers(self) -> dict[str, str]:
        return {**HEADERS, "Authorization": f"Bearer {self.token}"}


class AgentClient:
    def __init__(self) -> None:
        # No pooled keep-alive across sandboxes is needed; one client keeps connections per host:port.
        self._http = httpx.AsyncClient(timeout=None, trust_env=False)
        self._ids = itertools.count(1)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def health(self, endpoint: AgentEndpoint, timeout_s: float = 2.0) -> Health:
        """GET /healthz; an agent that does not answer it (yet) is AGENT_UNREACHABLE."""
        try:
            resp = await self._http.get(f"{endpoint.base_url}/healthz", timeout=timeout_s)
            resp.raise_for_status()
            return Health.model_validate_json(resp.content)
        except (httpx.HTTPError, ValidationError) as exc:
            raise BoxwrightError(
                ErrorCode.AGENT_UNREACHABLE,
                f"the sandbox agent's health check failed ({type(exc).__name__})",
                details={"cause": str(exc)[:200]},
            ) from exc

    async def call(self, endpoint: AgentEndpoint, method: Method[P, R], params: P, deadline: Deadline) -> R:
        agent_ms = max(1, LADDER.agent(deadline).remaining_ms())
        body = encode_request(method, params, deadline_ms=agent_ms, request_id=next(self._ids))
        started = time.monotonic()
        try:
            async with deadline.timeout():
                resp = await self._http.post(
                    f"{endpoint.base_url}/rpc",
                    content=body,
                    headers=endpoint.headers,
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
        return read_answer(method, resp.status_code, resp.content)


def read_answer(method: Method[P, R], status: int, content: bytes) -> R:
    """The agent's HTTP answer as the method's result model, or its error as a BoxwrightError."""
    try:
        return decode_response(method, content)
    except MalformedResult as exc:
        raise invalid_fields(
            exc.errors,
            f"the sandbox agent returned a malformed {method.name} result (version mismatch?)",
            code=ErrorCode.INTERNAL_ERROR,
            hint="rebuild the sandbox image (`boxwright image build`) and recreate the sandbox",
            method=method.name,
        ) from exc
    except UnreadableResponse as exc:
        code = {401: ErrorCode.UNAUTHORIZED, 413: ErrorCode.PAYLOAD_TOO_LARGE}.get(status, ErrorCode.AGENT_UNREACHABLE)
        raise BoxwrightError(
            code,
            f"the sandbox agent answered HTTP {status} without a JSON-RPC body",
            details={"method": method.name, "httpStatus": status},
        ) from exc
