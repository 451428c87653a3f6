"""A server's persistent identity: a random id and a secret, made once in its state dir.

Every sandbox a server starts carries the server's id in its labels and a seal over those labels
(an HMAC under the secret), so a server adopts after a restart only what it provably made — never a
sandbox of another server sharing the engine and namespace. The secret also derives each sandbox's
bearer token (and its code runner's secret), so no secret is stored in a label: a restarted server
recomputes them.

Two processes with the same state dir are the same server (their ownership locks tell them apart
while both run). Servers on several hosts may share one identity (its file copied to each); their locks
cannot see each other, so each host is an *instance* (`machine_instance_id`, or BOXWRIGHT_INSTANCE_ID)
sealed into the labels of what it makes, and a server adopts only its own instance's sandboxes.

The file is `identity.json` (mode 600) in the state dir (mode 700); the server
refuses to use one that others may read.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import secrets
import socket
import stat
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from rpc.envvars import env_name

FILE_NAME = "identity.json"
SERVER_ID_PREFIX = "srv_"
MACHINE_ID_FILES = (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id"))


class IdentityError(RuntimeError):
    """The identity file cannot be made or used safely."""


@dataclass(frozen=True)
class ServerIdentity:
    server_id: str
    secret: bytes = field(repr=False)

    def _mac(self, purpose: str, *parts: str) -> bytes:
        message = "\0".join(("boxwright", purpose, self.server_id, *parts)).encode()
        return hmac.new(self.secret, message, hashlib.sha256).digest()

    def sandbox_token(self, namespace: str, sandbox_id: str) -> str:
        """The bearer token of a sandbox's agent: derived, so it never has to be stored."""
        return base64.urlsafe_b64encode(self._mac("agent-token", namespace, sandbox_id)).decode().rstrip("=")

    def runner_secret(self, namespace: str, sandbox_id: str) -> str:
        """The secret a sandbox's code runner daemon proves itself to the agent with."""
        return base64.urlsafe_b64encode(self._mac("runner-secret", namespace, sandbox_id)).decode().rstrip("=")

    def seal(self, labels: Mapping[str, str], keys: Collection[str]) -> str:
        """A MAC over the labels named in `keys` (sorted `key=value` lines; absent ones left out)."""
        lines = sorted(f"{k}={v}" for k, v in labels.items() if k in keys)
        return self._mac("labels", *lines).hex()

    def sealed(self, labels: Mapping[str, str], seal_key: str, keys: Collection[str]) -> bool:
        """Whether `labels` carry this server's valid seal (under `seal_key`) over the labels in `keys`
        (a container also carries its image's labels, which are not sealed)."""
        found = labels.get(seal_key)
        return bool(found) and hmac.compare_digest(str(found), self.seal(labels, keys))


def load_or_create(state_dir: Path) -> ServerIdentity:
    """The identity of the server whose state dir this is, made on first use. Raises IdentityError."""
    try:
        state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(PermissionError):  # not ours to change: the check below decides
            if stat.S_IMODE(state_dir.stat().st_mode) & 0o077:
                os.chmod(state_dir, 0o700)
        path = state_dir / FILE_NAME
        if not path.exists():
            _create(path)
        return _load(path)
    except OSError as exc:
        raise _unusable(state_dir, exc) from None


def find(state_dir: Path) -> ServerIdentity | None:
    """The identity of this state dir's server if it has one (for tools that must not make one)."""
    path = state_dir / FILE_NAME
    try:
        return _load(path) if path.exists() else None
    except OSError as exc:
        raise _unusable(state_dir, exc) from None


def _unusable(state_dir: Path, exc: OSError) -> IdentityError:
    """A state dir that cannot be made or written (under a file, in /proc, not ours), said in one line."""
    return IdentityError(
        f"cannot use the state dir {state_dir} ({exc.strerror or type(exc).__name__}"
        f"{f': {exc.filename}' if exc.filename and str(exc.filename) != str(state_dir) else ''}): "
        f"set {env_name('state_dir')} to a directory this user can create and write"
    )


def _create(path: Path) -> None:
    data = {"serverId": SERVER_ID_PREFIX + secrets.token_hex(8), "secret": secrets.token_hex(32)}
    tmp = path.with_name(f".{FILE_NAME}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh)
            fh.flush()
            os.fsync(fh.fileno())
        with contextlib.suppress(FileExistsError):  # another process of this state dir made it first
            os.link(tmp, path)
    finally:
        os.unlink(tmp)


def _load(path: Path) -> ServerIdentity:
    info = path.stat()
    if stat.S_IMODE(info.st_mode) & 0o077 or info.st_uid != os.geteuid():
        raise IdentityError(
            f"{path} must belong to this user and be readable by nobody else (chmod 600): its secret "
            "derives every sandbox's token"
        )
    try:
        data = json.loads(path.read_text())
        server_id, secret = str(data["serverId"]), bytes.fromhex(data["secret"])
    except (ValueError, KeyError, TypeError) as exc:
        raise IdentityError(f"{path} is unreadable ({type(exc).__name__}); move it away to make a new one") from None
    if not server_id.startswith(SERVER_ID_PREFIX) or len(secret) < 32:
        raise IdentityError(f"{path} holds no valid identity; move it away to make a new one")
    return ServerIdentity(server_id, secret)


@cache
def machine_instance_id() -> str:
    """A stable id of this machine, for servers that share an identity across hosts: a digest of the machine
    id (never shown itself: it is meant to stay private), else of the hostname. Containers often lack the
    one and change the other: set BOXWRIGHT_INSTANCE_ID there."""
    source = ""
    for path in MACHINE_ID_FILES:
        with contextlib.suppress(OSError):
            source = path.read_text().strip()
        if source:
            break
    source = source or f"host:{socket.gethostname()}"
    return "i_" + hashlib.sha256(f"boxwright-instance\0{source}".encode()).hexdigest()[:12]
