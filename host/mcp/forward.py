"""Tools that forward one RPC method to a sandbox: input = the method's params + sandboxId."""

from collections.abc import Callable
from typing import Any

from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field, create_model

from host.mcp.registry import Invocation, ToolOutput, ToolSpec
from host.sandboxes.manager import SandboxManager
from rpc.deadline import LADDER
from rpc.methods import Method

SANDBOX_ID_DOC = "Sandbox to act on. Optional when you have one sandbox or created one in this session (the default)."


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
    name: str,
    method: Method[Any, Any],
    *,
    description: str,
    summary: Callable[[Any, Any], str],
    annotations: ToolAnnotations,
    title: str | None = None,
    guard: Callable[[Invocation[Any]], None] | None = None,
    present: Callable[[Any], ToolOutput] | None = None,
    output: type[BaseModel] | None = None,
) -> ToolSpec[Any]:
    """`guard` may refuse a call before it reaches the sandbox; `present` (with its `output` model)
    reshapes the RPC result for MCP, e.g. to move image bytes into image content."""
    input_model = with_sandbox_id(method.params, name)

    async def handler(inv: Invocation[Any]) -> ToolOutput:
        if guard is not None:
            guard(inv)
        params = method.params.model_validate(inv.args.model_dump(exclude={"sandboxId"}, exclude_unset=True))
        rec, result = await manager.call(inv.caller, inv.args.sandboxId, method, params, LADDER.rpc(inv.deadline))
        out = ToolOutput(result=result, summary=f"{name} ok: {summary(params, result)}", sandbox_id=rec.id)
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
