"""Enforce a sandbox's network policy: `python3 -m sandbox_image.netguard '<NetworkPolicy JSON>'`.

Runs once per sandbox, as root with NET_ADMIN only, in a throw-away container that shares the
sandbox's network namespace (`--network container:<sandbox>`). It loads packet filter rules into
that namespace and exits; the sandbox has no capabilities, so nothing in it can change them — the
policy is enforced outside its reach. Loopback always works (the agent, Chromium, a dev server in
the sandbox), and so do replies on connections the host opened to the agent.

Prints one JSON line (the resolved allowlist) on success; exits 1 with a message on stderr otherwise.

The argument is `rpc.models.network.NetworkPolicy`, validated by the host that wrote it; this
module reads it as plain JSON instead of importing the model: pydantic's import alone (~0.25 s)
would lengthen every sandbox_create, which waits for this to finish. Allowlist entries that reach
internal ranges (rpc.netblocks) — hostnames checked here, after resolution — are refused (exit 3)
unless the operator permitted them.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from rpc.netblocks import INTERNAL_HINT, IpNet, blocked_networks, internal_overlap, permitted

EMBEDDED_DNS = "127.0.0.11"  # Docker's resolver on user-defined networks, reached over loopback
REJECT_V4 = "REJECT --reject-with icmp-admin-prohibited"
REJECT_V6 = "REJECT --reject-with icmp6-adm-prohibited"


REFUSED_EXIT = 3  # an allowlist entry is (or resolves to) an internal address the operator did not permit


@dataclass(frozen=True)
class Policy:
    """The fields of NetworkPolicy this needs."""

    mode: str
    allowHosts: tuple[str, ...] = ()
    hostAddresses: tuple[str, ...] = ()
    hostNetworks: tuple[str, ...] = ()
    internalAllowed: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, raw: str) -> Policy:
        data = json.loads(raw)
        fields = ("allowHosts", "hostAddresses", "hostNetworks", "internalAllowed")
        return cls(data["mode"], *(tuple(data.get(name, ())) for name in fields))

    def internal(self) -> list[IpNet]:
        """What a sandbox must not reach unless allowed: fixed ranges, the host's addresses and subnets."""
        return blocked_networks([*self.hostAddresses, *self.hostNetworks])


class Refused(Exception):
    """An allowlist entry reaches an internal address without the operator's permission."""


def check_internal(policy: Policy, resolved: dict[str, list[str]]) -> None:
    """Refuse entries that are, cover or resolve to internal addresses, unless the operator permits them
    (a permitted hostname by name, an address by a permitted range containing it)."""
    internal = policy.internal()
    names = {p for p in policy.internalAllowed if not _is_net(p)}
    permits = [ipaddress.ip_network(p, strict=False) for p in policy.internalAllowed if _is_net(p)]
    for entry, nets in resolved.items():
        if entry in names:
            continue
        for raw in nets:
            net = ipaddress.ip_network(raw)
            hit = internal_overlap(net, internal)
            if hit is not None and not permitted(net, permits):
                shown = entry if entry == raw else f"{entry} ({raw})"
                raise Refused(f"allowlist entry {shown} reaches the internal range {hit}; {INTERNAL_HINT}")


def _is_net(entry: str) -> bool:
    try:
        ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False
    return True


def resolve(entries: Iterable[str]) -> dict[str, list[str]]:
    """Allowlist entries as networks; hostnames become the addresses they resolve to now."""
    out: dict[str, list[str]] = {}
    for entry in entries:
        try:
            out[entry] = [str(ipaddress.ip_network(entry, strict=False))]
            continue
        except ValueError:
            pass
        try:
            infos = socket.getaddrinfo(entry, None, proto=socket.IPPROTO_TCP)
        except OSError as exc:
            raise SystemExit(f"netguard: cannot resolve allowlist host {entry!r}: {exc}") from exc
        addrs = sorted({str(info[4][0]) for info in infos})
        out[entry] = [str(ipaddress.ip_network(a)) for a in addrs]
    return out


def rules(policy: Policy, allowed: Iterable[str], version: int) -> str:
    """An iptables-restore / ip6tables-restore document for the filter table's OUTPUT chain."""
    reject = REJECT_V4 if version == 4 else REJECT_V6
    nets: list[IpNet] = [ipaddress.ip_network(n) for n in allowed]
    lines = ["*filter", ":INPUT ACCEPT [0:0]", ":FORWARD ACCEPT [0:0]", ":OUTPUT ACCEPT [0:0]"]
    if policy.mode == "none" and version == 4:
        lines.append(f"-A OUTPUT -d {EMBEDDED_DNS}/32 -j {reject}")  # no name lookups either
    lines += [
        "-A OUTPUT -o lo -j ACCEPT",
        "-A OUTPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT",
    ]
    if policy.mode == "public":
        blocked = [net for net in policy.internal() if net.version == version]
        lines += [f"-A OUTPUT -d {net} -j {reject}" for net in dict.fromkeys(blocked)]
    else:
        lines += [f"-A OUTPUT -d {net} -j ACCEPT" for net in nets if net.version == version]
        lines.append(f"-A OUTPUT -j {reject}")
    lines.append("COMMIT")
    return "\n".join(lines) + "\n"


def _has_global_ipv6() -> bool:
    """Whether this namespace has an IPv6 address besides loopback and link-local."""
    try:
        with open("/proc/net/if_inet6") as f:
            rows = [line.split() for line in f]
    except OSError:
        return False
    return any(row[5] != "lo" and not row[0].startswith("fe80") for row in rows if len(row) >= 6)


def _restore(command: str, document: str) -> str | None:
    done = subprocess.run([command], input=document, capture_output=True, text=True, check=False, timeout=30)
    return None if done.returncode == 0 else (done.stderr.strip() or f"exit {done.returncode}")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python3 -m sandbox_image.netguard '<NetworkPolicy JSON>'", file=sys.stderr)
        return 2
    policy = Policy.from_json(argv[0])
    resolved = resolve(policy.allowHosts) if policy.mode == "allowlist" else {}
    try:
        check_internal(policy, resolved)
    except Refused as exc:
        print(f"netguard: {exc}", file=sys.stderr)
        return REFUSED_EXIT
    allowed = [net for nets in resolved.values() for net in nets]
    error = _restore("iptables-restore", rules(policy, allowed, 4))
    if error:
        print(f"netguard: iptables-restore failed: {error}", file=sys.stderr)
        return 1
    error = _restore("ip6tables-restore", rules(policy, allowed, 6))
    if error and _has_global_ipv6():  # without IPv6 in the namespace there is nothing to guard
        print(f"netguard: ip6tables-restore failed: {error}", file=sys.stderr)
        return 1
    print(json.dumps({"mode": policy.mode, "allowed": resolved}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
