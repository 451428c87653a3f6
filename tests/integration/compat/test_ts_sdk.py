"""The TypeScript SDK (v1 — what most desktop and IDE hosts embed — and v2) against a real server:
one scripted session per client and transport, one sandbox, every tool family's success and error,
plus what broke these clients before (issue 8 items 1, 2, 3, 5)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from rpc.agent import AGENT_PORT
from rpc.models.files import MAX_READ_BYTES, MAX_WRITE_BYTES
from tests.integration.compat.conftest import Recording, run_ts_client
from tests.integration.compat.npm_clients import NpmClients
from tests.integration.conftest import HttpServer
from tests.integration.mcp_helpers import BOXWRIGHT

TS_STDIO_LIMIT = 10 * 1024 * 1024  # TypeScript clients drop a stdio connection on a bigger message
ODD_NAME = b"odd/caf\xe9.txt"  # not UTF-8, as unzipped archives often leave them
ODD_B64 = base64.b64encode(ODD_NAME).decode()
PAGE = "data:text/html,<title>Compat</title><button>Go</button>"


def call(name: str, args: dict[str, Any] | None = None, timeout_ms: int = 60_000) -> dict[str, Any]:
    return {"op": "call", "name": name, "args": args or {}, "timeoutMs": timeout_ms}


PLAN: list[tuple[str, dict[str, Any]]] = [
    ("capabilities", {"op": "capabilities"}),
    ("tools", {"op": "tools"}),
    ("prompt", {"op": "prompt", "name": "no-such-prompt"}),
    ("resource", {"op": "resource", "uri": "boxwright://no-such-resource"}),
    # One error and one success per tool family; the errors come first where they need no sandbox.
    ("sandbox.error", call("sandbox_destroy", {"sandboxId": "sbx_000000000000"})),
    ("sandbox.ok", call("sandbox_create")),
    ("code.ok", call("code_run", {"language": "python", "code": "print(6 * 7)"})),
    ("code.error", call("process_kill", {"processId": "p_nope"})),
    ("files.ok", call("file_write", {"path": "hello.txt", "content": "hi"})),
    ("files.error", call("file_read", {"path": "missing.txt"})),
    ("browser.ok", call("browser_goto", {"url": PAGE})),
    ("browser.error", call("browser_click", {"selector": "ref_999", "timeoutMs": 1000})),
    # scrape in a throw-away sandbox of its own: what it can load there is its own agent's health page (with an
    # action, so the client checks a result that lists one against the tool's output schema).
    (
        "scrape.ok",
        call("scrape", {"url": f"http://127.0.0.1:{AGENT_PORT}/healthz", "actions": [{"type": "press", "key": "End"}]}),
    ),
    ("scrape.error", call("scrape", {"url": "https://example.org/", "profileId": "../etc"})),
    # The largest read the tool advertises must not end the session (stdio caps messages at 10 MiB).
    (
        "big.make",
        call(
            "code_run",
            {
                "language": "python",
                "code": f"import os\nopen('big.bin','wb').write(os.urandom({2 * MAX_READ_BYTES}))\n"
                f"open('ctrl.txt','wb').write(b'\\x01' * {MAX_READ_BYTES})",
            },
        ),
    ),
    ("big.read", call("file_read", {"path": "big.bin", "encoding": "base64", "limit": MAX_READ_BYTES})),
    ("big.escaped", call("file_read", {"path": "ctrl.txt", "limit": MAX_READ_BYTES})),
    # The largest write the tool advertises must arrive (HTTP caps request bodies).
    (
        "big.write",
        call(
            "file_write",
            {
                "path": "written.bin",
                "encoding": "base64",
                "content": base64.b64encode(b"\xff" * MAX_WRITE_BYTES).decode(),
            },
        ),
    ),
    # A file name that is not UTF-8: listed as valid JSON, readable and deletable by its raw bytes.
    (
        "odd.make",
        call(
            "code_run",
            {"language": "python", "code": f"import os\nos.mkdir('odd')\nopen({ODD_NAME!r}, 'wb').write(b'bonjour')"},
        ),
    ),
    ("odd.list", call("file_list", {"path": "odd"})),
    ("odd.read", call("file_read", {"path": ODD_B64, "pathEncoding": "base64"})),
    ("odd.delete", call("file_delete", {"path": ODD_B64, "pathEncoding": "base64"})),
    ("odd.gone", call("file_list", {"path": "odd"})),
    ("alive", call("sandbox_list")),
    ("destroy", call("sandbox_destroy")),
]


def message_bytes(step_result: dict[str, Any]) -> int:
    return len(json.dumps(step_result, ensure_ascii=False).encode())


@pytest.fixture(scope="module")
def v1_stdio(npm_clients: NpmClients, server_env: dict[str, str]) -> Recording:
    return run_ts_client(npm_clients, "v1", ["--stdio", BOXWRIGHT, "serve"], PLAN, server_env)


@pytest.fixture(scope="module")
def v1_http(npm_clients: NpmClients, http_server: HttpServer, tokens: dict[str, str]) -> Recording:
    target = ["--http", http_server.url, "--header", f"Authorization: Bearer {tokens['alice']}"]
    return run_ts_client(npm_clients, "v1", target, PLAN, {})


@pytest.fixture(scope="module")
def v2_http(npm_clients: NpmClients, http_server: HttpServer, tokens: dict[str, str]) -> Recording:
    target = ["--http", http_server.url, "--header", f"Authorization: Bearer {tokens['alice']}"]
    return run_ts_client(npm_clients, "v2", target, PLAN, {})


SESSIONS = ["v1_stdio", "v1_http", "v2_http"]


@pytest.fixture(params=SESSIONS)
def rec(request: pytest.FixtureRequest) -> Recording:
    return request.getfixturevalue(request.param)


def test_every_tool_has_an_output_schema(rec: Recording) -> None:
    tools = rec["tools"].result["tools"]
    assert {"sandbox_create", "code_run", "file_read", "browser_goto"} <= {t["name"] for t in tools}
    assert all(t.get("outputSchema", {}).get("type") == "object" for t in tools)


@pytest.mark.parametrize("family", ["sandbox", "code", "files", "browser", "scrape"])
def test_success_validates_against_the_output_schema(rec: Recording, family: str) -> None:
    ok = rec[f"{family}.ok"]
    assert ok.ok, ok.error  # v1 throws here when structuredContent does not match the outputSchema
    assert not ok.is_error and ok.data, ok.text
    summary, body = ok.text.split("\n", 1)
    assert " ok" in summary and json.loads(body) == ok.data


def test_scrape_actions_pass_both_ways(rec: Recording) -> None:
    """The action (a discriminated union in the input schema) arrived; its outcome passed the output schema."""
    [done] = rec["scrape.ok"].data["actions"]
    assert done["type"] == "press" and done["times"] == 1 and done["navigated"] is False


@pytest.mark.parametrize(
    ("family", "codes"),
    [
        ("sandbox", {"SANDBOX_NOT_FOUND"}),
        ("code", {"PROCESS_NOT_FOUND"}),
        ("files", {"FILE_NOT_FOUND"}),
        ("browser", {"ELEMENT_NOT_FOUND", "STALE_REF"}),
        ("scrape", {"INVALID_PARAMETER"}),
    ],
)
def test_error_reaches_the_client_with_code_and_hint(rec: Recording, family: str, codes: set[str]) -> None:
    """Item 1: v1 validated an error's structuredContent against the success schema and threw."""
    err = rec[f"{family}.error"]
    assert err.ok, f"the client could not read the error result: {err.error}"
    assert err.is_error
    lines = err.text.split("\n")
    assert " failed: " in lines[0] and lines[1].startswith("hint: ")
    body = err.body
    assert set(body) == {"error", "errorCode", "recoverHint", "details"}
    assert body["errorCode"] in codes and body["recoverHint"]


def test_capabilities_advertise_only_what_exists(rec: Recording) -> None:
    """Item 3: prompts and resources were advertised with nothing behind them. Since template runs
    (issue 9), resources have content: run artifacts (boxwright://artifacts/{artifactId})."""
    caps = rec["capabilities"].result
    assert "tools" in caps
    assert "prompts" not in caps
    assert "resources" in caps


def test_unknown_prompt_and_resource_get_jsonrpc_codes(rec: Recording) -> None:
    """Item 3: prompts/get answered code 0 (with a traceback in the server log)."""
    prompt, resource = rec["prompt"], rec["resource"]
    assert not prompt.ok and prompt.error["code"] == -32601, prompt.error  # method not found: no prompts
    expected = (-32602, -32002) if "resources" in rec["capabilities"].result else (-32601,)
    assert not resource.ok and resource.error["code"] in expected, resource.error
    assert "Traceback" not in rec.stderr


def test_largest_read_fits_one_message_and_the_session_survives(rec: Recording) -> None:
    """Item 2: a file_read at its advertised limit was a 10.7–13.3 MiB message; TS clients dropped the
    stdio connection and the server's shutdown then destroyed the sandbox."""
    assert rec["big.make"].ok and not rec["big.make"].is_error, rec["big.make"].text
    read = rec["big.read"]
    assert read.ok and not read.is_error, read.error or read.text[:300]
    assert read.data["length"] == MAX_READ_BYTES and not read.data["eof"]
    assert message_bytes(read.result) < TS_STDIO_LIMIT * 0.7
    # Text that JSON escapes sixfold: either it fits or it is a clear error — never a dead session.
    escaped = rec["big.escaped"]
    assert escaped.ok, escaped.error
    assert message_bytes(escaped.result) < TS_STDIO_LIMIT * 0.7
    if escaped.is_error:
        assert escaped.body["errorCode"] == "PAYLOAD_TOO_LARGE" and "limit" in escaped.body["recoverHint"]
    alive = rec["alive"]
    assert alive.ok and not alive.is_error and len(alive.data["sandboxes"]) == 1, alive.error or alive.text
    assert not rec.closed


def test_largest_write_arrives(rec: Recording) -> None:
    """Item 2: file_write advertised 16 MiB, but HTTP refused request bodies over ~4 MiB."""
    write = rec["big.write"]
    assert write.ok, write.error
    assert not write.is_error and write.data["size"] == MAX_WRITE_BYTES, write.text[:500]


def test_non_utf8_names_are_listed_read_and_deleted(rec: Recording) -> None:
    """Item 5: a non-UTF-8 name put a lone surrogate on the wire; the client rejected the JSON."""
    listing = rec["odd.list"]
    assert listing.ok and not listing.is_error, listing.error or listing.text
    (entry,) = listing.data["entries"]
    assert entry["pathBase64"] == ODD_B64
    assert entry["name"] == "caf\\xe9.txt" and entry["path"] == "odd/caf\\xe9.txt"
    read = rec["odd.read"]
    assert read.ok and not read.is_error and read.data["content"] == "bonjour", read.error or read.text
    assert read.data["pathBase64"] == ODD_B64
    delete = rec["odd.delete"]
    assert delete.ok and not delete.is_error, delete.error or delete.text
    assert rec["odd.gone"].data["entries"] == []


def test_session_ends_cleanly(rec: Recording) -> None:
    assert rec["destroy"].ok and not rec["destroy"].is_error, rec["destroy"].text
    assert not rec.closed
