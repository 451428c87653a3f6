"""The one wrapper every tool goes through.

It validates arguments against the tool's pydantic model (so a missing or ill-typed argument is
INVALID_PARAMETER with a hint, not the SDK's raw dump), resolves the caller, opens the tool-level
deadline (the outermost backstop), translates every failure into the uniform error body, and logs
one line per call — tool, duration, sandbox, outcome — without arguments or contents.
"""

import logging
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Generic, TypeVar

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, ContentBlock, ToolAnnotations
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from host.mcp.results import failure, success
from host.sandboxes.models import Caller
from rpc.deadline import Deadline
from rpc.errors import BoxwrightError, ErrorCode, from_validation_error

log = logging.getLogger("boxwright.tools")

I = TypeVar("I", bound=BaseModel)  # noqa: E741
ARGUMENTS_HINT = "fix the named arguments (the tool's inputSchema lists what it accepts) and call again"


class PortableSchema(GenerateJsonSchema):
    """A tagged union (scrape's actions) as plain `anyOf`, without OpenAPI's `discriminator`: the const `type` of
    each branch already tells them apart, and `oneOf` / `discriminator` are what the function-calling schemas of
    some model providers refuse (OpenAI's strict mode, Gemini), which clients translate tool schemas into."""

    def tagged_union_schema(self, schema: core_schema.TaggedUnionSchema) -> JsonSchemaValue:
        union = super().tagged_union_schema(schema)
        union.pop("discriminator", None)
        if "oneOf" in union:
            union["anyOf"] = union.pop("oneOf")
        return union


@dataclass(frozen=True)
class ToolOutput:
    result: BaseModel
    summary: str
    sandbox_id: str | None = None
    extra: Sequence[ContentBlock] = ()


@dataclass(frozen=True)
class Invocation(Generic[I]):
    args: I
    caller: Caller
    deadline: Deadline
    ctx: Context


@dataclass(frozen=True)
class ToolSpec(Generic[I]):
    name: str
    description: str
    input: type[I]
    output: type[BaseModel]
    handler: Callable[[Invocation[I]], Awaitable[ToolOutput]]
    budget_s: Callable[[I], float]
    annotations: ToolAnnotations = field(default_factory=ToolAnnotations)
    title: str | None = None


class _RawArguments(ArgModelBase):
    """Lets every argument through to our own validation (see module docstring)."""

    model_config = ConfigDict(extra="allow")

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.__pydantic_extra__ or {})}


_PLAIN_ID = re.compile(r"[\w.-]{1,64}")


def loggable_id(value: object) -> str:
    """A sandbox id as the log line may show it: as is when it looks like one, else escaped and cut short,
    so a caller's `sandboxId` can neither start a forged line nor flood the log."""
    if not isinstance(value, str) or not value:
        return "-"
    return value if _PLAIN_ID.fullmatch(value) else ascii(value[:64]) + ("..." if len(value) > 64 else "")


def build_tool(spec: ToolSpec[Any], resolve_caller: Callable[[Context], Caller]) -> Tool:
    async def _call(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        started = time.monotonic()
        sandbox_id = arguments.get("sandboxId")
        caller: Caller | None = None
        outcome = "ok"
        try:
            caller = resolve_caller(ctx)  # first, so that a call refused for its arguments names its owner too
            try:
                args = spec.input.model_validate(arguments)
            except ValidationError as exc:
                # Field names and messages only: rejected values may be secrets or file contents.
                raise from_validation_error(exc, "invalid arguments", root="(arguments)", hint=ARGUMENTS_HINT) from None
            deadline = Deadline.after(spec.budget_s(args))
            try:
                async with deadline.timeout():
                    out = await spec.handler(Invocation(args, caller, deadline, ctx))
            except TimeoutError:
                raise BoxwrightError(
                    ErrorCode.TOOL_TIMEOUT, f"{spec.name} did not finish within {spec.budget_s(args):.0f}s"
                ) from None
            sandbox_id = out.sandbox_id or sandbox_id
            return success(spec.name, out.summary, out.result, out.extra)
        except BoxwrightError as exc:
            outcome = exc.code.value
            sandbox_id = exc.details.get("sandboxId", sandbox_id)
            return failure(spec.name, exc)
        except Exception:
            outcome = ErrorCode.INTERNAL_ERROR.value
            log.exception("tool %s crashed", spec.name)
            return failure(spec.name, BoxwrightError(ErrorCode.INTERNAL_ERROR, f"{spec.name} failed unexpectedly"))
        except BaseException:  # the client cancelled the call (or the server is stopping)
            outcome = "cancelled"
            raise
        finally:
            log.info(
                "tool=%s owner=%s sandbox=%s outcome=%s duration_ms=%d",
                spec.name,
                caller.owner if caller else "-",
                loggable_id(sandbox_id),
                outcome,
                (time.monotonic() - started) * 1000,
            )

    _call.__annotations__ = {
        "arguments": dict[str, Any],
        "ctx": Context,
        "return": Annotated[CallToolResult, spec.output],
    }
    tool = Tool.from_function(
        _call, name=spec.name, title=spec.title, description=spec.description, annotations=spec.annotations
    )
    tool.parameters = spec.input.model_json_schema(schema_generator=PortableSchema)
    tool.fn_metadata.arg_model = _RawArguments
    return tool
