"""How a setting is named in the environment, readable without the settings library.

`rpc.settings` builds the settings objects on this naming; the code runner reads the two settings
its start-up handshake needs straight from here, before it loads pydantic (every sandbox start waits
for that handshake on busy cores — issue 12, cold create).
"""

from __future__ import annotations

import os

ENV_PREFIX = "BOXWRIGHT_"


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()


def env_value(field: str, default: str) -> str:
    """`field`'s variable, or `default` when it is unset or empty (as rpc.settings reads it)."""
    return os.environ.get(env_name(field)) or default
