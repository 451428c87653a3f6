"""This machine's place on the network, read from the kernel's tables: its own addresses and the
subnets attached to its interfaces (its LAN neighbours). Meaningful for sandboxes when the Docker
engine runs here (public mode blocks both) and for the HTTP server's default allowed Host names."""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import socket
import struct
from pathlib import Path

IpNet = ipaddress.IPv4Network | ipaddress.IPv6Network
RTF_GATEWAY = 0x2


def _ordinary(net: IpNet) -> bool:
    """Not loopback, link-local or multicast (those are blocked or meaningless anyway)."""
    addr = net.network_address
    return not (addr.is_loopback or addr.is_link_local or addr.is_multicast or addr.is_unspecified)


def local_addresses() -> list[str]:
    """This machine's own unicast addresses (not loopback or link-local)."""
    found: set[str] = set()
    with contextlib.suppress(OSError):
        lines = Path("/proc/net/fib_trie").read_text().splitlines()
        for prev, line in itertools.pairwise(lines):
            if line.strip() == "/32 host LOCAL" and "|--" in prev:
                found.add(prev.split("|--")[1].strip())
    with contextlib.suppress(OSError):
        for row in Path("/proc/net/if_inet6").read_text().splitlines():
            found.add(str(ipaddress.IPv6Address(int(row.split()[0], 16))))
    addrs = (ipaddress.ip_network(a) for a in found)
    return sorted(str(a.network_address) for a in addrs if _ordinary(a))


def attached_networks() -> list[str]:
    """The subnets directly attached to this machine's interfaces (routes without a gateway, not the
    default route, not loopback): the LAN neighbours a sandbox could otherwise reach."""
    nets: set[IpNet] = set()
    with contextlib.suppress(OSError):
        for row in Path("/proc/net/route").read_text().splitlines()[1:]:
            f = row.split()
            if len(f) < 8 or f[0] == "lo" or int(f[3], 16) & RTF_GATEWAY:
                continue
            dest, mask = (socket.inet_ntoa(struct.pack("<I", int(x, 16))) for x in (f[1], f[7]))
            if mask != "0.0.0.0":
                nets.add(ipaddress.IPv4Network(f"{dest}/{mask}", strict=False))
    with contextlib.suppress(OSError):
        for row in Path("/proc/net/ipv6_route").read_text().splitlines():
            f = row.split()
            if len(f) < 10 or f[9] == "lo" or int(f[8], 16) & RTF_GATEWAY or int(f[1], 16) in (0, 128):
                continue
            nets.add(ipaddress.IPv6Network((int(f[0], 16), int(f[1], 16)), strict=False))
    return sorted((str(n) for n in nets if _ordinary(n)), key=lambda n: (":" in n, n))


def machine_names() -> list[str]:
    """The names this machine answers to (its hostname, fully qualified name and localhost)."""
    names = {"localhost", socket.gethostname()}
    with contextlib.suppress(OSError):
        names.add(socket.getfqdn())
    return sorted(n.lower() for n in names if n)
