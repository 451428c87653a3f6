"""Issue #2 acceptance, through the official MCP client over stdio AND streamable HTTP:
create → write → read the same bytes (text and binary) → code reads the file → list → destroy,
and the container and its workspace volume are gone."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import docker
import pytest

from host import labels
from tests.integration.conftest import HttpServer
from tests.integration.mcp_helpers import Session, http_session, stdio_session

EXPECTED_TOOLS = {
    "sandbox_create",
    "sandbox_destroy",
    "sandbox_list",
    "code_run",
    "process_list",
    "process_output",
    "process_kill",
    "file_read",
    "file_write",
    "file_list",
}


@asynccontextmanager
async def session(transport: str, server_env: dict, http_server: HttpServer, tokens: dict) -> AsyncIterator[Session]:
    if transport == "stdio":
        async with stdio_session(server_env) as s:
            yield s
    else:
        async with http_session(http_server.url, tokens["alice"]) as s:
            yield s


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_full_lifecycle(
    transport: str, server_env: dict, http_server: HttpServer, tokens: dict, docker_client: docker.DockerClient
) -> None:
    async with session(transport, server_env, http_server, tokens) as s:
        steps: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            steps.append((progress, total, message))

        r = await s.client.call_tool("sandbox_create", {"name": f"e2e {transport}"}, progress_callback=on_progress)
        assert not r.is_error, r.content
        created = r.structured_content
        sid = created["sandboxId"]
        # Progress notifications tell the client what the (possibly long) create is doing.
        assert [p for p, _, _ in steps] == sorted(p for p, _, _ in steps) and steps[-1][0] == steps[-1][1]
        assert steps[-1][2] == "ready"
        assert created["status"] == "running" and created["isDefault"]
        [container] = docker_client.containers.list(filters={"label": f"{labels.SANDBOX}={sid}"})

        text = "héllo wörld ✓\nline two\n"
        await s.ok("file_write", {"path": "notes/hello.txt", "content": text})
        read = await s.ok("file_read", {"path": "notes/hello.txt"})
        assert read["content"] == text and read["encoding"] == "utf-8"
        assert read["size"] == len(text.encode())

        blob = bytes(range(256)) * 4
        b64 = base64.b64encode(blob).decode()
        await s.ok("file_write", {"path": "notes/blob.bin", "content": b64, "encoding": "base64"})
        back = await s.ok("file_read", {"path": "notes/blob.bin", "encoding": "base64"})
        assert base64.b64decode(back["content"]) == blob

        # sandboxId omitted: the session's default sandbox is used.
        run = await s.ok(
            "code_run",
            {"language": "python", "code": "print(open('notes/hello.txt', encoding='utf-8').read(), end='')"},
        )
        assert run["stdout"] == text and run["exitCode"] == 0 and not run["timedOut"]
        bash = await s.ok("code_run", {"sandboxId": sid, "language": "bash", "code": "wc -c < notes/blob.bin"})
        assert bash["stdout"].strip() == str(len(blob))

        listing = await s.ok("file_list", {"path": ".", "recursive": True})
        by_path = {e["path"]: e for e in listing["entries"]}
        assert by_path["notes"]["type"] == "directory"
        assert by_path["notes/hello.txt"]["type"] == "file"
        assert by_path["notes/blob.bin"]["size"] == len(blob)

        listed = await s.ok("sandbox_list")
        assert [x["sandboxId"] for x in listed["sandboxes"]] == [sid]
        assert listed["defaultSandboxId"] == sid

        assert (await s.ok("sandbox_destroy", {"sandboxId": sid}))["destroyed"] is True
        assert docker_client.containers.list(all=True, filters={"id": container.id}) == []
        vols = docker_client.volumes.list(filters={"label": f"{labels.SANDBOX}={sid}"})
        assert vols == []
        gone = await s.error("file_read", {"sandboxId": sid, "path": "notes/hello.txt"})
        assert gone.code == "SANDBOX_NOT_FOUND" and gone.data["details"]["reason"] == "destroyed"


async def test_tools_list_names_schemas_and_annotations(server_env: dict) -> None:
    async with stdio_session(server_env) as s:
        tools = {t.name: t for t in (await s.client.list_tools()).tools}
    assert set(tools) >= EXPECTED_TOOLS
    for name in EXPECTED_TOOLS:
        t = tools[name]
        assert t.output_schema and t.output_schema["type"] == "object", name
        assert t.input_schema["type"] == "object", name
        assert t.description, name
    assert tools["sandbox_destroy"].annotations.destructive_hint is True
    for ro in ("sandbox_list", "file_read", "file_list", "process_list"):
        assert tools[ro].annotations.read_only_hint is True, ro
    assert "sandboxId" in tools["code_run"].input_schema["properties"]
    assert "sandboxId" not in tools["code_run"].input_schema.get("required", [])
    assert set(tools["code_run"].output_schema["properties"]) >= {
        "stdout",
        "stderr",
        "exitCode",
        "timedOut",
        "durationMs",
        "truncated",
        "processId",
    }
