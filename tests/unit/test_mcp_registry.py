"""The tool wrapper: uniform errors, validation, timeouts, and the summary-then-JSON shape.

Uses the real MCP SDK client in-process against toy tools (pure logic; no sandbox involved).
"""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, ConfigDict, Field

from host.mcp.caller import CallerResolver
from host.mcp.registry import Invocation, ToolOutput, ToolSpec, build_tool, loggable_id
from rpc.errors import BoxwrightError, ErrorCode


class EchoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1)
    times: int = Field(1, ge=1, le=3)
    secret: str | None = None


class EchoResult(BaseModel):
    text: str


async def echo(inv: Invocation[EchoArgs]) -> ToolOutput:
    if inv.args.text == "boom":
        raise BoxwrightError(ErrorCode.FILE_NOT_FOUND, "no such thing", details={"path": "x"})
    if inv.args.text == "crash":
        raise RuntimeError("internal detail that must not leak")
    if inv.args.text == "hang":
        await asyncio.sleep(60)
    return ToolOutput(EchoResult(text=inv.args.text * inv.args.times), summary="echo ok: done")


def server() -> MCPServer:
    spec = ToolSpec(
        name="echo", description="echo", input=EchoArgs, output=EchoResult, handler=echo, budget_s=lambda _: 0.5
    )
    return MCPServer("t", tools=[build_tool(spec, CallerResolver("stdio"))])


async def call(args: dict) -> tuple[bool, dict, str]:
    """(isError, data, text); on errors `data` is the body on the text's last line, where clients read it."""
    async with Client(server()) as client:
        r = await client.call_tool("echo", args)
    text = r.content[0].text
    if r.is_error:
        # No structuredContent on errors: strict clients validate it against the success outputSchema.
        assert r.structured_content is None
        return True, json.loads(text.rsplit("\n", 1)[-1]), text
    return False, r.structured_content, text


async def test_success_has_summary_line_then_the_same_json() -> None:
    is_error, data, text = await call({"text": "ab", "times": 2})
    assert not is_error
    assert data == {"text": "abab"}
    first, rest = text.split("\n", 1)
    assert first == "echo ok: done"
    assert json.loads(rest) == data


async def test_schemas_are_derived_from_models() -> None:
    async with Client(server()) as client:
        tool = (await client.list_tools()).tools[0]
    assert tool.input_schema["properties"]["times"]["maximum"] == 3
    assert tool.input_schema["required"] == ["text"]
    assert tool.output_schema["properties"]["text"]["type"] == "string"


@pytest.mark.parametrize(
    ("args", "field"),
    [({}, "text"), ({"text": 5}, "text"), ({"text": "a", "times": 9}, "times"), ({"text": "a", "bogus": 1}, "bogus")],
)
async def test_bad_arguments_are_invalid_parameter_with_field_and_hint(args: dict, field: str) -> None:
    is_error, data, text = await call(args)
    assert is_error
    assert data["errorCode"] == "INVALID_PARAMETER"
    assert data["recoverHint"]
    assert field in [e["field"] for e in data["details"]["errors"]]
    assert text.startswith("echo failed: invalid arguments")


async def test_rejected_values_are_not_echoed() -> None:
    _, data, text = await call({"text": "", "secret": 12345})
    assert "12345" not in json.dumps(data) and "12345" not in text


async def test_domain_error_keeps_code_hint_details() -> None:
    is_error, data, text = await call({"text": "boom"})
    assert is_error
    assert data == {
        "error": "no such thing",
        "errorCode": "FILE_NOT_FOUND",
        "recoverHint": "check the path with file_list; paths are relative to the workspace",
        "details": {"path": "x"},
    }
    assert text.splitlines()[1].startswith("hint: ")


async def test_unexpected_exception_is_internal_error_without_leaking() -> None:
    is_error, data, text = await call({"text": "crash"})
    assert is_error and data["errorCode"] == "INTERNAL_ERROR"
    assert "internal detail" not in text


async def test_tool_backstop_turns_a_hang_into_tool_timeout() -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    is_error, data, _ = await call({"text": "hang"})
    assert is_error and data["errorCode"] == "TOOL_TIMEOUT"
    assert loop.time() - started < 5


async def test_the_call_log_line_names_the_owner_of_a_refused_call_and_cannot_be_forged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    forged = "x\n12:00:00 INFO    host.mcp.registry: tool=sandbox_destroy owner=alice sandbox=sbx_1 outcome=ok"
    with caplog.at_level("INFO", logger="boxwright.tools"):
        await call({"text": "", "sandboxId": forged + "y" * 5000})
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("tool=echo")]
    assert "\n" not in line and len(line) < 300, line
    assert "owner=local" in line and "outcome=INVALID_PARAMETER" in line


def test_a_plain_sandbox_id_is_logged_as_is_anything_else_escaped_and_cut() -> None:
    assert loggable_id("sbx_0123abcd") == "sbx_0123abcd"
    assert loggable_id(None) == loggable_id("") == loggable_id(7) == "-"
    assert loggable_id("a\nb") == "'a\\nb'"
    assert loggable_id("z" * 100) == ascii("z" * 64) + "..."
