"""`boxwright` on bad arguments and refusals: one clear line and a non-zero status, never a traceback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import docker.errors
import pytest

from host.cli import main
from host.mcp import stdio

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def own_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [k for k in os.environ if k.startswith("BOXWRIGHT_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("BOXWRIGHT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("BOXWRIGHT_NAMESPACE", "unit-cli")


@pytest.mark.parametrize("port", ["99999", "-1", "0", "abc"])
def test_a_port_out_of_range_is_a_usage_error(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--http", f"--port={port}"])
    assert exited.value.code == 2
    assert "--port" in capsys.readouterr().err


def test_a_port_in_use_is_one_line_before_anything_starts(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--http", "--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert f"error: cannot serve on 127.0.0.1:{port}: " in err and "in use" in err.lower()
    assert "Traceback" not in err


class _NotASwarm:
    """What a swarm backend meets on an engine that is no swarm manager."""

    def list_sandboxes(self, namespace: str) -> list[object]:
        raise docker.errors.APIError(
            "503 Server Error: Service Unavailable",
            explanation='This node is not a swarm manager. Use "docker swarm init" or "docker swarm join".',
        )


def test_an_engine_refusal_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ls", "--backend", "swarm"], make_backend=lambda _: _NotASwarm()) == 1  # type: ignore[arg-type,return-value]
    err = capsys.readouterr().err
    assert err.startswith("error: the Docker engine refused: This node is not a swarm manager.")
    assert len(err.strip().splitlines()) == 1


def test_doctor_reports_bad_settings_as_its_first_check(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BOXWRIGHT_IMAGE", "Bad Image!!")
    assert main(["doctor"]) == 2
    out = capsys.readouterr().out
    assert out.startswith("[FAIL] settings: BOXWRIGHT_IMAGE") and "not a Docker image reference" in out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--network", "allowlist"], "--network allowlist needs at least one --allow-host"),
        (["--network", "public", "--allow-host", "example.com"], "--allow-host applies only to --network allowlist"),
        (["--allow-host", "not a host!"], "error: --allow-host: "),
    ],
)
def test_login_with_an_unusable_network_is_a_usage_error(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["login", "--no-browser", *args]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_rm_without_ids_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    def no_backend(_: object) -> object:
        raise AssertionError("nothing to remove: no engine is reached")

    assert main(["rm"], make_backend=no_backend) == 2  # type: ignore[arg-type]
    assert "name the sandboxes to remove" in capsys.readouterr().err


SERVER = """
import anyio
from mcp.server.mcpserver import MCPServer
from host.mcp import stdio

anyio.run(stdio.serve, MCPServer("t"))
"""


def test_serve_with_stdin_at_the_null_device_ends_at_once() -> None:
    """epoll refuses /dev/null: the pipe transport failed in a callback and the server waited for ever."""
    with open(os.devnull, "rb") as null:
        assert not stdio._streamable(null.fileno())
    done = subprocess.run(
        [sys.executable, "-c", SERVER], cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, timeout=30
    )
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr.decode()
