"""Settings read from the environment: one object per process side (the host's `host.config.Settings`,
the sandbox's `sandbox_image.config.SandboxSettings`), both built on `EnvSettings`.

Each variable's name is derived from its field — `BOXWRIGHT_` + the field name in capitals — so no
name is written twice; an empty variable counts as unset unless the field says empty means
something; a bad value is refused with the variable's name (`SettingsError`). The host hands some of
these names to the container (the token's hash), which is why this lives in the shared package.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from rpc import envvars
from rpc.envvars import ENV_PREFIX


class SettingsError(ValueError):
    """The environment (or a flag standing in for it) holds a value that cannot be used."""


class EnvSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    # Fields for which an empty variable is a value ("none of that"), not "unset".
    keep_empty: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _empty_is_unset(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v != "" or k in cls.keep_empty}
        return data

    @classmethod
    def env_name(cls, field: str) -> str:
        return envvars.env_name(field)

    @classmethod
    def load(cls, **overrides: Any) -> Self:
        """Read the environment; `overrides` (None values skipped) win over it. Raises SettingsError."""
        try:
            return cls(**{k: v for k, v in overrides.items() if v is not None})
        except ValidationError as exc:
            problems = [
                f"{cls.env_name(str(err['loc'][0])) if err['loc'] else cls.__name__}: {err['msg']}"
                for err in exc.errors(include_input=False, include_url=False, include_context=False)
            ]
            raise SettingsError("; ".join(problems)) from None

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` (None values skipped), validated like the original."""
        return self.load(**{**self.model_dump(), **{k: v for k, v in changes.items() if v is not None}})
