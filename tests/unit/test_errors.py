"""The error model: every code carries its data; errors never change once made; the common shapes."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field, ValidationError

from rpc.errors import (
    APPLICATION_ERROR,
    BoxwrightError,
    Category,
    ErrorCode,
    field_errors,
    from_validation_error,
    invalid_parameter,
    unauthorized,
)


@pytest.mark.parametrize("code", list(ErrorCode))
def test_every_code_has_a_category_a_hint_and_a_jsonrpc_number(code: ErrorCode) -> None:
    assert isinstance(code.category, Category)
    assert code.hint and code.hint[0].islower() and not code.hint.endswith(".")
    assert code.value == code.name
    assert code.jsonrpc_code == APPLICATION_ERROR or -32768 <= code.jsonrpc_code <= -32600
    assert ErrorCode(code.value) is code  # still looked up by its wire value


def test_errors_cannot_be_rewritten_after_the_fact() -> None:
    exc = BoxwrightError(ErrorCode.RPC_TIMEOUT, "slow", details={"method": "code.run"})
    with pytest.raises(AttributeError):
        exc.code = ErrorCode.SANDBOX_NOT_FOUND  # type: ignore[misc]
    with pytest.raises(AttributeError):
        exc.message = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        exc.details["containerStatus"] = "paused"  # type: ignore[index]
    richer = exc.with_details(sandboxId="sbx_1", method="ignored: the error's own value wins")
    assert richer is not exc and richer.code is exc.code and richer.hint == exc.hint
    assert dict(richer.details) == {"sandboxId": "sbx_1", "method": "code.run"}
    assert dict(exc.details) == {"method": "code.run"}


class _Args(BaseModel):
    name: str = Field(min_length=1)
    count: int = 1


def test_validation_errors_name_fields_never_values() -> None:
    with pytest.raises(ValidationError) as info:
        _Args.model_validate({"name": "", "count": "sk-secret"})
    exc = from_validation_error(info.value, "invalid arguments", root="(arguments)", tool="t")
    assert exc.code is ErrorCode.INVALID_PARAMETER and exc.hint == ErrorCode.INVALID_PARAMETER.hint
    assert {e["field"] for e in exc.details["errors"]} == {"name", "count"}
    assert exc.details["tool"] == "t" and exc.message.startswith("invalid arguments — ")
    assert "sk-secret" not in repr(exc.to_body())
    with pytest.raises(ValidationError) as info:
        _Args.model_validate(3)
    assert field_errors(info.value, root="(arguments)")[0]["field"] == "(arguments)"


def test_one_bad_parameter() -> None:
    exc = invalid_parameter("path", "must not contain NUL bytes", hint="fix it")
    assert exc.details["errors"] == [{"field": "path", "message": "must not contain NUL bytes"}]
    assert exc.message == "invalid path: must not contain NUL bytes" and exc.hint == "fix it"


def test_unauthorized_says_which_without_the_token() -> None:
    assert unauthorized(None).message == "missing bearer token"
    refused = unauthorized("Bearer sk-wrong")
    assert refused.message == "invalid bearer token" and "sk-wrong" not in repr(refused.to_body())
    assert refused.code.category is Category.CALLER
