"""The MCP server in-process (the SDK's own Client), over a FakeBackend: every tool from tools/list to
the agent and back — names, schemas, summaries, errors — with no Docker."""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from mcp import Client

from host.mcp.auth import TOKEN_HINT, TokenStore
from host.mcp.caller import CallerResolver
from host.mcp.forward import tool_name
from host.mcp.hosts import transport_security
from host.mcp.server import TOOLSETS, build_server, http_app, http_caller, serve_http, tool_specs
from host.sandboxes.models import Caller
from host.services import Services
from host.testing.fake_backend import FakeBackend
from rpc import methods
from rpc.errors import unauthorized
from tests.integration.mcp_helpers import Session

# task.* are not tools of their own: the host's RunManager drives them behind the template-run tools.
# The host calls these itself; no tool forwards them. scrape.page is the `scrape` tool's, which may make a
# sandbox of its own first (host.mcp.tools.scrape). Nor are the profile methods tools (their results hold
# cookie values).
HOST_ONLY = (
    methods.SANDBOX_INFO,
    methods.SANDBOX_CLAIM,
    methods.SANDBOX_ACTIVITY,
    methods.SANDBOX_EXTEND,
    methods.SCRAPE_PAGE,
)
FORWARDED = [m for m in methods.ALL if m not in HOST_ONLY and m not in methods.TASKS and m not in methods.PROFILES]
# Login profile and live view tools of the host's own, and the arguments a forwarded tool adds.
PROFILE_TOOLS = {"browser_live_view", "profile_list", "profile_delete"}
EXTRA_ARGS = {"browser_sessions": {"profileId"}}


LOCAL = CallerResolver("stdio")
SANDBOX_TOOLS = {
    "sandbox_create",
    "sandbox_destroy",
    "sandbox_list",
    "sandbox_pause",
    "sandbox_resume",
    "sandbox_keepalive",
}
TEMPLATE_TOOLS = {
    "list_task_templates",
    "run_task_template",
    "get_task_run",
    "list_task_runs",
    "cancel_task_run",
    "get_artifact",
    "get_runtime_profile",
}


@asynccontextmanager
async def serving(services: Services, resolver: Callable[[Any], Caller] = LOCAL) -> AsyncIterator[Session]:
    """The server running over `services`, and an MCP client session to it."""
    async with services.running(), Client(build_server(services, resolver)) as client:
        yield Session(client)


async def test_tool_names_and_schemas_derive_from_the_methods(services: Services) -> None:
    async with serving(services) as mcp:
        tools = {t.name: t for t in (await mcp.client.list_tools()).tools}
    assert set(tools) == SANDBOX_TOOLS | PROFILE_TOOLS | {tool_name(m) for m in FORWARDED} | TEMPLATE_TOOLS | {"scrape"}
    assert len(FORWARDED) == 28
    for method in FORWARDED:
        tool = tools[tool_name(method)]
        params = method.params.model_json_schema()
        extra = EXTRA_ARGS.get(tool.name, set())
        assert set(tool.input_schema["properties"]) == set(params.get("properties", {})) | {"sandboxId"} | extra
        assert "sandboxId" not in tool.input_schema.get("required", [])
        assert tool.output_schema and tool.output_schema["type"] == "object"
    shot = tools["browser_screenshot"].output_schema["properties"]
    assert "data" not in shot and {"width", "height", "sizeBytes", "truncated"} <= set(shot)


async def test_code_files_and_processes_end_to_end(services: Services, fake: FakeBackend) -> None:
    async with serving(services) as mcp:
        await _code_files_and_processes(mcp, fake)


async def _code_files_and_processes(mcp: Session, fake: FakeBackend) -> None:
    created = await mcp.ok("sandbox_create", {"name": "unit"})
    sid = created["sandboxId"]
    assert created["status"] == "running" and created["isDefault"] is True and fake.container(sid)

    run = await mcp.call("code_run", {"language": "python", "code": "print(6 * 7)"})
    assert run.data["stdout"] == "42\n" and run.summary.startswith("code_run ok: exit 0 in ")

    written = await mcp.ok("file_write", {"path": "notes/a.txt", "content": "hé"})
    assert written == {"path": "notes/a.txt", "size": 3, "created": True}
    read = await mcp.call("file_read", {"path": "notes/a.txt"})
    assert read.data["content"] == "hé" and read.summary == "file_read ok: notes/a.txt (3 bytes, utf-8)"
    listed = await mcp.ok("file_list", {"path": "notes"})
    assert [e["name"] for e in listed["entries"]] == ["a.txt"]
    deleted = await mcp.call("file_delete", {"path": "notes/a.txt"})
    assert deleted.summary == "file_delete ok: deleted file notes/a.txt"
    assert (await mcp.ok("file_list", {"path": "notes"}))["entries"] == []

    started = await mcp.ok("code_run", {"language": "bash", "code": "echo up; sleep 60", "background": True})
    pid = started["processId"]
    out = await mcp.ok("process_output", {"processId": pid, "waitMs": 3000})
    assert out["output"] == "up\n"
    assert [p["processId"] for p in (await mcp.ok("process_list"))["processes"]] == [pid]
    killed = await mcp.call("process_kill", {"processId": pid, "signal": "KILL"})
    assert killed.data["running"] is False and killed.summary == f"process_kill ok: {pid} stopped"

    listing = await mcp.ok("sandbox_list")
    assert listing["defaultSandboxId"] == sid and [v["sandboxId"] for v in listing["sandboxes"]] == [sid]
    await mcp.ok("sandbox_destroy", {"sandboxId": sid})
    assert (await mcp.error("code_run", {"language": "bash", "code": "true"})).code == "NO_DEFAULT_SANDBOX"
    assert fake.list_sandboxes("unit") == []


async def test_errors_of_the_agent_and_of_the_arguments(services: Services) -> None:
    async with serving(services) as mcp:
        await _errors(mcp)


async def _errors(mcp: Session) -> None:
    bad = await mcp.error("code_run", {"language": "ruby", "code": "puts 1"})
    assert bad.code == "INVALID_PARAMETER" and [e["field"] for e in bad.data["details"]["errors"]] == ["language"]
    await mcp.ok("sandbox_create")
    outside = await mcp.error("file_read", {"path": "../../etc/passwd"})
    assert outside.code == "PATH_OUTSIDE_WORKSPACE" and outside.data["details"]["sandboxId"]
    missing = await mcp.error("process_kill", {"processId": "proc_nope"})
    assert missing.code == "PROCESS_NOT_FOUND"


async def test_evaluate_is_refused_to_remote_callers(services: Services) -> None:
    def remote(_ctx: object) -> Caller:
        return Caller(owner="bob", session="s", trust="remote")

    async with serving(services, remote) as mcp:
        refused = await mcp.error("browser_evaluate", {"expression": "1 + 1"})
    assert refused.code == "TRUST_LEVEL_NOT_ALLOWED"


@pytest.mark.chromium
async def test_browser_tools_reach_a_real_chromium(services: Services) -> None:
    async with serving(services) as mcp:
        await _browse(mcp)


async def _browse(mcp: Session) -> None:
    await mcp.ok("sandbox_create")
    page = "data:text/html,<title>Hi</title><button>Press me</button>"
    goto = await mcp.call("browser_goto", {"url": page})
    assert goto.summary == f"browser_goto ok: {page} (Hi)"
    snap = await mcp.ok("browser_snapshot")
    assert snap["elements"] == '[ref_1] button "Press me"'
    clicked = await mcp.call("browser_click", {"selector": "ref_1"})
    assert clicked.summary.startswith("browser_click ok: clicked ref_1 on ")
    shot = await mcp.client.call_tool("browser_screenshot", {})
    assert not shot.is_error and "data" not in shot.structured_content
    png = next(block for block in shot.content if block.type == "image")
    assert base64.b64decode(png.data)[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(shot.content[0].text.split("\n", 1)[1]) == shot.structured_content


async def test_toolsets_choose_tool_groups(services: Services) -> None:
    names = {spec.name for spec in tool_specs(services, ["code"])}
    assert names == SANDBOX_TOOLS | {"code_run"} | {
        "process_list",
        "process_output",
        "process_kill",
    }
    assert len(tool_specs(services)) == 45
    assert set(TOOLSETS) == {"sandbox", "code", "files", "browser", "templates", "scrape"}
    assert {spec.name for spec in tool_specs(services, ["templates"])} - names == TEMPLATE_TOOLS - names
    with pytest.raises(ValueError, match="unknown toolset"):
        tool_specs(services, ["nope"])


async def test_http_app_refuses_unknown_tokens_with_the_uniform_body(services: Services, tmp_path) -> None:
    path = tmp_path / "tokens.json"
    token = TokenStore.add(path, "alice")
    app, _ = http_app(services, host="127.0.0.1", port=8765, tokens=TokenStore.load(path))  # not started: 401s only
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765") as http:
        assert (await http.get("/healthz")).json()["status"] == "ok"
        denied = await http.post("/mcp", json={}, headers={"Authorization": "Bearer nope"})
        assert denied.status_code == 401 and denied.headers["www-authenticate"] == "Bearer"
        assert denied.json() == unauthorized("Bearer nope", hint=TOKEN_HINT).to_body().model_dump(mode="json")
        assert (await http.post("/mcp", json={})).json()["error"] == "missing bearer token"
    assert token


async def test_no_tokens_no_serving_beyond_loopback(host_settings, fake: FakeBackend) -> None:
    with pytest.raises(SystemExit, match="without authentication"):
        await serve_http(Services(host_settings, backend=fake), host="0.0.0.0", port=1, tokens=TokenStore({}))


def test_http_callers_are_remote_unless_configured(host_settings, fake: FakeBackend) -> None:
    assert http_caller(Services(host_settings, backend=fake)).http_trust == "remote"
    local = host_settings.replace(http_trust_level="local")
    assert http_caller(Services(local, backend=fake)).http_trust == "local"


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


@pytest.mark.parametrize(
    ("bind", "good", "bad"),
    [
        ("0.0.0.0", [f"{socket.gethostname()}:8765", "127.0.0.1:8765"], ["0.0.0.0:8765", "evil.example:8765"]),
        (
            "127.0.0.2",
            ["127.0.0.2:8765", "localhost:9999", "localhost", "LocalHost:9999"],
            ["evil.example:8765", "127.0.0.3:8765", "EVIL.example"],
        ),
    ],
)
async def test_host_headers_are_checked_on_every_bind(
    services: Services, tmp_path, bind: str, good: list[str], bad: list[str]
) -> None:
    """A server on 0.0.0.0 accepts this machine's names (not only the literal 0.0.0.0); one on 127.0.0.2 is
    protected like one on 127.0.0.1 (the SDK leaves it open). Names compare as DNS compares them, without
    regard to case (the SDK compares exactly: LOCALHOST was refused with 421)."""
    path = tmp_path / "tokens.json"
    auth = {"Authorization": f"Bearer {TokenStore.add(path, 'alice')}", "Accept": "application/json, text/event-stream"}
    app, server = http_app(services, host=bind, port=8765, tokens=TokenStore.load(path))
    async with (
        server.session_manager.run(),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x") as http,
    ):
        for host in good:
            assert (await http.post("/mcp", json=INIT, headers={**auth, "Host": host})).status_code == 200, host
        for host in bad:
            assert (await http.post("/mcp", json=INIT, headers={**auth, "Host": host})).status_code == 421, host
        evil = {**auth, "Host": good[0], "Origin": "http://evil.example"}
        assert (await http.post("/mcp", json=INIT, headers=evil)).status_code == 403
        shouting = {**auth, "Host": good[0].upper(), "Origin": f"HTTP://{good[0].upper()}"}
        assert (await http.post("/mcp", json=INIT, headers=shouting)).status_code == 200


def test_allowed_hosts_are_the_operators_when_given(host_settings) -> None:
    security = transport_security("0.0.0.0", ["MCP.example.org", "10.0.0.5:*"])
    assert security.allowed_hosts == ["mcp.example.org", "10.0.0.5:*"]
    assert "https://mcp.example.org" in security.allowed_origins and security.enable_dns_rebinding_protection
    for hosts in ([], ["http://mcp.example.org/"], ["a b"]):
        with pytest.raises(ValueError):
            transport_security("0.0.0.0", hosts)
    settings = host_settings.replace(allowed_hosts="a.example, b.example:8000")
    assert settings.allowed_hosts == ["a.example", "b.example:8000"]
