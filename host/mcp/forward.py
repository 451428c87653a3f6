"""Tools that forward one RPC method to a sandbox: input = the method's params + sandboxId, output =
its result, name = the method's name with `_` for `.` (browser.goto → browser_goto).

This is the seam a new sandbox feature plugs into: add its Method to rpc/methods.py, register its
handler in the agent, and list one `forward_tool(...)` in a host/mcp/tools module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field, create_model

from host.mcp.registry import Invocation, ToolOutput, ToolSpec
from host.sandboxes.manager import SandboxManager
from rpc.deadline import LADDER
from rpc.methods import Method, P, R

SANDBOX_ID_DOC = "Sandbox to act on. Optional when you have one sandbox or created one in this session (the default)."


def tool_name(method: Method[Any, Any]) -> str:
    return method.name.replace(".", "_")


def with_sandbox_id(params: type[BaseModel], tool_name: str) -> type[BaseModel]:
    """The tool's input model: the RPC params model plus an optional sandboxId (schemas stay derived)."""
    model_name = "".join(part.title() for part in tool_name.split("_")) + "Args"
    return create_model(
        model_name,
        __base__=params,
        sandboxId=(str | None, Field(None, min_length=1, max_length=64, description=SANDBOX_ID_DOC)),
    )


def forward_tool(
    manager: SandboxManager,
    method: Method[P, R],
    *,
    description: str,
    summary: Callable[[P, R], str],
    annotations: ToolAnnotations,
    title: str | None = None,
    name: str | None = None,
    guard: Callable[[Invocation[Any]], None] | None = None,
    present: Callable[[ToolOutput], ToolOutput] | None = None,
    output: type[BaseModel] | None = None,
) -> ToolSpec[Any]:
    """`summary` says in a few words what the call did (typed against the method's models); `guard`
    may refuse a call before it reaches the sandbox; `present` (with its `output` model) reshapes the
    RPC result for MCP, e.g. to move image bytes into image content."""
    name = name or tool_name(method)
    input_model = with_sandbox_id(method.params, name)

    async def handler(inv: Invocation[Any]) -> ToolOutput:
        if guard is not None:
            guard(inv)
        params = method.params.model_validate(inv.args.model_dump(exclude={"sandboxId"}, exclude_unset=True))
        rpc_deadline = LADDER.rpc(inv.deadline)
        # A paused sandbox is resumed first, and the summary says so.
        resumed = await manager.wake(inv.caller, inv.args.sandboxId, rpc_deadline)
        rec, result = await manager.call(inv.caller, inv.args.sandboxId, method, params, rpc_deadline)
        note = " (sandbox resumed from pause)" if resumed else ""
        out = ToolOutput(result=result, summary=f"{name} ok: {summary(params, result)}{note}", sandbox_id=rec.id)
        return present(out) if present is not None else out

    def budget_s(args: Any) -> float:
        return LADDER.tool_budget_s(method, args)

    return ToolSpec(
        name=name,
        title=title,
        description=description,
        input=input_model,
        output=output or method.result,
        handler=handler,
        budget_s=budget_s,
        annotations=annotations,
    )
