"""Test suites can start a sandbox through testcontainers (the `boxwright_sandbox` pytest fixture of
host.testing) and drive it with a typed client."""

from __future__ import annotations

import time

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


def test_the_sandbox_ends_itself_at_its_ttl_and_a_missing_image_is_a_clear_error(boxwright_image: str) -> None:
    """A test process killed inside `with` left its container running for ever (no Ryuk here, no expiry);
    a missing image was a raw APIError from a pull."""
    with BoxwrightContainer(boxwright_image, ttl_s=120) as box:
        env = dict(e.split("=", 1) for e in box.get_wrapped_container().attrs["Config"]["Env"])
        assert int(env["BOXWRIGHT_EXPIRES_AT"]) == box.expires_at  # the agent's own deadline, in 120 s
        assert 60 < box.expires_at - time.time() <= 121
        assert box.run_code("import os; print(os.environ.get('BOXWRIGHT_EXPIRES_AT'))").stdout == "None\n"
    with pytest.raises(BoxwrightError) as missing:
        BoxwrightContainer("boxwright-sandbox:no-such-tag").start()
    assert missing.value.code is ErrorCode.IMAGE_NOT_FOUND and "boxwright image build" in missing.value.hint
