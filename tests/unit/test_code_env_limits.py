"""code.run's env: what execve would refuse (E2BIG) is an INVALID_PARAMETER naming env, before anything runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from rpc.errors import BoxwrightError, ErrorCode, from_validation_error
from rpc.models.code import CodeRunParams
from sandbox_image.code.spawn import spawn, user_env

MAX_ENV_STRING_BYTES = 131_071  # Linux MAX_ARG_STRLEN (32 pages) less the NUL: the longest "NAME=value"
MAX_ENV_TOTAL_BYTES = 1024 * 1024


def params(env: dict[str, str]) -> CodeRunParams:
    return CodeRunParams(language="bash", code="echo", env=env)


def refusal(env: dict[str, str]) -> BoxwrightError:
    with pytest.raises(ValidationError) as info:
        params(env)
    return from_validation_error(info.value, "invalid arguments", root="(arguments)")


def test_one_variable_over_max_arg_strlen_is_refused_naming_env_never_its_value() -> None:
    err = refusal({"BIG": "x" * 200_000})
    assert err.code == ErrorCode.INVALID_PARAMETER
    assert [e["field"] for e in err.details["errors"]] == ["env"]
    assert "'BIG'" in err.message and str(MAX_ENV_STRING_BYTES) in err.message and "xxxx" not in err.message


def test_the_limit_counts_utf8_bytes_of_name_equals_value() -> None:
    longest = "V=" + "x" * (MAX_ENV_STRING_BYTES - 2)
    assert params({"V": longest[2:]}).env["V"] == longest[2:]
    assert refusal({"V": longest[2:] + "x"}).code == ErrorCode.INVALID_PARAMETER
    assert refusal({"V": "é" * (MAX_ENV_STRING_BYTES // 2)}).code == ErrorCode.INVALID_PARAMETER  # 2 bytes each


def test_the_total_is_bounded() -> None:
    each = MAX_ENV_STRING_BYTES // 2
    many = {f"V{i}": "x" * each for i in range(MAX_ENV_TOTAL_BYTES // each + 1)}
    err = refusal(many)
    assert [e["field"] for e in err.details["errors"]] == ["env"] and "total" in err.message


async def test_the_largest_accepted_variable_really_starts(workspace: Path) -> None:
    env = user_env(params({"V": "x" * (MAX_ENV_STRING_BYTES - 2)}).env)
    proc = await spawn(["/bin/true"], cwd=str(workspace), env=env, stdin_path=None, stdout_fd=1, stderr_fd=2)
    assert await proc.wait() == 0


async def test_e2big_from_exec_is_invalid_env_not_a_broken_image(workspace: Path) -> None:
    env = user_env({"BIG": "x" * 200_000})  # past the model's check, as a backstop
    read_fd, write_fd = os.pipe()
    try:
        with pytest.raises(BoxwrightError) as info:
            await spawn(
                ["/bin/true"], cwd=str(workspace), env=env, stdin_path=None, stdout_fd=write_fd, stderr_fd=write_fd
            )
    finally:
        os.close(read_fd)
        os.close(write_fd)
    err = info.value
    assert err.code == ErrorCode.INVALID_PARAMETER and [e["field"] for e in err.details["errors"]] == ["env"]
    assert "env" in err.hint and "broken" not in err.hint
