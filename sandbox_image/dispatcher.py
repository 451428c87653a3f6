"""The JSON-RPC dispatcher shared by the agent and the runner daemon.

It owns everything between a request body and a response body — decoded and encoded by
`rpc.envelope` — : method lookup, params validation, the deadline, error translation and one log
line per call (successes at DEBUG, failures at INFO).
Feature modules only register handlers (`register(dispatcher, ...)`), so new features plug in
without touching this file.
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from rpc.deadline import DEADLINE_FIELD, LADDER, Deadline
from rpc.envelope import RequestId, RpcRequest, decode_request, encode_error, encode_result, parse_json, request_id_of
from rpc.errors import (
    BoxwrightError,
    ErrorCode,
    from_validation_error,
    invalid_parameter,
    out_of_processes,
    process_limit,
)
from rpc.method import Method
from rpc.models.base import Params, Result

P = TypeVar("P", bound=Params)
R = TypeVar("R", bound=Result)

Handler = Callable[[P, Deadline], Awaitable[R]]

# A `deadlineMs` above this is treated as this (nothing legitimate waits a day).
MAX_DEADLINE_MS = 24 * 3600 * 1000


@dataclass(frozen=True)
class _Registration:
    method: Method[Any, Any]
    handler: Handler[Any, Any]


class Dispatcher:
    """Method table + handlers; turns one decoded request into one response body."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.log = logging.getLogger(f"boxwright.{name}.rpc")
        self._handlers: dict[str, _Registration] = {}
        # Calls that reached a handler, by method: a pooled sandbox proves it served nobody before its claim.
        self.served: Counter[str] = Counter()

    def register(self, method: Method[P, R], handler: Handler[P, R]) -> None:
        """Serve `method` with `handler(params, deadline)`; each method has exactly one handler."""
        if method.name in self._handlers:
            raise ValueError(f"{method.name} is already registered with {self.name}")
        self._handlers[method.name] = _Registration(method, handler)

    @property
    def method_names(self) -> list[str]:
        return sorted(self._handlers)

    async def dispatch_bytes(self, body: bytes, *, received_at: float | None = None) -> dict[str, Any]:
        """Full pipeline from a raw body; `received_at` (monotonic) is when the request arrived."""
        received_at = time.monotonic() if received_at is None else received_at
        try:
            obj = parse_json(body)
        except BoxwrightError as exc:
            self._log("-", None, exc.code.value, received_at)
            return encode_error(exc)
        return await self.dispatch(obj, received_at=received_at)

    async def dispatch(self, obj: Any, *, received_at: float | None = None) -> dict[str, Any]:
        received_at = time.monotonic() if received_at is None else received_at
        request_id = request_id_of(obj)
        method_name = "-"
        try:
            request = decode_request(obj)
            method_name = request.method
            request_id = request.id
            result = await self._call(request, received_at)
        except BoxwrightError as exc:
            self._log(method_name, request_id, exc.code.value, received_at)
            return encode_error(exc, request_id)
        self._log(method_name, request_id, "ok", received_at)
        return encode_result(request_id, result)

    def _deadline(self, method: Method[Any, Any], params: dict[str, Any], received_at: float) -> tuple[Deadline, int]:
        raw = params.pop(DEADLINE_FIELD, None)
        if raw is None:
            budget_ms: float = method.default_timeout_ms
        elif isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw) or raw < 0:
            raise invalid_parameter(
                DEADLINE_FIELD,
                "must be a non-negative number of milliseconds",
                message=f"invalid params for {method.name} — {DEADLINE_FIELD}",
                method=method.name,
            )
        else:
            budget_ms = min(float(raw), MAX_DEADLINE_MS)
        return Deadline(received_at + budget_ms / 1000.0), int(budget_ms)

    async def _call(self, request: RpcRequest, received_at: float) -> Result:
        registration = self._handlers.get(request.method)
        if registration is None:
            # Only on this error path: the code runner's dispatcher does not load the whole table at start.
            from rpc.methods import BY_NAME

            known = request.method in BY_NAME  # in the contract, but no handler here (older image?)
            raise BoxwrightError(
                ErrorCode.METHOD_NOT_FOUND,
                f"method {request.method!r} is not served by this {self.name}"
                if known
                else f"unknown method {request.method!r}",
                details={"method": request.method, "knownMethods": self.method_names},
            )
        method = registration.method
        self.served[method.name] += 1
        params = dict(request.params)
        deadline, budget_ms = self._deadline(method, params, received_at)
        try:
            model = method.params.model_validate(params)
        except ValidationError as exc:
            raise from_validation_error(exc, f"invalid params for {method.name}", method=method.name) from None

        inner = LADDER.handler(deadline, budget_ms)
        try:
            async with inner.timeout():
                result = await registration.handler(model, inner)
            if not isinstance(result, method.result):
                result = method.result.model_validate(result)
            return result
        except BoxwrightError:
            raise
        except TimeoutError:
            raise BoxwrightError(
                ErrorCode.OPERATION_TIMEOUT,
                f"{method.name} did not finish within its deadline of {budget_ms} ms",
                details={"method": method.name, "deadlineMs": budget_ms},
            ) from None
        except Exception as exc:
            if out_of_processes(exc):  # a fork or a thread failed at the sandbox's pids limit
                self.log.warning("%s: out of processes (%s)", method.name, exc)
                raise process_limit(f"{method.name} failed") from None
            # The traceback stays in the log; the caller gets a generic message (no paths, no contents).
            self.log.exception("handler for %s failed", method.name)
            raise BoxwrightError(ErrorCode.INTERNAL_ERROR, f"internal error while handling {method.name}") from None

    def _log(self, method: str, request_id: RequestId, outcome: str, received_at: float) -> None:
        # Successes at DEBUG: the host logs every tool call already, and each line here also costs the
        # engine's log pipeline (~0.1 ms of CPU per call in containerd-shim and dockerd) and grows the
        # container's log for as long as it runs. Failures stay at INFO.
        level = logging.DEBUG if outcome == "ok" else logging.INFO
        if not self.log.isEnabledFor(level):
            return
        ms = int((time.monotonic() - received_at) * 1000)
        rid = str(request_id)[:64] if request_id is not None else "-"
        self.log.log(level, "method=%s id=%s outcome=%s ms=%d", method, rid, outcome, ms)
