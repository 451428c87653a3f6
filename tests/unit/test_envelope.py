"""The one JSON-RPC codec: what a client encodes, the dispatcher decodes, and back."""

from __future__ import annotations

import json
import logging

import pytest
from aiohttp import web

from host import agent_client
from host.agent_client import read_answer
from rpc.deadline import DEADLINE_FIELD, Deadline
from rpc.envelope import MalformedResult, UnreadableResponse, decode_response, encode_error, encode_request
from rpc.errors import BoxwrightError, ErrorCode
from rpc.methods import FILE_READ, SCRAPE_PAGE
from rpc.models.base import Params
from rpc.models.files import FileReadParams, FileReadResult
from rpc.models.scrape import ScrapePageParams
from sandbox_image.code import channel
from sandbox_image.dispatcher import Dispatcher


async def test_a_request_round_trips_through_the_dispatcher() -> None:
    seen: list[tuple[FileReadParams, float]] = []

    async def read(params: FileReadParams, deadline: Deadline) -> FileReadResult:
        seen.append((params, deadline.remaining()))
        return FileReadResult(path=params.path, content="hi", encoding="utf-8", size=2, offset=0, length=2, eof=True)

    dispatcher = Dispatcher("test")
    dispatcher.register(FILE_READ, read)
    body = encode_request(FILE_READ, FileReadParams(path="a.txt"), deadline_ms=5000, request_id=7)
    sent = json.loads(body)
    assert sent["method"] == "file.read" and sent["params"]["path"] == "a.txt"
    assert sent["params"][DEADLINE_FIELD] == 5000
    answer = await dispatcher.dispatch_bytes(body)
    assert answer["id"] == 7
    result = decode_response(FILE_READ, json.dumps(answer).encode())
    assert result.content == "hi" and seen[0][0].path == "a.txt" and 4 < seen[0][1] <= 5


def test_defaults_are_not_sent_so_an_older_agent_still_understands() -> None:
    """An agent of an older image knows fewer fields (its models forbid unknown ones): a call that leaves the
    newer ones at their defaults must not send them."""

    class OlderScrapeParams(Params):  # scrape.page's arguments as an agent of a few versions ago knew them
        url: str
        format: str = "markdown"
        onlyMainContent: bool = True
        waitFor: int = 0
        timeoutMs: int = 30_000

    today = ScrapePageParams(url="https://example.org/", maxChars=None, mobile=False, skipTlsVerification=False)
    sent = json.loads(encode_request(SCRAPE_PAGE, today, deadline_ms=1000, request_id=1))["params"]
    del sent[DEADLINE_FIELD]
    assert sent == {"url": "https://example.org/"}
    assert OlderScrapeParams.model_validate(sent).url == "https://example.org/"
    used = ScrapePageParams(
        url="https://example.org/", format="links", mobile=True, httpAuth={"username": "a", "password": "p"}
    )
    sent = json.loads(encode_request(SCRAPE_PAGE, used, deadline_ms=1000, request_id=2))["params"]
    assert sent["format"] == "links" and sent["mobile"] is True and sent["httpAuth"]["origin"] == "https://example.org"
    assert ScrapePageParams.model_validate({k: v for k, v in sent.items() if k != DEADLINE_FIELD}) == used


async def test_the_dispatcher_logs_successes_at_debug_and_failures_at_info(caplog: pytest.LogCaptureFixture) -> None:
    async def read(params: FileReadParams, _deadline: Deadline) -> FileReadResult:
        if params.path == "bad":
            raise BoxwrightError(ErrorCode.FILE_NOT_FOUND, "no such file")
        return FileReadResult(path=params.path, content="", encoding="utf-8", size=0, offset=0, length=0, eof=True)

    dispatcher = Dispatcher("test")
    dispatcher.register(FILE_READ, read)

    def body(path: str) -> bytes:
        return encode_request(FILE_READ, FileReadParams(path=path), deadline_ms=5000, request_id=1)

    name = "boxwright.test.rpc"
    with caplog.at_level(logging.INFO, logger=name):
        await dispatcher.dispatch_bytes(body("good"))
        await dispatcher.dispatch_bytes(body("bad"))
        await dispatcher.dispatch_bytes(b"not json")
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == name]
    assert [level for level, _ in lines] == [logging.INFO, logging.INFO]
    assert "outcome=FILE_NOT_FOUND" in lines[0][1] and "method=-" in lines[1][1]
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger=name):
        await dispatcher.dispatch_bytes(body("good"))
    assert next(r.getMessage() for r in caplog.records if r.name == name).startswith("method=file.read id=1 outcome=ok")


def test_the_peers_error_is_raised_as_itself() -> None:
    error = BoxwrightError(ErrorCode.FILE_NOT_FOUND, "no a.txt", details={"path": "a.txt"})
    with pytest.raises(BoxwrightError) as info:
        decode_response(FILE_READ, json.dumps(encode_error(error, 3)).encode())
    assert info.value.code is ErrorCode.FILE_NOT_FOUND and info.value.details == {"path": "a.txt"}


@pytest.mark.parametrize("body", [b"", b"<html>", b"[]", b'{"jsonrpc": "1.0"}'])
def test_anything_else_is_unreadable(body: bytes) -> None:
    with pytest.raises(UnreadableResponse):
        decode_response(FILE_READ, body)


@pytest.mark.parametrize(
    ("status", "code"),
    [(401, ErrorCode.UNAUTHORIZED), (413, ErrorCode.PAYLOAD_TOO_LARGE), (502, ErrorCode.AGENT_UNREACHABLE)],
)
def test_the_agent_transport_names_unreadable_answers_by_status(status: int, code: ErrorCode) -> None:
    with pytest.raises(BoxwrightError) as info:
        read_answer(FILE_READ, status, b"<html>")
    assert info.value.code is code and info.value.details["httpStatus"] == status


def test_a_result_of_another_version_is_an_internal_error_naming_its_fields() -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"path": "a"}}).encode()
    with pytest.raises(MalformedResult):
        decode_response(FILE_READ, body)
    with pytest.raises(BoxwrightError) as info:
        read_answer(FILE_READ, 200, body)
    assert info.value.code is ErrorCode.INTERNAL_ERROR
    assert "content" in {e["field"] for e in info.value.details["errors"]}


async def test_the_agent_transport_reads_no_more_than_its_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """A misbehaving sandbox (or a page's data it passed on) could answer with any number of bytes, all of
    it read into the host's memory; past MAX_ANSWER_BYTES the answer is dropped unread."""
    monkeypatch.setattr(agent_client, "MAX_ANSWER_BYTES", 64 * 1024)
    ok = {"path": "a.txt", "content": "hi", "encoding": "utf-8", "size": 2, "offset": 0, "length": 2, "eof": True}
    big = {**ok, "content": "x" * 100_000}

    async def answer(request: web.Request) -> web.StreamResponse:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": big if "big" in request.path else ok}).encode()
        if "chunked" not in request.path:
            return web.Response(body=body, content_type="application/json")
        response = web.StreamResponse()  # no Content-Length: only what arrives can be counted
        response.enable_chunked_encoding()
        await response.prepare(request)
        for start in range(0, len(body), 8192):
            await response.write(body[start : start + 8192])
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/{kind}/rpc", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    client = agent_client.AgentClient()
    try:
        for kind in ("small", "small-chunked", "big", "big-chunked"):
            endpoint = agent_client.AgentEndpoint(f"http://127.0.0.1:{port}/{kind}", "token")
            call = client.call(endpoint, FILE_READ, FileReadParams(path="a.txt"), Deadline.after(5))
            if kind.startswith("small"):
                assert (await call).content == "hi", kind
                continue
            with pytest.raises(BoxwrightError) as info:
                await call
            assert info.value.code is ErrorCode.PAYLOAD_TOO_LARGE, kind
            assert info.value.details == {"method": "file.read", "maxAnswerBytes": 64 * 1024}
        # The client goes on working after a dropped answer.
        endpoint = agent_client.AgentEndpoint(f"http://127.0.0.1:{port}/small", "token")
        assert (await client.call(endpoint, FILE_READ, FileReadParams(path="a.txt"), Deadline.after(5))).eof
    finally:
        await client.aclose()
        await runner.cleanup()


def test_the_code_runner_reads_a_request_id_and_a_cancel_without_parsing_the_line() -> None:
    """The daemon maps each request to its task by the id at the start of the line encode_request makes, so
    that a `{"cancel": id}` the agent sends when its caller gives up stops that request."""
    body = encode_request(FILE_READ, FileReadParams(path="a.txt"), deadline_ms=5000, request_id=123456)
    assert channel.request_id_of(body) == 123456
    assert channel.request_id_of(b'{"id": 1}') is None
    assert channel.cancelled_id(channel.cancel_line(77)) == 77
    for other in (body, b'{"cancel": "x"}\n', b'{"cancel": [1]', b"garbage"):
        assert channel.cancelled_id(other) is None, other
