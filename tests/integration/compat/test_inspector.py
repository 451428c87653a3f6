"""The MCP Inspector CLI (one call per process) against a real server. Over HTTP the calls share
one sandbox of the suite's server; over stdio every call starts its own server, so there the
errors of each family (which need no sandbox) and one success are checked."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.compat.conftest import InspectorAnswer, inspector_stdio_target, run_inspector
from tests.integration.compat.npm_clients import NpmClients
from tests.integration.compat.test_ts_sdk import PAGE
from tests.integration.conftest import HttpServer


def tool(name: str, args: dict[str, Any] | None = None) -> list[str]:
    return ["--method", "tools/call", "--tool-name", name, "--tool-args-json", json.dumps(args or {})]


def assert_success(answer: InspectorAnswer, tool_name: str) -> dict[str, Any]:
    assert answer.returncode == 0, answer.out or answer.stderr[-2000:]
    assert answer.result.get("isError") is False, answer.text
    summary, body = answer.text.split("\n", 1)
    assert summary.startswith(f"{tool_name} ok")
    data = answer.result["structuredContent"]
    assert json.loads(body) == data
    return data


def assert_error(answer: InspectorAnswer, tool_name: str, codes: set[str]) -> None:
    """Item 1: the Inspector validated the error's structuredContent against the success schema and
    printed only the schema complaint, never errorCode or recoverHint."""
    assert "result" in answer.out, f"the Inspector could not read the error result: {answer.out}"
    assert answer.result.get("isError") is True
    lines = answer.text.split("\n")
    assert lines[0].startswith(f"{tool_name} failed: ") and lines[1].startswith("hint: ")
    body = json.loads(lines[-1])
    assert body["errorCode"] in codes and body["recoverHint"], body


class Inspector:
    """Inspector CLI calls against one target, asserting the shape of each answer."""

    def __init__(self, clients: NpmClients, target: list[str], env: dict[str, str]) -> None:
        self.clients, self.target, self.env = clients, target, env

    def run(self, *args: str) -> InspectorAnswer:
        return run_inspector(self.clients, self.target, *args, env=self.env)

    def ok(self, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        return assert_success(self.run(*tool(name, args)), name)

    def error(self, name: str, args: dict[str, Any], codes: set[str]) -> None:
        assert_error(self.run(*tool(name, args)), name, codes)


@pytest.fixture(scope="module")
def http_target(http_server: HttpServer, tokens: dict[str, str]) -> list[str]:
    return [http_server.url, "--transport", "http", "--header", f"Authorization: Bearer {tokens['alice']}"]


def test_inspector_over_http_every_family(npm_clients: NpmClients, http_target: list[str]) -> None:
    cli = Inspector(npm_clients, http_target, {})
    listing = cli.run("--method", "tools/list")
    assert listing.returncode == 0 and len(listing.result["tools"]) > 20, listing.out
    prompt = cli.run("--method", "prompts/get", "--prompt-name", "no-such-prompt")  # no prompts: -32601
    assert prompt.returncode != 0 and prompt.out["error"]["message"] == "Method not found", prompt.out

    cli.error("sandbox_destroy", {"sandboxId": "sbx_000000000000"}, {"SANDBOX_NOT_FOUND"})
    sid = cli.ok("sandbox_create")["sandboxId"]
    try:
        assert cli.ok("code_run", {"sandboxId": sid, "language": "bash", "code": "echo hi"})["stdout"] == "hi\n"
        cli.error("process_kill", {"sandboxId": sid, "processId": "p_nope"}, {"PROCESS_NOT_FOUND"})
        cli.ok("file_write", {"sandboxId": sid, "path": "a.txt", "content": "x"})
        cli.error("file_read", {"sandboxId": sid, "path": "missing.txt"}, {"FILE_NOT_FOUND"})
        assert cli.ok("browser_goto", {"sandboxId": sid, "url": PAGE})["title"] == "Compat"
        click = {"sandboxId": sid, "selector": "ref_999", "timeoutMs": 1000}
        cli.error("browser_click", click, {"ELEMENT_NOT_FOUND", "STALE_REF"})
    finally:
        cli.ok("sandbox_destroy", {"sandboxId": sid})


def test_inspector_over_stdio(npm_clients: NpmClients, server_env: dict[str, str]) -> None:
    cli = Inspector(npm_clients, inspector_stdio_target(server_env), server_env)
    cli.ok("sandbox_list")
    cli.error("sandbox_destroy", {"sandboxId": "sbx_000000000000"}, {"SANDBOX_NOT_FOUND"})
    cli.error("code_run", {"language": "bash", "code": "true"}, {"NO_DEFAULT_SANDBOX"})
    cli.error("file_read", {"path": "a.txt"}, {"NO_DEFAULT_SANDBOX"})
    cli.error("browser_goto", {"url": PAGE}, {"NO_DEFAULT_SANDBOX"})
