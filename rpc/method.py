"""What a method is: its name, its params/result models and its default budget.

Apart from the table (rpc.methods) so that a process serving a few methods — the code runner, which
every sandbox start waits for — imports only those methods' models (rpc.runner_methods)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from rpc.models.base import Params, Result

P = TypeVar("P", bound=Params)
R = TypeVar("R", bound=Result)


@dataclass(frozen=True)
class Method(Generic[P, R]):
    name: str
    params: type[P]
    result: type[R]
    default_timeout_ms: int = 30_000  # the operation's budget when its params have no timeoutMs
