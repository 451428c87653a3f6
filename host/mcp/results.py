"""Tool results as MCP content every client can read: a one-line summary, then the data as JSON.

Successes carry `structuredContent` (valid under the tool's outputSchema) and a text block with
the summary line and the same data as compact JSON. Failures are `isError: true` with a text block
only: summary, hint, and the uniform `{error, errorCode, recoverHint, details}` body as JSON on the
last line. They carry no structuredContent on purpose: the TypeScript SDK v1 and the MCP Inspector
validate structuredContent against the success outputSchema even on errors and throw away the
result when it does not match, while every client shows the text (and the SDKs expect no
structuredContent on errors).

Every result is kept within `MAX_RESULT_BYTES` on the wire, well below the 10 MiB at which
TypeScript clients drop a stdio connection (which ends the server and the user's sandboxes); a
bigger one raises PAYLOAD_TOO_LARGE, saying how to ask for less. Strings are made valid
Unicode first (a lone surrogate, e.g. from a page title, is invalid JSON for strict clients).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mcp.types import CallToolResult, ContentBlock, ImageContent, TextContent
from pydantic import BaseModel

from rpc.errors import BoxwrightError, ErrorCode

MIB = 1024 * 1024
MAX_RESULT_BYTES = 6 * MIB


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _valid_str(text: str) -> str:
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        # Lone surrogates: U+DC80..U+DCFF are undecodable bytes (Python's surrogateescape) — show
        # the byte; any other lone surrogate becomes U+FFFD.
        return "".join(
            (f"\\x{ord(ch) - 0xDC00:02x}" if 0xDC80 <= ord(ch) <= 0xDCFF else "\ufffd")
            if 0xD800 <= ord(ch) <= 0xDFFF
            else ch
            for ch in text
        )


def valid_unicode(value: Any) -> Any:
    """`value` with every string (keys too) encodable as UTF-8, so it is valid JSON on the wire."""
    if isinstance(value, str):
        return _valid_str(value)
    if isinstance(value, dict):
        return {_valid_str(k) if isinstance(k, str) else k: valid_unicode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [valid_unicode(v) for v in value]
    return value


def wire_bytes(result: CallToolResult) -> int:
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8"))


def too_large(tool: str, size: int) -> BoxwrightError:
    return BoxwrightError(
        ErrorCode.PAYLOAD_TOO_LARGE,
        f"{tool} finished, but its result ({size / MIB:.1f} MiB as JSON) is more than one MCP message may "
        f"carry ({MAX_RESULT_BYTES // MIB} MiB), so it was not sent",
        hint="ask for less per call: a smaller limit (file_read: read in parts with offset/limit), "
        "maxOutputBytes, maxTextLen or maxLength; or write the data to a file and read it in parts",
        details={"resultBytes": size, "maxResultBytes": MAX_RESULT_BYTES},
    )


def _may_exceed(text: str, data_json: str, extra: Sequence[ContentBlock]) -> bool:
    """False when the result surely fits on the wire, without serialising it once more: the text is at
    most 6 times longer JSON-escaped (\\uXXXX), structuredContent at most twice its compact JSON (number
    spellings differ between json and pydantic by a few characters), plus the envelope."""
    if extra:
        return True
    bound = 6 * len(text.encode("utf-8")) + 2 * len(data_json.encode("utf-8")) + 1024
    return bound > MAX_RESULT_BYTES


def success(tool: str, summary: str, result: BaseModel, extra: Sequence[ContentBlock] = ()) -> CallToolResult:
    data = result.model_dump(mode="json")
    data_json = _json(data)
    try:
        data_json.encode("utf-8")  # a lone surrogate anywhere (keys too) fails here: only then walk the data
    except UnicodeEncodeError:
        data = valid_unicode(data)
        data_json = _json(data)
    text = f"{_valid_str(summary)}\n{data_json}"
    answer = CallToolResult(content=[TextContent(type="text", text=text), *extra], structured_content=data)
    if _may_exceed(text, data_json, extra):
        size = wire_bytes(answer)
        if size > MAX_RESULT_BYTES:
            raise too_large(tool, size)
    return answer


def failure(tool: str, exc: BoxwrightError) -> CallToolResult:
    body = valid_unicode(exc.to_body().model_dump(mode="json"))
    text = f"{tool} failed: {body['error']} [{exc.code.value}]\nhint: {body['recoverHint']}\n{_json(body)}"
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def error_body(result: CallToolResult) -> dict[str, Any]:
    """The uniform error body of a failure result (its text block's last line)."""
    text = next(c.text for c in result.content if isinstance(c, TextContent))
    return json.loads(text.rsplit("\n", 1)[-1])


def image(data_b64: str, mime_type: str = "image/png") -> ImageContent:
    return ImageContent(type="image", data=data_b64, mime_type=mime_type)
