"""Address ranges a sandbox must not reach on its own: the host, its LAN, cloud metadata, private
networks. Plain standard library, because netguard (which enforces them inside the sandbox's network
namespace) must not pay for pydantic's import on every sandbox start.

`public` mode blocks all of them (plus the host's own addresses and attached subnets, which the server
hands over); an `allowlist` may name them only with the operator's permission
(`BOXWRIGHT_INTERNAL_ALLOW_HOSTS`), never on a caller's say-so — checked by the server for literal
addresses and again by netguard for what hostnames resolve to.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

IpNet = ipaddress.IPv4Network | ipaddress.IPv6Network

# Private, loopback, link-local (cloud metadata lives at 169.254.169.254), shared/CGNAT, benchmarking,
# multicast and reserved ranges.
BLOCKED_V4 = (
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "224.0.0.0/4",
    "240.0.0.0/4",
)
# IPv6: unspecified, loopback, and the forms that carry an IPv4 address inside (IPv4-mapped, NAT64, 6to4,
# Teredo), so that 2002:a00:1:: (10.0.0.1 through 6to4) is as internal as 10.0.0.1; unique local,
# link-local, multicast.
BLOCKED_V6 = (
    "::/128",
    "::1/128",
    "::ffff:0:0/96",
    "64:ff9b::/96",
    "2002::/16",
    "2001::/32",
    "fc00::/7",
    "fe80::/10",
    "ff00::/8",
)
INTERNAL_HINT = (
    "private, loopback, link-local, CGNAT and the server's own addresses and subnets may be allowlisted only "
    "with the operator's permission: ask them to add the entry to BOXWRIGHT_INTERNAL_ALLOW_HOSTS"
)


def blocked_networks(extra: Iterable[str] = ()) -> list[IpNet]:
    """The always-internal ranges plus `extra` (the host's addresses and subnets)."""
    return [ipaddress.ip_network(n, strict=False) for n in (*BLOCKED_V4, *BLOCKED_V6, *extra)]


def internal_overlap(net: IpNet, internal: Iterable[IpNet]) -> IpNet | None:
    """The first internal range `net` overlaps (a range covering one counts), None when it is outside all."""
    return next((i for i in internal if i.version == net.version and net.overlaps(i)), None)


def permitted(net: IpNet, permits: Iterable[IpNet]) -> bool:
    """Whether `net` lies entirely inside one of the operator's permitted ranges."""
    return any(p.version == net.version and net.subnet_of(p) for p in permits)  # type: ignore[arg-type]
