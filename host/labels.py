"""Docker labels: the durable record of each sandbox. The host writes them when it starts a sandbox,
rebuilds its table from them after a restart, and `boxwright ls` shows them — all through the one
codec here (`encode` / `decode`).

Labels hold no secret (they show in `docker inspect` and `docker events`): the sandbox's token is
derived from the server's secret (host.identity). They name the server that made the sandbox and
carry its seal (a MAC over all the other labels), which is how a server knows what it may adopt.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from host.identity import ServerIdentity
    from host.sandboxes.models import SandboxRecord

PREFIX = "io.boxwright."
SANDBOX = PREFIX + "sandbox"  # sandbox id; marks every Boxwright container and volume
NAMESPACE = PREFIX + "namespace"
SERVER = PREFIX + "server"  # id of the server that made it (host.identity)
# Its instance: which host of the servers sharing that identity made it (Settings.instance); absent on
# sandboxes from before instances, which any instance of the server may adopt.
INSTANCE = PREFIX + "instance"
SEAL = PREFIX + "seal"  # that server's MAC over all the other labels
OWNER = PREFIX + "owner"
NAME = PREFIX + "name"
CREATED_AT = PREFIX + "created-at"  # epoch seconds
EXPIRES_AT = PREFIX + "expires-at"  # epoch seconds
IMAGE = PREFIX + "image"
SCHEMA = PREFIX + "label-schema"
SCHEMA_VERSION = "2"  # 1: before server identities (the token was a label)
NETWORK = PREFIX + "network"  # the sandbox's network mode: public | none | allowlist
ALLOW_HOSTS = PREFIX + "allow-hosts"  # with mode allowlist: the entries, comma-separated
WORKSPACE_MB = PREFIX + "workspace-mb"  # the workspace's size limit (absent: none)
MEMORY_BYTES = PREFIX + "memory-bytes"  # its memory limit as started (absent on older sandboxes)
CPUS = PREFIX + "cpus"  # its CPU limit as started (absent on older sandboxes)
ROLE = PREFIX + "role"  # on helper containers that are not sandboxes (the network guard)
# On a pooled sandbox: the process that took it (SandboxBackend.try_claim; not sealed, written after the
# start — on swarm by a versioned label update, so of several servers exactly one gets it).
CLAIMED_BY = PREFIX + "claimed-by"
JOB = PREFIX + "job"  # on a throw-away sandbox made for one job (a template run): the job's id
# On a swarm sandbox's service: the id its image tag named on every sandbox node when it was created (not
# sealed: a backend's note, read only to tell pooled sandboxes of an old image; the docker backend asks
# the container instead).
IMAGE_ID = PREFIX + "image-id"
# "1" on a sandbox started for the warm pool: its owner, name, TTL and token are set when it is claimed
# and kept in the state dir (host.sandboxes.overlay), since labels cannot change.
POOL = PREFIX + "pool"
# What the seal covers: every label `encode` writes but the seal itself.
SEALED = frozenset(
    {
        SANDBOX,
        NAMESPACE,
        SERVER,
        INSTANCE,
        OWNER,
        NAME,
        CREATED_AT,
        EXPIRES_AT,
        IMAGE,
        SCHEMA,
        NETWORK,
        ALLOW_HOSTS,
        JOB,
        WORKSPACE_MB,
        MEMORY_BYTES,
        CPUS,
        POOL,
    }
)


@dataclass(frozen=True)
class SandboxLabels:
    """What a sandbox's labels say; None where a label is missing or unreadable (another version,
    or edited by hand)."""

    sandbox_id: str
    server_id: str | None  # absent on sandboxes from before server identities (schema 1)
    owner: str | None
    name: str | None
    image: str | None
    created_at: datetime | None
    expires_at: datetime | None
    network: str | None  # absent on sandboxes from before network modes
    allow_hosts: tuple[str, ...]
    job: str | None = None  # set on throw-away sandboxes made for a job
    pooled: bool = False  # started for the warm pool (host.sandboxes.pool)
    workspace_mb: int | None = None
    memory_bytes: int | None = None
    cpus: float | None = None


def encode(rec: SandboxRecord, namespace: str, identity: ServerIdentity, instance: str | None = None) -> dict[str, str]:
    out = {
        SANDBOX: rec.id,
        NAMESPACE: namespace,
        SERVER: identity.server_id,
        OWNER: rec.owner,
        CREATED_AT: str(int(rec.created_at.timestamp())),
        EXPIRES_AT: str(int(rec.expires_at.timestamp())),
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
    if rec.workspace_mb:
        out[WORKSPACE_MB] = str(rec.workspace_mb)
    if rec.memory_bytes:
        out[MEMORY_BYTES] = str(rec.memory_bytes)
    if rec.cpus:
        out[CPUS] = repr(rec.cpus)
    if instance:
        out[INSTANCE] = instance
    assert SEALED.issuperset(out), "a new label must be added to SEALED"
    out[SEAL] = identity.seal(out, SEALED)
    return out


def made_by(labels: Mapping[str, str], identity: ServerIdentity) -> bool:
    """Whether `identity`'s server made this sandbox: its id is named and its seal verifies."""
    return labels.get(SERVER) == identity.server_id and identity.sealed(labels, SEAL, SEALED)


def adoptable(labels: Mapping[str, str], identity: ServerIdentity, instances: Collection[str]) -> bool:
    """Whether a server of `identity` running as one of `instances` (its own, and the peers it was told
    to adopt for) may adopt or reap this sandbox: made by the identity, and by one of those instances
    (or before instances existed). Servers on several hosts sharing an identity thus leave each
    other's sandboxes alone."""
    instance = labels.get(INSTANCE)
    return made_by(labels, identity) and (instance is None or instance in instances)


def decode(labels: Mapping[str, str]) -> SandboxLabels:
    return SandboxLabels(
        sandbox_id=labels.get(SANDBOX, ""),
        server_id=labels.get(SERVER),
        owner=labels.get(OWNER),
        name=labels.get(NAME),
        image=labels.get(IMAGE),
        created_at=_moment(labels.get(CREATED_AT)),
        expires_at=_moment(labels.get(EXPIRES_AT)),
        network=labels.get(NETWORK),
        allow_hosts=tuple(h for h in labels.get(ALLOW_HOSTS, "").split(",") if h),
        job=labels.get(JOB),
        pooled=labels.get(POOL) == "1",
        workspace_mb=int(labels[WORKSPACE_MB]) if labels.get(WORKSPACE_MB, "").isdigit() else None,
        memory_bytes=int(labels[MEMORY_BYTES]) if labels.get(MEMORY_BYTES, "").isdigit() else None,
        cpus=_positive(labels.get(CPUS)),
    )


def _positive(number: str | None) -> float | None:
    try:
        value = float(number) if number else None
    except ValueError:
        return None
    return value if value is not None and 0 < value < float("inf") else None


def _moment(epoch: str | None) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(epoch), UTC) if epoch else None
    except (ValueError, OverflowError, OSError):
        return None
