"""Which Host and Origin headers the HTTP server accepts (DNS-rebinding protection), for any address
it is bound to. Protection is always on; the lists are the operator's (`allowed_hosts`,
`allowed_origins`, or `--allowed-host` / `--allowed-origin`) or derived from the bind address:

- a loopback address: the loopback names (127.0.0.1, localhost, [::1]) and that address;
- 0.0.0.0 / :: (every interface): this machine's names and every address of it;
- any other address: that address and this machine's names.

Each with any port (`name:*`) or none: DNS rebinding shows in the name, and a proxy on another port
(or on 80) is common; origins are http:// and https:// of each allowed host.

Names are compared without regard to case, as DNS compares them (`LOCALHOST:8000` is `localhost:8000`):
the lists are kept in lower case and CanonicalHost lowers the request's Host and Origin before the
SDK's exact comparison sees them.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence

from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from host import netinfo

# A Host header value: a DNS name or IPv4 address, or an IPv6 address in brackets; optionally :port or :*.
_HOST = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)(:(\d{1,5}|\*))?$")
_ORIGIN = re.compile(r"^https?://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)(:(\d{1,5}|\*))?$")
WILDCARD_BINDS = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_value(name: str) -> str:
    try:
        if ipaddress.ip_address(name).version == 6:
            return f"[{name}]"
    except ValueError:
        pass
    return name


def default_hosts(bind: str) -> list[str]:
    """The Host values a server bound to `bind` accepts when the operator names none."""
    if is_loopback(bind):
        names = ["127.0.0.1", "localhost", "::1", bind]
    elif bind in WILDCARD_BINDS:
        names = ["127.0.0.1", "::1", *netinfo.machine_names(), *netinfo.local_addresses()]
    else:
        names = [bind, *netinfo.machine_names()]
    values = [_host_value(n) for n in dict.fromkeys(n.lower() for n in names)]
    return [f"{v}:*" for v in values] + values


def check_entries(hosts: Sequence[str], origins: Sequence[str]) -> None:
    """ValueError naming the first entry that is not a Host (or Origin) value."""
    for host in hosts:
        if not _HOST.match(host):
            raise ValueError(f"allowed host {host!r} is not a host name or address, with an optional :port or :*")
    for origin in origins:
        if not _ORIGIN.match(origin):
            raise ValueError(f"allowed origin {origin!r} is not an http(s)://host[:port] origin")


def transport_security(
    bind: str, hosts: Sequence[str] | None = None, origins: Sequence[str] | None = None
) -> TransportSecuritySettings:
    """The SDK's Host/Origin checks for a server bound to `bind`; ValueError for a bad or empty list."""
    allowed = [h.lower() for h in hosts] if hosts is not None else default_hosts(bind)
    if not allowed:
        raise ValueError("no Host header would be accepted: name at least one allowed host")
    allowed_origins = (
        [o.lower() for o in origins]
        if origins is not None
        else [f"{scheme}://{h}" for h in allowed for scheme in ("http", "https")]
    )
    check_entries(allowed, allowed_origins)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=allowed, allowed_origins=allowed_origins
    )


_CASELESS = (b"host", b"origin")


class CanonicalHost:
    """Lowers the Host and Origin headers of every HTTP request and WebSocket handshake, so the SDK's
    exact comparison with the (lower-case) allowed lists treats names as DNS does. An Origin's path
    part cannot occur (an origin is scheme://host[:port]), so lowering the whole value changes nothing
    but the case of the scheme and the name."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = scope.get("headers") or []
            if any(name in _CASELESS and value != value.lower() for name, value in headers):
                lowered = [(n, v.lower() if n in _CASELESS else v) for n, v in headers]
                scope = {**scope, "headers": lowered}
        await self.app(scope, receive, send)
