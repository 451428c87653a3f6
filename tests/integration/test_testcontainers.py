"""Test suites can start a sandbox through testcontainers (the `boxwright_sandbox` pytest fixture of
host.testing) and drive it with a typed client."""

from __future__ import annotations

import pytest

from host.testing import BoxwrightContainer
from rpc import methods
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.sandbox import SandboxInfoParams


def test_fixture_gives_a_working_hardened_sandbox(boxwright_sandbox: BoxwrightContainer) -> None:
    box = boxwright_sandbox
    assert box.write_file("data/in.txt", "21").size == 2
    run = box.run_code("print(int(open('data/in.txt').read()) * 2)")
    assert run.stdout == "42\n" and run.exitCode == 0
    assert box.read_file("data/in.txt").content == "21"
    assert [e.path for e in box.list_files("data").entries] == ["data/in.txt"]
    info = box.call(methods.SANDBOX_INFO, SandboxInfoParams())
    assert info.codeRunnerReady and info.user == "agent"
    attrs = box.get_wrapped_container().attrs
    assert attrs["HostConfig"]["ReadonlyRootfs"] and attrs["HostConfig"]["CapDrop"] == ["ALL"]
    assert all(b["HostIp"] == "127.0.0.1" for b in attrs["NetworkSettings"]["Ports"]["8080/tcp"])


def test_errors_surface_as_boxwright_errors(boxwright_sandbox: BoxwrightContainer) -> None:
    with pytest.raises(BoxwrightError) as info:
        boxwright_sandbox.read_file("../outside")
    assert info.value.code is ErrorCode.PATH_OUTSIDE_WORKSPACE
    boxwright_sandbox.token = "wrong"
    with pytest.raises(BoxwrightError) as info:
        boxwright_sandbox.run_code("print(1)")
    assert info.value.code is ErrorCode.UNAUTHORIZED
