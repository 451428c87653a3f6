"""The profile store (seed 004 §2.3–2.5): per owner and profile, `state.json` (a Playwright storageState)
and `meta.json` ({profileId, version, updatedAt, writerId, checksum}), plus `login.lock`,
`publish.lock` and `tmp/`.

- First use creates the profile with version 0 and an empty state (TC-06), directories 700 and files
  600 (TC-16).
- A publish is a compare-and-set on the version, under publish.lock: it goes through only if the
  profile is still at the version the writer started from; otherwise it is dropped and logged, so a
  stale writer never overwrites newer state (TC-14). A state identical to the current one is not a
  new version. Authoritative writers (a running login, an import) publish on top of whatever is
  there.
- state.json is written before meta.json, each atomically; a reader checks the state against the
  meta's checksum and reads again if a publish came in between.
- State and cookie values are never logged: logs name the owner, profile, versions and writer.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import socket
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from host.config import Settings
from host.profiles.files import ensure_dir, write_atomic
from host.profiles.locks import LoginLock, publish_lock
from host.profiles.paths import ProfilePaths
from rpc.errors import BoxwrightError, ErrorCode, from_validation_error
from rpc.models.profiles import (
    EMPTY_STATE,
    MAX_STATE_BYTES,
    ProfileMeta,
    ProfileSummary,
    StorageState,
    state_too_large,
)

log = logging.getLogger("boxwright.profiles")

STATE_FILE = "state.json"
META_FILE = "meta.json"
LOGIN_LOCK = "login.lock"
PUBLISH_LOCK = "publish.lock"
# In an owner's directory: held while a new profile is counted against the limit and made.
CREATE_LOCK = ".create.lock"
TMP_DIR = "tmp"
# A read that meets a publish between its two renames reads again (with a growing pause), and after
# that many tries waits for publish.lock instead (longer than a publish would: reading is not urgent).
READ_ATTEMPTS = 8
READ_LOCK_TIMEOUT_S = 5.0


def writer_id(what: str) -> str:
    """host/pid/what: enough to tell in meta.json which process and which job published."""
    return f"{socket.gethostname()}/{os.getpid()}/{what}"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def encode_state(state: dict[str, Any]) -> bytes:
    """The bytes of state.json: canonical (sorted keys), so equal states have equal checksums."""
    return json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _state_bytes(state: dict[str, Any], profile_id: str) -> bytes:
    data = encode_state(state)
    if len(data) > MAX_STATE_BYTES:
        raise state_too_large(len(data), MAX_STATE_BYTES, profileId=profile_id)
    return data


def checksum(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Snapshot:
    meta: ProfileMeta
    state: dict[str, Any] = field(repr=False)

    @property
    def version(self) -> int:
        return self.meta.version


@dataclass(frozen=True)
class PublishOutcome:
    outcome: Literal["published", "unchanged", "stale"]
    version: int  # the profile's version afterwards
    base_version: int | None

    @property
    def published(self) -> bool:
        return self.outcome == "published"


def parse_state(data: Any, source: str) -> dict[str, Any]:
    """A storageState (dict) checked for its shape; INVALID_PARAMETER naming what is wrong, never values."""
    try:
        return StorageState.model_validate(data).model_dump(mode="json")
    except ValidationError as exc:
        raise from_validation_error(
            exc,
            f"{source} is not a Playwright storageState",
            hint="export one with context.storage_state() (any Playwright tool), or `boxwright profile export`",
        ) from None


class ProfileStore:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.paths = ProfilePaths(settings.profiles_root, settings.profile_id_regex)
        self.dir_mode = int(settings.snapshot_dir_permission, 8)
        self.file_mode = int(settings.snapshot_file_permission, 8)
        self.lock_timeout_s = settings.snapshot_publish_lock_timeout_ms / 1000

    # -- layout ------------------------------------------------------------------------------
    def _dir(self, owner: str, profile_id: str) -> Path:
        return self.paths.profile_dir(owner, profile_id)  # validates both before anything is built

    def exists(self, owner: str, profile_id: str) -> bool:
        return (self._dir(owner, profile_id) / META_FILE).is_file()

    def ensure(self, owner: str, profile_id: str) -> Path:
        """The profile's directory, created on first use with version 0 (seed §2.4.3)."""
        path = self._dir(owner, profile_id)
        if (path / META_FILE).is_file() and (path / TMP_DIR).is_dir():
            return path
        self.paths.root.mkdir(parents=True, exist_ok=True, mode=self.dir_mode)
        os.chmod(self.paths.root, self.dir_mode)
        ensure_dir(path.parent, self.dir_mode)
        if (path / META_FILE).is_file():
            return self._made(path, owner, profile_id)
        # Counted and made under the owner's lock: two new profiles at once (two runs, two servers on one
        # root) could otherwise each find room for one and both be made.
        with publish_lock(
            path.parent / CREATE_LOCK, timeout_s=self.lock_timeout_s, mode=self.file_mode, profile_id=profile_id
        ):
            if not (path / META_FILE).is_file():
                self.check_room(owner, profile_id)
            return self._made(path, owner, profile_id)

    def _made(self, path: Path, owner: str, profile_id: str) -> Path:
        """The profile's directory and its version 0, whichever of them is missing."""
        ensure_dir(path, self.dir_mode)
        ensure_dir(path / TMP_DIR, self.dir_mode)
        with self._publish_lock(path, profile_id):
            if not (path / META_FILE).is_file():
                data = encode_state(EMPTY_STATE)
                meta = ProfileMeta(
                    profileId=profile_id,
                    version=0,
                    updatedAt=now_iso(),
                    writerId=writer_id("init"),
                    checksum=checksum(data),
                )
                self._write(path, data, meta)
                log.info("profile %s/%s created (version 0)", owner, profile_id)
        return path

    def check_room(self, owner: str, profile_id: str) -> None:
        """Profiles are made by naming them (first use), so one owner could make any number of directories;
        the default profile is always there to be made (every scrape reads it)."""
        limit = self.settings.max_profiles_per_owner
        if profile_id == self.settings.default_profile_id:
            return
        used = len([p for p in self._profile_ids(owner) if p != self.settings.default_profile_id])
        if used >= limit:
            raise BoxwrightError(
                ErrorCode.QUOTA_EXCEEDED,
                f"you have {used} login profiles, the most one owner may have ({limit}); {profile_id!r} was not made",
                hint="delete profiles you no longer need (profile_delete), or use one you have (profile_list)",
                details={"resource": "profiles", "limit": limit, "used": used, "profileId": profile_id},
            )

    def login_lock(self, owner: str, profile_id: str) -> LoginLock:
        path = self.ensure(owner, profile_id)
        return LoginLock(path / LOGIN_LOCK, profile_id, self.file_mode)

    def _publish_lock(self, path: Path, profile_id: str) -> AbstractContextManager[None]:
        lock = path / PUBLISH_LOCK
        return publish_lock(lock, timeout_s=self.lock_timeout_s, mode=self.file_mode, profile_id=profile_id)

    def _write(self, path: Path, data: bytes, meta: ProfileMeta) -> None:
        tmp = path / TMP_DIR
        write_atomic(path / STATE_FILE, data, tmp_dir=tmp, mode=self.file_mode)
        write_atomic(path / META_FILE, meta.model_dump_json(indent=2).encode(), tmp_dir=tmp, mode=self.file_mode)

    # -- reading -----------------------------------------------------------------------------
    @staticmethod
    def _read_meta(path: Path) -> ProfileMeta:
        try:
            return ProfileMeta.model_validate_json((path / META_FILE).read_bytes())
        except FileNotFoundError:
            raise ProfileStore.not_found(path.name) from None  # removed while it was being read
        except ValidationError:
            raise damaged(path.name, "meta.json is not a profile's metadata") from None

    def _read_consistent(self, path: Path) -> tuple[ProfileMeta, bytes] | None:
        meta = self._read_meta(path)
        try:
            data = (path / STATE_FILE).read_bytes()
        except FileNotFoundError:
            raise self.not_found(path.name) from None
        return (meta, data) if checksum(data) == meta.checksum else None

    def read(self, owner: str, profile_id: str) -> Snapshot:
        """The latest snapshot (creating the profile on first use)."""
        path = self.ensure(owner, profile_id)
        for attempt in range(READ_ATTEMPTS):
            found = self._read_consistent(path)
            if found is not None:
                break
            time.sleep(0.002 * 2**attempt)  # a publish is between its two renames
        else:
            lock = path / PUBLISH_LOCK
            with publish_lock(lock, timeout_s=READ_LOCK_TIMEOUT_S, mode=self.file_mode, profile_id=profile_id):
                found = self._read_consistent(path)
            if found is None:
                raise damaged(profile_id, "state.json does not match meta.json's checksum")
        meta, data = found
        try:
            return Snapshot(meta, json.loads(data))
        except ValueError:
            raise damaged(profile_id, "state.json is not JSON") from None

    def current_version(self, owner: str, profile_id: str) -> int:
        return self._read_meta(self.ensure(owner, profile_id)).version

    # -- publishing --------------------------------------------------------------------------
    def publish(
        self, owner: str, profile_id: str, state: dict[str, Any], *, base_version: int | None, writer: str
    ) -> PublishOutcome:
        """Compare-and-set on `base_version` (None: authoritative, on top of the current version)."""
        data = _state_bytes(state, profile_id)
        if base_version and not self.exists(owner, profile_id):  # from version 0 a publish may make it: first use
            log.warning("profile %s/%s: publish by %s dropped: the profile was deleted", owner, profile_id, writer)
            return PublishOutcome("stale", 0, base_version)  # not made again by a session opened before
        path = self.ensure(owner, profile_id)
        digest = checksum(data)
        with self._publish_lock(path, profile_id):
            try:
                current = self._read_meta(path)
            except BoxwrightError as exc:
                if base_version is not None or not exc.details.get("damaged"):
                    raise
                log.warning("profile %s/%s: %s; replaced by %s", owner, profile_id, exc.message, writer)
                current = ProfileMeta(profileId=profile_id, version=0, updatedAt="", writerId="", checksum="")
            if base_version is not None and current.version != base_version:
                log.warning(
                    "profile %s/%s: stale publish by %s dropped (it started from version %d, the profile is at %d)",
                    owner, profile_id, writer, base_version, current.version,
                )  # fmt: skip
                return PublishOutcome("stale", current.version, base_version)
            if current.checksum == digest:
                return PublishOutcome("unchanged", current.version, base_version)
            meta = ProfileMeta(
                profileId=profile_id, version=current.version + 1, updatedAt=now_iso(), writerId=writer, checksum=digest
            )
            self._write(path, data, meta)
        log.info("profile %s/%s: version %d published by %s", owner, profile_id, meta.version, writer)
        return PublishOutcome("published", meta.version, base_version)

    def import_state(self, owner: str, profile_id: str, data: Any, *, writer: str) -> PublishOutcome:
        """A storageState from any Playwright tool, published as the newest version (not during a login)."""
        state = parse_state(data, "the file")
        _state_bytes(state, profile_id)  # before login_lock makes the profile
        lock = self.login_lock(owner, profile_id)
        with lock:
            return self.publish(owner, profile_id, state, base_version=None, writer=writer)

    # -- listing and removal -----------------------------------------------------------------
    def _summary(self, owner: str, profile_id: str, path: Path) -> ProfileSummary:
        snapshot = self.read(owner, profile_id)
        try:
            state = StorageState.model_validate(snapshot.state)
        except ValidationError:
            raise damaged(profile_id, "state.json is not a storageState") from None
        return ProfileSummary(
            **snapshot.meta.model_dump(),
            cookieCount=len(state.cookies),
            originCount=len(state.origins),
            cookieDomains=state.cookie_domains(),
            loginInProgress=LoginLock(path / LOGIN_LOCK, profile_id, self.file_mode).is_held(),
        )

    def _listed(self, owner: str, profile_id: str) -> ProfileSummary | None:
        """A profile as list shows it: a damaged one is listed as damaged (one broken file must not hide
        the others), one removed meanwhile is not."""
        path = self._dir(owner, profile_id)
        try:
            return self._summary(owner, profile_id, path)
        except BoxwrightError as exc:
            if exc.code is ErrorCode.PROFILE_NOT_FOUND:
                return None
            if not exc.details.get("damaged"):
                raise
            return ProfileSummary(
                profileId=profile_id,
                version=0,
                updatedAt="",
                writerId="",
                checksum="",
                cookieCount=0,
                originCount=0,
                cookieDomains=[],
                loginInProgress=LoginLock(path / LOGIN_LOCK, profile_id, self.file_mode).is_held(),
                damaged=exc.message,
            )

    def summary(self, owner: str, profile_id: str) -> ProfileSummary:
        path = self._dir(owner, profile_id)
        if not (path / META_FILE).is_file():
            raise self.not_found(profile_id)
        return self._summary(owner, profile_id, path)

    def _profile_ids(self, owner: str) -> list[str]:
        owner_dir = self.paths.owner_dir(owner)
        if not owner_dir.is_dir():
            return []
        found = []
        for path in sorted(owner_dir.iterdir()):
            try:
                self.paths.profile_dir(owner, path.name)
            except BoxwrightError:
                continue  # not one of ours
            if (path / META_FILE).is_file():
                found.append(path.name)
        return found

    def list(self, owner: str) -> list[ProfileSummary]:
        return [summary for name in self._profile_ids(owner) if (summary := self._listed(owner, name)) is not None]

    def remove(self, owner: str, profile_id: str) -> None:
        path = self._dir(owner, profile_id)
        if not (path / META_FILE).is_file():
            raise self.not_found(profile_id)
        with LoginLock(path / LOGIN_LOCK, profile_id, self.file_mode), self._publish_lock(path, profile_id):
            shutil.rmtree(path)
        log.info("profile %s/%s removed", owner, profile_id)

    @staticmethod
    def not_found(profile_id: str) -> BoxwrightError:
        return BoxwrightError(
            ErrorCode.PROFILE_NOT_FOUND, f"no login profile {profile_id!r}", details={"profileId": profile_id}
        )


def damaged(profile_id: str, why: str) -> BoxwrightError:
    """A profile whose files cannot be read back (edited by hand, a disk fault): only new state mends it."""
    return BoxwrightError(
        ErrorCode.INTERNAL_ERROR,
        f"profile {profile_id!r} is damaged: {why}",
        hint="import a fresh state (`boxwright profile import`), log in again (`boxwright login`), or delete it",
        details={"profileId": profile_id, "damaged": True},
    )
