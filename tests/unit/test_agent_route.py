"""Where the host reaches a sandbox's agent: the bridge address when this machine routes there, else the
published loopback port (host.backends.docker_backend.agent_url_of)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from host.backends.docker_backend import agent_url_of, routed_here

NET = "boxwright-ns"


def container(*, port: str | None = "32768", host_ip: str = "127.0.0.1", address: str = "172.21.0.2") -> Any:
    ports = {"8080/tcp": [{"HostIp": host_ip, "HostPort": port}]} if port else {}
    attrs = {"NetworkSettings": {"Networks": {NET: {"IPAddress": address}, "other": {"IPAddress": "10.9.0.2"}}}}
    return SimpleNamespace(ports=ports, attrs=attrs)


def test_the_bridge_address_when_its_subnet_is_attached_here() -> None:
    assert agent_url_of(container(), NET, attached=["10.0.0.0/8", "172.21.0.0/16"]) == "http://172.21.0.2:8080"


@pytest.mark.parametrize(
    "attached",
    [
        [],  # a remote engine: nothing of its is attached here
        ["172.22.0.0/16", "10.9.0.0/16"],  # rootless or VM-hosted: the bridge lives elsewhere
    ],
)
def test_the_published_port_when_the_bridge_is_not_this_machines(attached: list[str]) -> None:
    assert agent_url_of(container(), NET, attached=attached) == "http://127.0.0.1:32768"


def test_the_address_on_the_namespace_network_only() -> None:
    # Attached "10.9.0.0/16" holds the container's address on another network: not the one to use.
    assert agent_url_of(container(address=""), NET, attached=["10.9.0.0/16"]) == "http://127.0.0.1:32768"


def test_nothing_until_the_port_is_published_on_loopback() -> None:
    assert agent_url_of(container(port=None), NET, attached=["172.21.0.0/16"]) is None
    assert agent_url_of(container(host_ip="0.0.0.0"), NET, attached=["172.21.0.0/16"]) is None


@pytest.mark.parametrize(
    ("address", "expected"),
    [("172.21.0.2", True), ("172.22.0.2", False), ("", False), ("junk", False), ("fd00::2", False)],
)
def test_routed_here(address: str, expected: bool) -> None:
    assert routed_here(address, ["172.21.0.0/16", "fd00::/64"]) is expected
