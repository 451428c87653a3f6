"""Advertise only what exists, and answer what does not exist with the JSON-RPC code for it.

The SDK's MCPServer serves (and so advertises) prompts and resources even when none are
registered; `prompts/get` of any name then fails as an internal error (code 0 or -32603, with a
traceback in the log). This middleware decides per request from what is registered right now, so
registering prompts or resources later (e.g. resources for run artifacts) turns them on by itself:

- `initialize` and `server/discover` advertise `prompts` / `resources` only when some exist;
- their methods answer -32601 (method not found) while nothing is behind them;
- `prompts/get` of an unknown name is -32602 (invalid params), as the MCP spec says;
- so is `tools/call` of an unknown tool (the spec's own example), its data the uniform error body — the
  SDK answered a tool result with the bare text "Unknown tool: x" and no errorCode or hint.
"""

from __future__ import annotations

from typing import Any

from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.types import INVALID_PARAMS, METHOD_NOT_FOUND

from rpc.errors import BoxwrightError, ErrorCode

FEATURE_OF_METHOD = {
    "prompts/list": "prompts",
    "prompts/get": "prompts",
    "resources/list": "resources",
    "resources/read": "resources",
    "resources/templates/list": "resources",
    "resources/subscribe": "resources",
    "resources/unsubscribe": "resources",
}
ADVERTISING_METHODS = frozenset({"initialize", "server/discover"})


class OfferOnlyWhatExists:
    """A `Server.middleware` entry (see the module docstring)."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server

    async def _prompt_names(self) -> set[str]:
        return {p.name for p in await self.server.list_prompts()}

    async def _offered(self) -> set[str]:
        offered = set()
        if await self.server.list_prompts():
            offered.add("prompts")
        if await self.server.list_resources() or await self.server.list_resource_templates():
            offered.add("resources")
        return offered

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        feature = FEATURE_OF_METHOD.get(ctx.method)
        if feature is not None and feature not in await self._offered():
            raise MCPError(code=METHOD_NOT_FOUND, message="Method not found", data=ctx.method)
        if ctx.method == "prompts/get":
            name = (ctx.params or {}).get("name")
            if name not in await self._prompt_names():
                raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {name}", data={"name": name})
        if ctx.method == "tools/call":
            name = (ctx.params or {}).get("name")
            if name not in {t.name for t in await self.server.list_tools()}:
                unknown = BoxwrightError(
                    ErrorCode.INVALID_PARAMETER,
                    f"Unknown tool: {name}",
                    hint="tools/list shows the tools this server offers (BOXWRIGHT_TOOLSETS may leave groups out)",
                    details={"name": name},
                )
                raise MCPError(code=INVALID_PARAMS, message=unknown.message, data=unknown.to_body().model_dump())
        result = await call_next(ctx)
        if ctx.method in ADVERTISING_METHODS and isinstance(result, dict):
            capabilities = result.get("capabilities")
            if isinstance(capabilities, dict):
                offered = await self._offered()
                result = {
                    **result,
                    "capabilities": {
                        k: v for k, v in capabilities.items() if k not in ("prompts", "resources") or k in offered
                    },
                }
        return result


def offer_only_what_exists(server: MCPServer) -> MCPServer:
    server.middleware.append(OfferOnlyWhatExists(server))
    return server
