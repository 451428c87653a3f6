"""Thin helpers over the official MCP SDK client, so tests read as tool calls and assertions."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

BOXWRIGHT = str(Path(sys.executable).with_name("boxwright"))


@dataclass
class Answer:
    is_error: bool
    data: dict[str, Any]
    text: str

    @property
    def summary(self) -> str:
        return self.text.split("\n", 1)[0]

    @property
    def code(self) -> str | None:
        return self.data.get("errorCode") if self.is_error else None


class Session:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def call(self, tool: str, args: dict[str, Any] | None = None) -> Answer:
        r = await self.client.call_tool(tool, args or {})
        text = r.content[0].text if r.content and r.content[0].type == "text" else ""
        if r.is_error:
            # Errors carry no structuredContent (strict clients would validate it against the success
            # schema); the uniform body is the JSON on the text block's last line.
            assert r.structured_content is None, r.structured_content
            return Answer(True, json.loads(text.rsplit("\n", 1)[-1]), text)
        return Answer(False, r.structured_content or {}, text)

    async def ok(self, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        a = await self.call(tool, args)
        assert not a.is_error, f"{tool} failed: {a.text}"
        # The text block is the summary line followed by the same JSON as structuredContent.
        assert a.summary.startswith(f"{tool} ok"), a.summary
        assert json.loads(a.text.split("\n", 1)[1]) == a.data
        return a.data

    async def error(self, tool: str, args: dict[str, Any] | None = None) -> Answer:
        a = await self.call(tool, args)
        assert a.is_error, f"{tool} unexpectedly succeeded: {a.text}"
        assert set(a.data) == {"error", "errorCode", "recoverHint", "details"}, a.data
        assert a.data["recoverHint"], a.data
        assert a.summary.startswith(f"{tool} failed: ")
        return a


@asynccontextmanager
async def stdio_session(env: dict[str, str]) -> AsyncIterator[Session]:
    params = StdioServerParameters(command=BOXWRIGHT, args=["serve"], env=env)
    async with Client(params) as client:
        yield Session(client)


@asynccontextmanager
async def http_session(url: str, token: str | None = None) -> AsyncIterator[Session]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(120)) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield Session(client)
