"""What strict MCP clients need from the server, checked without a sandbox: result shapes and sizes,
advertised capabilities, per-session resumable streams, the HTTP request limit (issue 8 items 1–4).
The same properties are checked end to end with real clients in tests/integration/compat."""

from __future__ import annotations

import base64
import json
import os
import tracemalloc

import httpx
import pytest
from mcp import Client, MCPError
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http import EventMessage
from mcp.types import JSONRPCNotification, JSONRPCRequest, JSONRPCResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from host.mcp.capabilities import offer_only_what_exists
from host.mcp.event_store import EventLog, SessionEvents, give_each_session_its_own_events
from host.mcp.request_limit import MAX_REQUEST_BYTES, RequestSizeLimit
from host.mcp.results import MAX_RESULT_BYTES, failure, success, wire_bytes
from rpc.errors import BoxwrightError, ErrorCode
from rpc.models.code import MAX_OUTPUT_BYTES, CodeRunResult
from rpc.models.files import MAX_READ_BYTES, MAX_WRITE_BYTES, FileReadResult

TS_STDIO_LIMIT = 10 * 1024 * 1024

# ---------------------------------------------------------------- results (items 1, 2, 5)


def test_failure_has_no_structured_content_and_the_body_on_its_last_line() -> None:
    exc = BoxwrightError(ErrorCode.FILE_NOT_FOUND, "'x' does not exist", details={"path": "x"})
    result = failure("file_read", exc)
    assert result.is_error and result.structured_content is None
    summary, hint, body = result.content[0].text.split("\n")
    assert summary == "file_read failed: 'x' does not exist [FILE_NOT_FOUND]"
    assert hint.startswith("hint: check the path")
    assert json.loads(body) == exc.to_body().model_dump(mode="json")


def test_success_text_is_the_summary_then_compact_json() -> None:
    data = CodeRunResult(stdout="42\n", exitCode=0, durationMs=5)
    result = success("code_run", "code_run ok: exit 0", data)
    summary, body = result.content[0].text.split("\n", 1)
    assert summary == "code_run ok: exit 0" and "\n" not in body and ": " not in body
    assert json.loads(body) == result.structured_content == data.model_dump(mode="json")


def test_the_largest_advertised_read_fits_one_message() -> None:
    raw = os.urandom(MAX_READ_BYTES)
    read = FileReadResult(
        path="big.bin",
        content=base64.b64encode(raw).decode(),
        encoding="base64",
        size=2 * MAX_READ_BYTES,
        offset=0,
        length=MAX_READ_BYTES,
        eof=False,
        nextOffset=MAX_READ_BYTES,
    )
    assert wire_bytes(success("file_read", "file_read ok", read)) < MAX_RESULT_BYTES


def test_the_largest_advertised_code_output_fits_one_message() -> None:
    line = "x" * 79 + "\n"  # ordinary text: escaping adds a little per line
    text = line * (MAX_OUTPUT_BYTES // len(line))
    result = success("code_run", "code_run ok", CodeRunResult(stdout=text, stderr=text, exitCode=0))
    assert wire_bytes(result) < MAX_RESULT_BYTES


def test_the_budget_is_well_below_what_typescript_clients_accept_on_stdio() -> None:
    assert MAX_RESULT_BYTES <= 0.6 * TS_STDIO_LIMIT


def test_a_result_over_the_budget_is_a_clear_error() -> None:
    escaped = "\x01" * MAX_READ_BYTES  # sixfold in JSON, and again in the text block
    n = MAX_READ_BYTES
    read = FileReadResult(path="ctrl.txt", content=escaped, encoding="utf-8", size=n, offset=0, length=n, eof=True)
    with pytest.raises(BoxwrightError) as info:
        success("file_read", "file_read ok", read)
    assert info.value.code == ErrorCode.PAYLOAD_TOO_LARGE
    assert "limit" in info.value.hint and info.value.details["maxResultBytes"] == MAX_RESULT_BYTES


def test_lone_surrogates_never_reach_the_wire() -> None:
    """A page title or an agent error can carry them; strict clients reject such JSON outright."""
    data = CodeRunResult(stdout="caf\udce9 \ud800!")
    result = success("code_run", "code_run ok: \udcff", data)
    wire = result.model_dump_json(by_alias=True)
    wire.encode("utf-8")
    assert result.structured_content["stdout"] == "caf\\xe9 \ufffd!"
    err = failure("file_read", BoxwrightError(ErrorCode.FILE_NOT_FOUND, "no \udce9", details={"path": "\udce9"}))
    assert json.loads(err.content[0].text.rsplit("\n", 1)[-1])["details"]["path"] == "\\xe9"


def test_the_largest_advertised_write_fits_an_http_request() -> None:
    content = base64.b64encode(b"\xff" * MAX_WRITE_BYTES).decode()
    request = {
        "jsonrpc": "2.0",
        "id": 12345,
        "method": "tools/call",
        "params": {
            "name": "file_write",
            "arguments": {"sandboxId": "sbx_0123456789ab", "path": "x" * 200, "content": content, "encoding": "base64"},
        },
    }
    assert len(json.dumps(request)) < 0.75 * MAX_REQUEST_BYTES


# ---------------------------------------------------------------- capabilities (item 3)


def toy_server() -> MCPServer:
    server = MCPServer("t")

    @server.tool()
    def hello() -> str:
        return "hi"

    return offer_only_what_exists(server)


async def test_nothing_behind_prompts_and_resources_means_not_advertised_and_method_not_found() -> None:
    async with Client(toy_server()) as client:
        caps = client.server_capabilities
        assert caps.tools is not None and caps.prompts is None and caps.resources is None
        calls = (lambda: client.get_prompt("x"), lambda: client.list_prompts(), lambda: client.read_resource("a:b"))
        for call in calls:
            with pytest.raises(MCPError) as info:
                await call()
            assert info.value.error.code == -32601


async def test_an_unknown_tool_is_invalid_params_with_the_uniform_body() -> None:
    """The MCP spec's answer to an unknown tool (-32602), with errorCode and recoverHint in its data — the
    SDK answered a tool result of bare text."""
    async with Client(toy_server()) as client:
        assert (await client.call_tool("hello", {})).content[0].text == "hi"
        with pytest.raises(MCPError) as info:
            await client.call_tool("no_such_tool", {})
        assert info.value.error.code == -32602 and info.value.error.message == "Unknown tool: no_such_tool"
        body = info.value.error.data
        assert body["errorCode"] == "INVALID_PARAMETER" and "tools/list" in body["recoverHint"]


async def test_registering_resources_later_turns_them_on() -> None:
    server = toy_server()

    @server.resource("boxwright://hello")
    def hello_resource() -> str:
        return "hello"

    @server.prompt()
    def greet() -> str:
        return "hi"

    async with Client(server) as client:
        caps = client.server_capabilities
        assert caps.resources is not None and caps.prompts is not None
        assert (await client.read_resource("boxwright://hello")).contents[0].text == "hello"
        with pytest.raises(MCPError) as info:
            await client.get_prompt("nope")
        assert info.value.error.code == -32602  # invalid params: unknown prompt name
        with pytest.raises(MCPError) as info:
            await client.read_resource("boxwright://nope")
        assert info.value.error.code in (-32602, -32002)


# ---------------------------------------------------------------- resumable streams (item 4)


def message(n: int) -> JSONRPCNotification:
    return JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"n": n})


async def test_sessions_never_replay_each_others_events() -> None:
    """Stream ids are per-session request ids: sessions A and B both have a stream "1"."""
    log = EventLog()
    a, b = log.session(), log.session()
    a_start = await a.store_event("1", None)  # priming
    b_start = await b.store_event("1", None)
    await a.store_event("1", message(1))
    await b.store_event("1", message(99))
    await a.store_event("1", message(2))
    replayed: list[EventMessage] = []

    async def collect(event: EventMessage) -> None:
        replayed.append(event)

    assert await a.replay_events_after(a_start, collect) == "1"
    assert [e.message.params["n"] for e in replayed] == [1, 2]
    replayed.clear()
    assert await a.replay_events_after(b_start, collect) is None  # B's cursor means nothing to A
    assert replayed == []


async def test_the_log_is_bounded() -> None:
    log = EventLog(max_events=5, max_bytes=10_000)
    view = log.session()
    first = await view.store_event("1", None)
    for n in range(20):
        await view.store_event("1", message(n))
    assert len(log) <= 5 and log.stored_bytes <= 10_000
    assert await view.replay_events_after(first, lambda _: None) is None  # dropped: nothing to resume
    big = JSONRPCRequest(jsonrpc="2.0", id=1, method="x", params={"blob": "y" * 20_000})
    await view.store_event("2", big)
    assert log.stored_bytes <= 10_000


async def test_a_session_flooding_the_log_pushes_out_its_own_events_not_the_others() -> None:
    log = EventLog(max_events=10, max_bytes=100_000)
    quiet, flood = log.session(), log.session()
    start = await quiet.store_event("1", None)
    await quiet.store_event("1", message(1))
    flood_start = await flood.store_event("7", None)
    for n in range(5_000):
        last = await flood.store_event("7", message(n))
    assert len(log) <= 10
    replayed: list[EventMessage] = []

    async def collect(event: EventMessage) -> None:
        replayed.append(event)

    assert await quiet.replay_events_after(start, collect) == "1"  # the quiet session's history is whole
    assert [e.message.params["n"] for e in replayed] == [1]
    assert await flood.replay_events_after(flood_start, collect) is None  # the flood's own oldest went
    assert await flood.replay_events_after(last, collect) == "7"
    # By bytes too: a session of big events gives way first.
    log = EventLog(max_events=1_000, max_bytes=30_000)
    quiet, heavy = log.session(), log.session()
    start = await quiet.store_event("1", None)
    await quiet.store_event("1", message(2))
    for _ in range(10):
        await heavy.store_event("2", JSONRPCRequest(jsonrpc="2.0", id=1, method="x", params={"blob": "y" * 9_000}))
    assert log.stored_bytes <= 30_000
    replayed.clear()
    assert await quiet.replay_events_after(start, collect) == "1" and len(replayed) == 1


def test_the_sdk_gives_each_new_session_its_own_view() -> None:
    """Pins the SDK seam the per-session views rely on (the transport's store, set at admission)."""
    server = toy_server()
    server.streamable_http_app()
    manager = server.session_manager
    give_each_session_its_own_events(manager, EventLog())
    first, second = manager._admit_session(None), manager._admit_session(None)
    assert isinstance(first._event_store, SessionEvents) and isinstance(second._event_store, SessionEvents)
    assert first._event_store is not second._event_store


async def test_the_log_holds_about_the_bytes_it_counts() -> None:
    """It counted each message's JSON but kept the parsed message: 6–7 times as much memory (a session
    repeating tools/list took the server to ~740 MiB under its 128 MiB bound)."""
    log = EventLog(max_events=1_000, max_bytes=1 << 30)
    view = log.session()
    tools = [{"name": f"tool_{i}", "description": "d" * 200, "inputSchema": {"type": "object"}} for i in range(60)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(200):
            fresh = json.loads(json.dumps(tools))  # each answer its own objects, as the server's are
            await view.store_event(str(n), JSONRPCResponse(jsonrpc="2.0", id=n, result={"tools": fresh}))
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert log.stored_bytes > 200 * 15_000
    assert held < 1.5 * log.stored_bytes, (held, log.stored_bytes)


async def test_a_session_that_ends_takes_its_events_with_it() -> None:
    server = toy_server()
    server.streamable_http_app()
    manager = server.session_manager
    log = EventLog()
    give_each_session_its_own_events(manager, log)
    ending, staying = manager._admit_session(None), manager._admit_session(None)
    for transport in (ending, staying):
        await transport._event_store.store_event("1", message(1))
    await ending.terminate()
    assert len(log) == 1 and ending.is_terminated


# ---------------------------------------------------------------- request size (item 2)


async def test_an_oversize_request_says_how_to_write_more() -> None:
    async def ok(_: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = RequestSizeLimit(Starlette(routes=[Route("/mcp", ok, methods=["POST"])]), max_bytes=1000)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
        assert (await http.post("/mcp", content=b"x" * 1000)).text == "ok"
        refused = await http.post("/mcp", content=b"x" * 1001)
    assert refused.status_code == 413
    error = refused.json()["error"]
    assert "append=true" in error["message"] and error["data"]["errorCode"] == "PAYLOAD_TOO_LARGE"
    assert "send less per call" in error["message"]  # not only files: any tool's arguments
