"""host.mcp.stdio: the thread-free stdio transport, against the SDK's own stdio client and raw pipes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[2]
SERVER = """
import anyio
from mcp.server.mcpserver import MCPServer
from host.mcp import stdio

server = MCPServer("t")

@server.tool()
def echo(text: str) -> str:
    \"\"\"Echoes; prints to stdout on the way, which must not reach the wire.\"\"\"
    print("stray output")
    return text * 2

anyio.run(stdio.serve, server)
"""
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def line(obj: object) -> bytes:
    return json.dumps(obj).encode() + b"\n"


async def test_the_sdk_client_calls_tools_through_it() -> None:
    params = StdioServerParameters(command=sys.executable, args=["-c", SERVER], cwd=str(ROOT))
    with anyio.fail_after(30):
        async with Client(stdio_client(params), cache=None) as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["echo"]
            for i in range(3):
                result = await client.call_tool("echo", {"text": f"ab{i}"})
                assert not result.is_error and result.structured_content == {"result": f"ab{i}ab{i}"}
            big = "é" * 300_000  # ~600 KB of UTF-8 each way: more than one pipe buffer
            assert (await client.call_tool("echo", {"text": big})).structured_content == {"result": big * 2}


def _run(stdin: Path) -> list[dict[str, Any]]:
    """Run the server on a regular file as stdin; its answers."""
    with stdin.open("rb") as source:
        done = subprocess.run([sys.executable, "-c", SERVER], stdin=source, capture_output=True, cwd=ROOT, timeout=30)
    return [json.loads(raw) for raw in done.stdout.splitlines()]


def test_bad_lines_are_answered_or_skipped_and_the_session_goes_on() -> None:
    def call(rid: int, text: str) -> bytes:
        args = {"name": "echo", "arguments": {"text": text}}
        return line({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": args})

    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    answers: dict[Any, dict[str, Any]] = {}

    def send(data: bytes, *, until: int) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(data)
        proc.stdin.flush()
        while until not in answers:
            got = json.loads(proc.stdout.readline())
            answers[got.get("id")] = got

    try:
        send(line(INIT) + line({"jsonrpc": "2.0", "method": "notifications/initialized"}), until=1)
        send(b"this is not json\n\n" + call(2, "x"), until=2)
        send(call(3, "y").replace(b'"y"', b'"\xff"'), until=3)  # not UTF-8: replaced, as the SDK does
        proc.stdin.write(call(4, "z")[:-1])  # the last line without its newline, then EOF: still served
        proc.stdin.close()
        for raw in proc.stdout.read().splitlines():
            got = json.loads(raw)
            answers[got.get("id")] = got
        stderr = proc.stderr.read().decode()
    finally:
        proc.kill()
        proc.wait(10)
    assert answers[1]["result"]["serverInfo"]["name"] == "t"
    assert answers[2]["result"]["structuredContent"] == {"result": "xx"}
    assert answers[3]["result"]["structuredContent"] == {"result": "\ufffd\ufffd"}
    assert "stray output" in stderr  # a print goes to stderr, never onto the wire
    # The unparsable line was answered as a parse error (no id) or skipped; either way the session went on.
    assert all(a.get("id") in (None, 1, 2, 3, 4) for a in answers.values())


def test_a_request_that_does_not_parse_is_answered_with_its_id_and_the_session_goes_on() -> None:
    """The SDK's session answers an unreadable line with nothing, so its client would wait for ever; what a
    lenient parse can read the id of is answered with that id, the rest with a parse error without one."""
    init = line(INIT) + line({"jsonrpc": "2.0", "method": "notifications/initialized"})
    half_emoji = (
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"\\ud83d"}}}'
    )
    bad_params = line({"jsonrpc": "2.0", "id": "three", "method": "tools/call", "params": []})
    huge_number = b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"n":' + b"9" * 5000 + b"}}"
    deep = b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"a":' + b"[" * 300 + b"]" * 300 + b"}}"
    not_an_object = b"[" * 300 + b"]" * 300
    notification = b'{"jsonrpc":"2.0","method":"notifications/x","params":{"t":"\\ud83d"}}'
    # An id past Python's digit limit was answered as id 0 (another request's, see request 0 below); ids
    # that are neither string nor integer went unanswered (the SDK took them for notifications).
    huge_id = b'{"jsonrpc":"2.0","id":' + b"7" * 5000 + b',"method":"ping"}'
    bad_ids = [line({"jsonrpc": "2.0", "id": bad, "method": "ping"}).strip() for bad in (None, 1.5, True, {"a": 1})]
    zero = line({"jsonrpc": "2.0", "id": 0, "method": "ping"})
    good = line(
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "ok"}}}
    )
    stdin = (
        init
        + b"\n".join([half_emoji, bad_params.strip(), huge_number, deep, not_an_object, notification, huge_id])
        + b"\n"
        + b"\n".join(bad_ids)
        + b"\n"
        + zero
        + good
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    assert proc.stdin is not None and proc.stdout is not None
    answers: list[dict[str, Any]] = []
    try:
        proc.stdin.write(stdin)
        proc.stdin.flush()
        while not answers or answers[-1].get("id") != 5:  # the good call is answered last (or the test times out)
            answers.append(json.loads(proc.stdout.readline()))
    finally:
        proc.kill()
        proc.wait(10)
    by_id = {a.get("id"): a for a in answers}
    assert by_id[2]["error"]["code"] == -32700 and "without its pair" in by_id[2]["error"]["message"]
    assert by_id["three"]["error"]["code"] == -32600
    assert by_id[4]["error"]["code"] == -32700
    assert by_id[6]["error"]["code"] == -32700  # nested deeper than the strict parser goes
    no_id = [a["error"] for a in answers if a.get("id") is None]
    assert [e["code"] for e in no_id] == [-32600, -32700, -32600, -32600, -32600, -32600]  # not an object, huge id, …
    assert [e["message"].rsplit(" ", 1)[-1] for e in no_id[2:]] == ["null", "float", "bool", "dict"]
    assert by_id[0] == {"jsonrpc": "2.0", "id": 0, "result": {}}  # the only answer with id 0
    assert by_id[5]["result"]["structuredContent"] == {"result": "okok"}
    # initialize, five of the six bad lines (not the notification), the huge id, four bad ids, 0 and the good call
    assert len(answers) == 13


def test_a_regular_file_on_stdin_falls_back_to_the_sdks_transport(tmp_path: Path) -> None:
    requests = tmp_path / "in.jsonl"
    requests.write_bytes(line(INIT))
    answers = _run(requests)
    assert answers[0]["id"] == 1 and answers[0]["result"]["serverInfo"]["name"] == "t"


async def test_an_sdk_without_the_lowlevel_server_gets_its_own_transport() -> None:
    from host.mcp import stdio

    served: list[str] = []

    class OtherSdkServer:  # what a renamed attribute would look like from here
        async def run_stdio_async(self) -> None:
            served.append("sdk")

    await stdio.serve(OtherSdkServer())  # type: ignore[arg-type]
    assert served == ["sdk"]
