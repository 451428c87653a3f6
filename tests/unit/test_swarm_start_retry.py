"""SwarmBackend.start's one retry, as pure logic: a swarm that fails a task before its container runs
(moby/moby#48783) is asked once more, nothing else is retried, and the one deadline covers both tries.

The real engine's side (the error text swarm gives, both attempts cleaned up) is in
tests/swarm/test_swarm_backend.py; a fault that comes and goes cannot be made on demand there.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from host.backends import swarm_backend
from host.backends.base import ContainerInfo, StartSpec
from host.backends.swarm_backend import SwarmBackend, _NeverStarted
from host.config import Settings
from rpc.errors import BoxwrightError, ErrorCode

BUSY = "the sandbox task failed: starting container failed: unable to remount dir as readonly: device or resource busy"


def _backend(
    tmp_path: Path, outcomes: list[BaseException | None], startup_timeout: float = 30
) -> tuple[SwarmBackend, list[float]]:
    settings = Settings(namespace="t", image="img", state_dir=tmp_path, backend="swarm")
    backend = SwarmBackend(settings, manager=object(), engines=[])  # type: ignore[arg-type]
    # Below Settings' floor of 1 s (a deadline already passed), so past its validation.
    backend.settings = settings.model_copy(update={"startup_timeout": startup_timeout})
    deadlines: list[float] = []

    def start_once(spec: StartSpec, deadline: float) -> ContainerInfo:
        deadlines.append(deadline)
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome
        return ContainerInfo(
            container_id="svc", sandbox_id=spec.sandbox_id, status="running", labels={}, agent_url=None
        )

    backend._start_once = start_once  # type: ignore[method-assign]
    return backend, deadlines


SPEC = StartSpec(sandbox_id="sbx1", image="img", labels={}, env={})


def never_started() -> _NeverStarted:
    return _NeverStarted(ErrorCode.SANDBOX_START_FAILED, BUSY, details={"taskState": "failed"})


def test_a_container_that_never_started_is_started_again_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    backend, deadlines = _backend(tmp_path, [never_started(), None])
    with caplog.at_level(logging.WARNING, logger=swarm_backend.__name__):
        info = backend.start(SPEC)
    assert info.container_id == "svc"
    assert len(deadlines) == 2 and deadlines[0] == deadlines[1]  # one startup budget for both tries
    assert [r.getMessage() for r in caplog.records] == [f"sandbox sbx1: {BUSY}; starting it again"]


def test_a_second_failure_is_answered_as_it_is(tmp_path: Path) -> None:
    backend, deadlines = _backend(tmp_path, [never_started(), never_started()])
    with pytest.raises(BoxwrightError) as err:
        backend.start(SPEC)
    assert err.value.code is ErrorCode.SANDBOX_START_FAILED and "device or resource busy" in err.value.message
    assert len(deadlines) == swarm_backend.START_ATTEMPTS == 2


@pytest.mark.parametrize(
    "error",
    [
        BoxwrightError(ErrorCode.IMAGE_NOT_FOUND, "the sandbox task rejected: No such image: img"),
        BoxwrightError(ErrorCode.SANDBOX_START_FAILED, "no swarm node can take the sandbox: no suitable node"),
        BoxwrightError(ErrorCode.SANDBOX_START_TIMEOUT, "the sandbox task did not start in time"),
        KeyboardInterrupt(),
    ],
)
def test_other_failures_are_not_retried(tmp_path: Path, error: BaseException) -> None:
    backend, deadlines = _backend(tmp_path, [error, None])
    with pytest.raises(type(error)):
        backend.start(SPEC)
    assert len(deadlines) == 1


def test_no_second_try_once_the_deadline_has_passed(tmp_path: Path) -> None:
    backend, deadlines = _backend(tmp_path, [never_started(), None], startup_timeout=1e-6)
    with pytest.raises(_NeverStarted):
        backend.start(SPEC)
    assert len(deadlines) == 1
