"""Tool results as LLM-friendly MCP content: a one-line summary, then the same data as JSON.

Successes carry `structuredContent` (checked against the tool's outputSchema); failures carry the
uniform `{error, errorCode, recoverHint, details}` body with `isError: true`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mcp.types import CallToolResult, ContentBlock, ImageContent, TextContent
from pydantic import BaseModel

from rpc.errors import BoxwrightError


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


def success(summary: str, result: BaseModel, extra: Sequence[ContentBlock] = ()) -> CallToolResult:
    data = result.model_dump(mode="json")
    return CallToolResult(
        content=[TextContent(type="text", text=f"{summary}\n{_json(data)}"), *extra],
        structured_content=data,
    )


def failure(tool: str, exc: BoxwrightError) -> CallToolResult:
    body = exc.to_body().model_dump(mode="json")
    text = f"{tool} failed: {exc.message} [{exc.code.value}]\nhint: {exc.hint}\n{_json(body)}"
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=body, is_error=True)


def image(data_b64: str, mime_type: str = "image/png") -> ImageContent:
    return ImageContent(type="image", data=data_b64, mime_type=mime_type)
