"""How a sandbox gets a size-limited /workspace (sandbox_image.wsdisk: its own ext4 filesystem on a loop
device, so the kernel stops writes at the size). Loop devices need root on the engine's host:

- `loop`: this process does it — it runs as root next to a local engine (no helper container);
- `helper`: a short-lived container of the sandbox image does it on the engine's host (for a server
  that is not root, or a remote engine). It runs only Boxwright's own `wsdisk` module as root with
  CAP_SYS_ADMIN and CAP_MKNOD (nothing else), the loop devices, no network, a read-only root and the
  images directory as its only mount, and is removed at once;
- `off`: no limit — the workspace is a plain volume on the engine's disk.

`auto` (the default) picks `loop` when it can, else `helper`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Literal

import docker
import docker.errors

from host import labels
from rpc.errors import BoxwrightError, ErrorCode
from sandbox_image import wsdisk

log = logging.getLogger(__name__)

QuotaMode = Literal["auto", "loop", "helper", "off"]
HELPER_CMD = ["python3", "-m", "sandbox_image.wsdisk"]
HELPER_TIMEOUT_S = 60
HELPER_SWEEP_EVERY_S = 600.0  # a sweep through the helper starts a container: not on every reaper pass
OFF_HINT = "set BOXWRIGHT_WORKSPACE_QUOTA=off to run sandboxes without a workspace size limit"


class WorkspaceDisks:
    def __init__(
        self,
        client: docker.DockerClient,
        mode: QuotaMode,
        root: Path,
        *,
        engine_is_local: bool,
        image: str,
        namespace: str,
    ) -> None:
        if mode == "auto":
            mode = "loop" if os.geteuid() == 0 and engine_is_local else "helper"
        self.mode = mode
        self.client = client
        self.root = root
        self.image = image
        self.namespace = namespace
        self._swept_at: float | None = None

    @property
    def limited(self) -> bool:
        return self.mode != "off"

    def prepare(self, server_id: str, sandbox_id: str, size_mb: int) -> dict[str, str]:
        """The volume driver options of a fresh size-limited workspace (empty when `off`)."""
        if self.mode == "off":
            return {}
        try:
            if self.mode == "loop":
                device = wsdisk.make(self.root, server_id, sandbox_id, size_mb)
            else:
                device = self._helper("make", str(self.root), server_id, sandbox_id, str(size_mb))
        except (RuntimeError, OSError) as exc:
            raise BoxwrightError(
                ErrorCode.SANDBOX_START_FAILED,
                f"cannot make the sandbox's size-limited workspace ({self.mode}): {str(exc)[:300]}",
                hint=OFF_HINT,
                details={"workspaceQuota": self.mode},
            ) from exc
        return {"type": "ext4", "device": device, "o": wsdisk.MOUNT_OPTIONS}

    def free(self, sandbox_id: str) -> None:
        """Detach and delete the sandbox's workspace image (after its volume is gone)."""
        if self.mode == "off":
            return
        try:
            if self.mode == "loop":
                wsdisk.free(self.root, sandbox_id)
            else:
                self._helper("free", str(self.root), sandbox_id)
        except (RuntimeError, OSError) as exc:  # the next sweep tries again
            log.warning("could not free the workspace of %s: %s", sandbox_id, exc)

    def sweep(self, server_id: str, live: set[str], grace_s: float) -> None:
        """Free images left by sandboxes that are gone (a server killed half-way, a removal that failed)."""
        if self.mode == "off" or (self.mode == "loop" and not self.root.exists()):
            return
        now = time.monotonic()
        if self.mode == "helper" and self._swept_at is not None and now - self._swept_at < HELPER_SWEEP_EVERY_S:
            return
        self._swept_at = now
        try:
            if self.mode == "loop":
                freed = wsdisk.sweep(self.root, server_id, live, grace_s)
            else:
                freed = json.loads(self._helper("sweep", str(self.root), server_id, str(grace_s), *live))
        except (RuntimeError, OSError, ValueError) as exc:
            log.warning("workspace sweep failed: %s", exc)
            return
        for sid in freed:
            log.info("freed the leftover workspace of %s", sid)

    def _helper(self, *args: str) -> str:
        """Run wsdisk in a privileged throw-away container on the engine's host; its stdout, or RuntimeError."""
        root = str(self.root)
        kwargs: dict[str, Any] = {
            "detach": True,
            "user": "root",
            # Loop devices and nothing more: CAP_SYS_ADMIN for their ioctls, CAP_MKNOD for the /dev/loopN
            # node, the control device and block major 7 (not --privileged, which also grants the rest).
            "cap_drop": ["ALL"],
            "cap_add": ["SYS_ADMIN", "MKNOD"],
            "devices": ["/dev/loop-control:/dev/loop-control:rwm"],
            "device_cgroup_rules": ["b 7:* rwm"],
            "security_opt": ["no-new-privileges:true"],
            "network_mode": "none",
            "read_only": True,
            "tmpfs": {"/tmp": "rw,size=16m"},
            "volumes": {root: {"bind": root, "mode": "rw"}},
            "labels": {labels.NAMESPACE: self.namespace, labels.ROLE: "wsdisk"},
            "mem_limit": "256m",
            "pids_limit": 64,
        }
        try:
            helper = self.client.containers.run(self.image, [*HELPER_CMD, *args], **kwargs)
        except docker.errors.DockerException as exc:
            raise RuntimeError(f"cannot start the workspace helper: {str(exc)[:200]}") from exc
        try:
            status = helper.wait(timeout=HELPER_TIMEOUT_S).get("StatusCode", -1)
            out = helper.logs(stdout=True, stderr=False).decode("utf-8", "replace").strip()
            err = helper.logs(stdout=False, stderr=True).decode("utf-8", "replace").strip()
        except Exception as exc:  # requests' timeout or the engine failing mid-way
            raise RuntimeError(f"the workspace helper did not finish: {exc}") from exc
        finally:
            with contextlib.suppress(docker.errors.DockerException):
                helper.remove(force=True)
        if status != 0:
            raise RuntimeError(err[-300:] or f"exit {status}")
        return out
