"""Base classes for every params/result model that crosses the wire."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Strict


class Params(BaseModel):
    """Request parameters: unknown fields are refused so a typo ("timeout") is an error, not a no-op; and a
    true/false field takes only true or false, not pydantic's lax "yes", "on" or 1 (a `recursive: "yes"` that
    deletes a tree is a caller's bug to be told, not guessed)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False, defer_build=True)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        for info in cls.model_fields.values():  # the schema is built later (defer_build), with this in it
            if info.annotation in (bool, bool | None) and not any(isinstance(m, Strict) for m in info.metadata):
                info.metadata.append(Strict())


class Result(BaseModel):
    """Results: tolerant of extra fields so an older host can read a newer agent."""

    model_config = ConfigDict(extra="ignore", defer_build=True)
