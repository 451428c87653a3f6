"""Network policy: argument validation and the packet filter rules netguard loads (pure logic)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rpc.models.network import NetworkPolicy, parse_allow_entry
from sandbox_image.netguard import EMBEDDED_DNS, Policy, Refused, check_internal, rules


def as_sent(**fields: object) -> Policy:
    """What netguard reads: the host's validated NetworkPolicy, as JSON on its command line."""
    return Policy.from_json(NetworkPolicy.model_validate(fields).model_dump_json())


def output_rules(document: str) -> list[str]:
    return [line for line in document.splitlines() if line.startswith("-A OUTPUT")]


def test_allow_entries_are_normalised() -> None:
    assert parse_allow_entry(" PyPI.org. ") == "pypi.org"
    assert parse_allow_entry("203.0.113.7") == "203.0.113.7/32"
    assert parse_allow_entry("203.0.113.9/24") == "203.0.113.0/24"
    assert parse_allow_entry("2001:db8::1") == "2001:db8::1/128"


@pytest.mark.parametrize("bad", ["https://pypi.org", "pypi.org:443", "pypi.org/simple", "", "a b", "-x.org", "1.2.3"])
def test_allow_entries_refuse_what_is_not_a_host(bad: str) -> None:
    with pytest.raises(ValueError, match="not a hostname"):
        parse_allow_entry(bad)


@pytest.mark.parametrize(
    "args",
    [{"mode": "allowlist"}, {"mode": "public", "allowHosts": ["x.org"]}, {"mode": "none", "allowHosts": ["x.org"]}],
)
def test_inconsistent_policies_are_refused(args: dict) -> None:
    with pytest.raises(ValidationError):
        NetworkPolicy.model_validate(args)


def test_public_keeps_loopback_and_replies_then_blocks_private_and_host_addresses() -> None:
    policy = as_sent(mode="public", hostAddresses=["192.0.2.2", "2001:db8::2"])
    v4 = output_rules(rules(policy, [], 4))
    assert v4[:2] == ["-A OUTPUT -o lo -j ACCEPT", "-A OUTPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT"]
    rejected = {line.split()[3] for line in v4[2:]}
    assert {"169.254.0.0/16", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "192.0.2.2/32"} <= rejected
    assert all(line.endswith("REJECT --reject-with icmp-admin-prohibited") for line in v4[2:])
    assert not any(line == "-A OUTPUT -j REJECT --reject-with icmp-admin-prohibited" for line in v4)  # internet ok
    v6 = output_rules(rules(policy, [], 6))
    assert "-A OUTPUT -d 2001:db8::2/128 -j REJECT --reject-with icmp6-adm-prohibited" in v6
    assert "-A OUTPUT -d fe80::/10 -j REJECT --reject-with icmp6-adm-prohibited" in v6
    assert not any("192.0.2.2" in line for line in v6)


def test_none_rejects_everything_but_loopback_and_first_the_embedded_dns() -> None:
    v4 = output_rules(rules(as_sent(mode="none"), [], 4))
    assert v4[0] == f"-A OUTPUT -d {EMBEDDED_DNS}/32 -j REJECT --reject-with icmp-admin-prohibited"
    assert v4[1] == "-A OUTPUT -o lo -j ACCEPT"
    assert v4[-1] == "-A OUTPUT -j REJECT --reject-with icmp-admin-prohibited"
    assert output_rules(rules(as_sent(mode="none"), [], 6))[-1].startswith("-A OUTPUT -j REJECT")


def test_allowlist_accepts_only_the_resolved_networks_of_its_family() -> None:
    policy = as_sent(mode="allowlist", allowHosts=["pypi.org"])
    allowed = ["198.51.100.4/32", "2001:db8::4/128"]
    v4 = output_rules(rules(policy, allowed, 4))
    assert v4[2:] == [
        "-A OUTPUT -d 198.51.100.4/32 -j ACCEPT",
        "-A OUTPUT -j REJECT --reject-with icmp-admin-prohibited",
    ]
    v6 = output_rules(rules(policy, allowed, 6))
    assert v6[2:] == [
        "-A OUTPUT -d 2001:db8::4/128 -j ACCEPT",
        "-A OUTPUT -j REJECT --reject-with icmp6-adm-prohibited",
    ]


def test_public_also_blocks_the_hosts_attached_subnets() -> None:
    policy = as_sent(mode="public", hostNetworks=["192.0.2.0/24", "2001:db8:1::/64"])
    assert "-A OUTPUT -d 192.0.2.0/24 -j REJECT --reject-with icmp-admin-prohibited" in rules(policy, [], 4)
    assert "-A OUTPUT -d 2001:db8:1::/64 -j REJECT --reject-with icmp6-adm-prohibited" in rules(policy, [], 6)


@pytest.mark.parametrize(
    "entry",
    ["169.254.169.254", "0.0.0.0/0", "::/0", "10.0.0.0/8", "10.1.2.3", "100.64.0.1", "127.0.0.1", "fd00::1",
     "::ffff:10.0.0.1", "64:ff9b::a00:1", "2002:a00:1::1", "2001:0:a00:1::1", "192.0.2.2", "192.0.2.0/24",
     "192.0.0.0/16"],
)  # fmt: skip
def test_internal_entries_need_the_operators_permission(entry: str) -> None:
    """Private, link-local, loopback, CGNAT, the host's own address (192.0.2.2) and its LAN (192.0.2.0/24),
    and any range covering one of those, are refused unless a permitted range contains the entry."""
    host = {"hostAddresses": ["192.0.2.2"], "hostNetworks": ["192.0.2.0/24"]}
    refused = NetworkPolicy(mode="allowlist", allowHosts=[entry], **host).refused_entries()
    assert [i for i, _, _ in refused] == [0]
    with pytest.raises(Refused, match="BOXWRIGHT_INTERNAL_ALLOW_HOSTS"):
        check_internal(as_sent(mode="allowlist", allowHosts=[entry], **host), {entry: [parse_allow_entry(entry)]})
    wide = ["0.0.0.0/0", "::/0", "192.0.0.0/16"]
    if entry not in wide:
        permits = ["10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.169.254", "fd00::/8", "::ffff:0:0/96",
                   "64:ff9b::/96", "2002::/16", "2001::/32", "192.0.2.0/24"]  # fmt: skip
        assert (
            NetworkPolicy(mode="allowlist", allowHosts=[entry], internalAllowed=permits, **host).refused_entries() == []
        )


def test_public_entries_and_permitted_hostnames_pass() -> None:
    assert NetworkPolicy(mode="allowlist", allowHosts=["203.0.113.7", "8.8.0.0/16", "pypi.org"]).refused_entries() == []
    # A hostname is judged by what it resolves to, unless the operator permits the name itself.
    resolved = {"registry.internal": ["10.9.8.7/32"]}
    with pytest.raises(Refused, match=r"registry.internal \(10.9.8.7/32\) reaches the internal range 10.0.0.0/8"):
        check_internal(as_sent(mode="allowlist", allowHosts=["registry.internal"]), resolved)
    check_internal(
        as_sent(mode="allowlist", allowHosts=["registry.internal"], internalAllowed=["registry.internal"]), resolved
    )
    check_internal(
        as_sent(mode="allowlist", allowHosts=["registry.internal"], internalAllowed=["10.9.0.0/16"]), resolved
    )
