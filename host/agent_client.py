"""The transport to a sandbox's agent: JSON-RPC (encoded by `rpc.envelope`) over HTTP, with deadline
propagation.

The caller hands in the RPC-layer Deadline and the agent is told (`deadlineMs`) the agent deadline
of the ladder (`rpc.deadline.LADDER`), a little less, so that it answers with a structured timeout
before this client's own backstop fires; if the agent is frozen or gone, the backstop turns the hang
into RPC_TIMEOUT / AGENT_UNREACHABLE. Every failure leaves here as a BoxwrightError.

The HTTP client is aiohttp's (the agent's own library): measured on a real sandbox, one keep-alive
POST costs the host ~0.55 ms of CPU with it against ~1.3 ms with httpx, on every tool call.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from dataclasses import dataclass, field

import aiohttp
from pydantic import ValidationError

from rpc.deadline import LADDER, Deadline
from rpc.envelope import MalformedResult, UnreadableResponse, decode_response, encode_request
from rpc.errors import BoxwrightError, ErrorCode, invalid_fields
from rpc.methods import Method, P, R
from rpc.models.sandbox import Health

log = logging.getLogger(__name__)

HEADERS = {"Content-Type": "application/json"}
# The most this client reads of one answer. The largest real ones (a page's whole text for the host to
# cut, rpc.paging.MAX_WHOLE_BYTES, as JSON) are a quarter of it; past it the sandbox is misbehaving and
# the host's memory is not its to take.
MAX_ANSWER_BYTES = 128 * 1024 * 1024
READ_CHUNK_BYTES = 1024 * 1024


@dataclass(frozen=True)
class AgentEndpoint:
    base_url: str
    token: str = field(repr=False)
    headers: dict[str, str] = field(init=False, repr=False, compare=False)
    rpc_url: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Derived once: they are read on every call.
        object.__setattr__(self, "headers", {**HEADERS, "Authorization": f"Bearer {self.token}"})
        object.__setattr__(self, "rpc_url", f"{self.base_url}/rpc")


class AgentClient:
    def __init__(self) -> None:
        # One session keeps keep-alive connections per host:port (so one per sandbox). It is made on
        # first use, inside the event loop it belongs to (the manager is built before the loop runs).
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the session's (aiohttp deprecated session.loop)
        self._ids = itertools.count(1)

    def _http(self) -> aiohttp.ClientSession:
        session, loop = self._session, asyncio.get_running_loop()
        if session is None or session.closed or self._loop is not loop:
            self._loop = loop
            session = self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None),
                trust_env=False,
                auto_decompress=False,
                cookie_jar=aiohttp.DummyCookieJar(),  # the agent sets none; filtering the jar cost ~0.1 ms a call
            )
        return session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def health(self, endpoint: AgentEndpoint, timeout_s: float = 2.0) -> Health:
        """GET /healthz; an agent that does not answer it (yet) is AGENT_UNREACHABLE."""
        try:
            async with self._http().get(
                f"{endpoint.base_url}/healthz", timeout=aiohttp.ClientTimeout(total=timeout_s)
            ) as resp:
                resp.raise_for_status()
                content = await resp.read()
            return Health.model_validate_json(content)
        except (aiohttp.ClientError, TimeoutError, ValidationError) as exc:
            raise BoxwrightError(
                ErrorCode.AGENT_UNREACHABLE,
                f"the sandbox agent's health check failed ({type(exc).__name__})",
                details={"cause": str(exc)[:200]},
            ) from exc

    async def call(self, endpoint: AgentEndpoint, method: Method[P, R], params: P, deadline: Deadline) -> R:
        agent_ms = max(1, LADDER.agent(deadline).remaining_ms())
        body = encode_request(method, params, deadline_ms=agent_ms, request_id=next(self._ids))
        started = time.monotonic()
        connect_s = min(5.0, max(0.1, deadline.remaining()))
        try:
            async with (
                deadline.timeout(),
                self._http().post(
                    endpoint.rpc_url,
                    data=body,
                    headers=endpoint.headers,
                    timeout=aiohttp.ClientTimeout(total=None, connect=connect_s),
                ) as resp,
            ):
                status, content = resp.status, await _read_capped(resp, method.name)
        except aiohttp.ClientError as exc:  # before TimeoutError: a connect timeout is one of these too
            raise BoxwrightError(
                ErrorCode.AGENT_UNREACHABLE,
                f"cannot reach the sandbox agent ({type(exc).__name__})",
                details={"method": method.name},
            ) from exc
        except TimeoutError as exc:
            raise BoxwrightError(
                ErrorCode.RPC_TIMEOUT,
                f"the sandbox did not answer {method.name} within {time.monotonic() - started:.1f}s",
                details={"method": method.name},
            ) from exc
        return read_answer(method, status, content)


async def _read_capped(resp: aiohttp.ClientResponse, method_name: str) -> bytes:
    if resp.content_length is not None and resp.content_length <= MAX_ANSWER_BYTES:
        return await resp.read()  # the agent's usual answer: its length said, read at once
    size, chunks = 0, []
    if resp.content_length is None:
        async for chunk in resp.content.iter_chunked(READ_CHUNK_BYTES):
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                break
            chunks.append(chunk)
        else:
            return b"".join(chunks)
    resp.close()  # the rest is not read: the connection is dropped, not reused
    raise BoxwrightError(
        ErrorCode.PAYLOAD_TOO_LARGE,
        f"the sandbox agent's answer to {method_name} is over {MAX_ANSWER_BYTES} bytes; it was not read",
        hint="ask for less in one call (a smaller maxChars, fewer items); if this keeps happening, recreate the "
        "sandbox (sandbox_destroy, sandbox_create)",
        details={"method": method_name, "maxAnswerBytes": MAX_ANSWER_BYTES},
    )


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
