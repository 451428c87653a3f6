"""Base classes for every params/result model that crosses the wire."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Params(BaseModel):
    """Request parameters: unknown fields are refused so a typo ("timeout") is an error, not a no-op."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False, defer_build=True)


class Result(BaseModel):
    """Results: tolerant of extra fields so an older host can read a newer agent."""

    model_config = ConfigDict(extra="ignore", defer_build=True)
