"""A sandbox's /workspace has a size limit the kernel enforces: a write flood stops at it (ENOSPC), the
host's disk holds no more than the limit, and destroying the sandbox gives everything back (loop
device, image file, volume). Both ways of making the filesystem are exercised: by the server itself
(`loop`, it runs as root next to a local engine here) and by a privileged helper container (`helper`,
how a server that is not root, or a remote engine, does it)."""

from __future__ import annotations

import os
from pathlib import Path

import docker
import pytest

from host import labels
from sandbox_image import wsdisk
from tests.integration.conftest import HttpServer, own_env, remove_namespace
from tests.integration.mcp_helpers import http_session

FLOOD = """
start=$(date +%s%N)
dd if=/dev/zero of=/workspace/flood bs=1M count=400 2>dd.err; rc=$?
end=$(date +%s%N)
echo "rc=$rc ms=$(( (end - start) / 1000000 )) mb=$(( $(stat -c %s /workspace/flood) >> 20 ))"
cat dd.err
cat /dev/zero > /workspace/filler 2>/dev/null  # the last blocks dd's 1 MiB writes left
df -m /workspace | tail -1
"""


@pytest.fixture(params=["loop", "helper"])
def limited_server(
    request: pytest.FixtureRequest, server_env: dict, tmp_path: Path, docker_client: docker.DockerClient
):
    if os.geteuid() != 0 and request.param == "loop":
        pytest.skip("the loop mode needs a server running as root")
    env = own_env(
        server_env,
        f"ws-{request.param}",
        tmp_path / "state",
        BOXWRIGHT_WORKSPACE_MB="64",
        BOXWRIGHT_MAX_WORKSPACE_MB="128",
        BOXWRIGHT_WORKSPACE_QUOTA=request.param,
        BOXWRIGHT_WORKSPACE_DIR=str(tmp_path / "workspaces"),
    )
    server = HttpServer(env, tmp_path / "server.log")
    server.workspaces = tmp_path / "workspaces"  # type: ignore[attr-defined]
    yield server
    server.stop()
    remove_namespace(docker_client, env["BOXWRIGHT_NAMESPACE"])


def direct_io(device: str) -> bool:
    return Path(f"/sys/block/{Path(device).name}/loop/dio").read_text().strip() == "1"


def images_of(directory: Path, sandbox_id: str) -> list[Path]:
    return list(directory.glob(f"*/{sandbox_id}.img"))


async def test_a_write_flood_stops_at_the_workspace_limit(
    limited_server: HttpServer, docker_client: docker.DockerClient
) -> None:
    workspaces: Path = limited_server.workspaces  # type: ignore[attr-defined]
    async with http_session(limited_server.url) as s:
        box = await s.ok("sandbox_create")
        sid = box["sandboxId"]
        try:
            out = (await s.ok("code_run", {"language": "bash", "code": FLOOD, "timeoutMs": 120_000}))["stdout"]
            print(out)  # the measurement: how long the flood ran until the kernel stopped it
            first = dict(kv.split("=") for kv in out.splitlines()[0].split())
            assert first["rc"] != "0" and "No space left on device" in out, out
            assert int(first["mb"]) <= 64, out  # nothing beyond the limit was written
            assert box["workspaceMb"] == 64
            [image] = images_of(workspaces, sid)
            held = image.stat()
            assert held.st_blocks * 512 <= 64 << 20  # what it holds of the host's disk
            [device] = wsdisk.devices_backed_by(held.st_dev, held.st_ino)
            # Direct I/O (LOOP_CONFIGURE's flag, or the older kernels' second ioctl): no second page-cache copy.
            assert direct_io(device)
            full = await s.error("file_write", {"path": "more.txt", "content": "x" * 100_000})
            assert "no space left" in full.data["error"].lower(), full.text
            # Freeing space inside works again (and gives it back to the host: discard).
            await s.ok("code_run", {"language": "bash", "code": "rm /workspace/flood"})
            await s.ok("file_write", {"path": "more.txt", "content": "x" * 100_000})
            too_big = await s.error("sandbox_create", {"workspaceMb": 1024})
            assert too_big.code == "INVALID_PARAMETER" and "BOXWRIGHT_MAX_WORKSPACE_MB" in too_big.data["recoverHint"]
        finally:
            await s.ok("sandbox_destroy", {"sandboxId": sid})
    assert images_of(workspaces, sid) == []
    assert wsdisk.devices_backed_by(held.st_dev, held.st_ino) == []  # its loop device is released too
    assert docker_client.volumes.list(filters={"label": f"{labels.SANDBOX}={sid}"}) == []
