"""A sandbox's network policy: what the host hands the in-image `netguard` that enforces it.

Not a JSON-RPC method (the agent never sees it): the host runs `python3 -m sandbox_image.netguard`
in a short-lived container that shares the sandbox's network namespace and holds NET_ADMIN, which the
sandbox itself never has. The host validates and serialises this model; netguard reads the JSON
without importing pydantic (its start-up is on every sandbox_create's path), so the shape lives here.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from rpc.models.base import Params
from rpc.netblocks import blocked_networks, internal_overlap, permitted

NetworkMode = Literal["public", "none", "allowlist"]
MAX_ALLOW_HOSTS = 32

_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_HOSTNAME = re.compile(rf"^(?=.{{1,253}}$)({_LABEL}\.)*{_LABEL}$")


def parse_allow_entry(entry: str) -> str:
    """An allowlist entry is a hostname, an IP address or a CIDR block; returns it normalised."""
    value = entry.strip().lower().rstrip(".")
    try:
        return str(ipaddress.ip_network(value, strict=False))
    except ValueError:
        pass
    if _HOSTNAME.match(value) and not value.replace(".", "").isdigit():
        return value
    raise ValueError("not a hostname, IP address or CIDR block (give no scheme, port or path)")


class NetworkPolicy(Params):
    mode: NetworkMode = Field(
        "public",
        description="public: internet only (private, link-local and host addresses blocked); "
        "none: no network at all; allowlist: only the hosts in allowHosts",
    )
    allowHosts: list[str] = Field(
        default_factory=list,
        max_length=MAX_ALLOW_HOSTS,
        description="With mode allowlist: hostnames, IP addresses or CIDR blocks the sandbox may reach",
    )
    hostAddresses: list[str] = Field(
        default_factory=list,
        description="Set by the server, not by callers: the Docker host's own addresses, blocked in public mode",
    )
    hostNetworks: list[str] = Field(
        default_factory=list,
        description="Set by the server: the subnets attached to the Docker host (its LAN), blocked in public mode",
    )
    internalAllowed: list[str] = Field(
        default_factory=list,
        description="Set by the server: internal ranges and hostnames its operator lets callers allowlist",
    )

    @field_validator("allowHosts", "internalAllowed")
    @classmethod
    def _entries(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(parse_allow_entry(v) for v in value))

    @field_validator("hostAddresses")
    @classmethod
    def _addresses(cls, value: list[str]) -> list[str]:
        return [str(ipaddress.ip_address(v)) for v in value]

    @field_validator("hostNetworks")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        return [str(ipaddress.ip_network(v, strict=False)) for v in value]

    @model_validator(mode="after")
    def _consistent(self) -> NetworkPolicy:
        if self.mode == "allowlist" and not self.allowHosts:
            raise ValueError("mode 'allowlist' needs at least one entry in allowHosts")
        if self.mode != "allowlist" and self.allowHosts:
            raise ValueError(f"allowHosts only applies to mode 'allowlist', not {self.mode!r}")
        return self

    def refused_entries(self) -> list[tuple[int, str, str]]:
        """Literal allowlist entries (addresses, ranges) that reach an internal range the operator did not
        permit, as (index, entry, the range): hostnames are checked by netguard once resolved."""
        internal = blocked_networks([*self.hostAddresses, *self.hostNetworks])
        permits = [ipaddress.ip_network(p) for p in self.internalAllowed if _is_network(p)]
        refused = []
        for i, entry in enumerate(self.allowHosts):
            if _is_network(entry):
                net = ipaddress.ip_network(entry)
                hit = internal_overlap(net, internal)
                if hit is not None and not permitted(net, permits):
                    refused.append((i, entry, str(hit)))
        return refused


def _is_network(entry: str) -> bool:
    try:
        ipaddress.ip_network(entry)
    except ValueError:
        return False
    return True
