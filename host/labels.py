"""Docker labels: the durable record of each sandbox. The host writes them when it starts a sandbox,
rebuilds its table from them after a restart, and `boxwright ls` shows them — all through the one
codec here (`encode` / `decode`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from host.sandboxes.models import SandboxRecord

PREFIX = "io.boxwright."
SANDBOX = PREFIX + "sandbox"  # sandbox id; marks every Boxwright container and volume
NAMESPACE = PREFIX + "namespace"
OWNER = PREFIX + "owner"
NAME = PREFIX + "name"
CREATED_AT = PREFIX + "created-at"  # epoch seconds
EXPIRES_AT = PREFIX + "expires-at"  # epoch seconds
TOKEN = PREFIX + "token"  # per-sandbox bearer token; never logged, never returned by a tool
IMAGE = PREFIX + "image"
SCHEMA = PREFIX + "label-schema"
SCHEMA_VERSION = "1"
NETWORK = PREFIX + "network"  # the sandbox's network mode: public | none | allowlist
ALLOW_HOSTS = PREFIX + "allow-hosts"  # with mode allowlist: the entries, comma-separated
ROLE = PREFIX + "role"  # on helper containers that are not sandboxes (the network guard)
JOB = PREFIX + "job"  # on a throw-away sandbox made for one job (a template run): the job's id
# "1" on a sandbox started for the warm pool: its owner, name, TTL and token are set when it is claimed
# and kept in the state dir (host.sandboxes.overlay), since labels cannot change.
POOL = PREFIX + "pool"


@dataclass(frozen=True)
class SandboxLabels:
    """What a sandbox's labels say; None where a label is missing or unreadable (another version,
    or edited by hand)."""

    sandbox_id: str
    owner: str | None
    name: str | None
    image: str | None
    token: str | None = field(repr=False)
    created_at: datetime | None
    expires_at: datetime | None
    network: str | None  # absent on sandboxes from before network modes
    allow_hosts: tuple[str, ...]
    job: str | None = None  # set on throw-away sandboxes made for a job
    pooled: bool = False  # started for the warm pool (host.sandboxes.pool)


def encode(rec: SandboxRecord, namespace: str) -> dict[str, str]:
    out = {
        SANDBOX: rec.id,
        NAMESPACE: namespace,
        OWNER: rec.owner,
        CREATED_AT: str(int(rec.created_at.timestamp())),
        EXPIRES_AT: str(int(rec.expires_at.timestamp())),
        TOKEN: rec.token,
        IMAGE: rec.image,
        SCHEMA: SCHEMA_VERSION,
        NETWORK: rec.network,
    }
    if rec.name:
        out[NAME] = rec.name
    if rec.allow_hosts:
        out[ALLOW_HOSTS] = ",".join(rec.allow_hosts)
    if rec.job:
        out[JOB] = rec.job
    if rec.pooled:
        out[POOL] = "1"
    return out


def decode(labels: Mapping[str, str]) -> SandboxLabels:
    return SandboxLabels(
        sandbox_id=labels.get(SANDBOX, ""),
        owner=labels.get(OWNER),
        name=labels.get(NAME),
        image=labels.get(IMAGE),
        token=labels.get(TOKEN),
        created_at=_moment(labels.get(CREATED_AT)),
        expires_at=_moment(labels.get(EXPIRES_AT)),
        network=labels.get(NETWORK),
        allow_hosts=tuple(h for h in labels.get(ALLOW_HOSTS, "").split(",") if h),
        job=labels.get(JOB),
        pooled=labels.get(POOL) == "1",
    )


def _moment(epoch: str | None) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(epoch), UTC) if epoch else None
    except (ValueError, OverflowError, OSError):
        return None
