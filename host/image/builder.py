"""Build the sandbox image, and rebuild it only when its inputs changed.

``ensure_image`` is what ``sandbox_create`` and the test fixtures call: cheap when the image is
current (one inspect + hashing a few dozen files), a cached rebuild of the code layers when the
source changed, a full build when there is no image. ``build_image`` is ``boxwright image build``.
Progress goes to a callback line by line; the CLI prints it to stderr (stdout is MCP's channel).
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests

from host.config import Settings

from .base_image import image_exists, resolve_base_image
from .build_context import DOCKERFILE, current_source_hash, find_ca_bundle, pack_context, repo_root
from .errors import IMAGE_BUILD_FAILED, IMAGE_NOT_FOUND, ImageBuildError
from .source_hash import HASH_LABEL

BASE_LABEL = "io.boxwright.base-image"

Progress = Callable[[str], None]

_LOG_TAIL_LINES = 40
_process_lock = threading.Lock()


@dataclass(frozen=True)
class ImageStatus:
    """What ``boxwright doctor`` shows about the image."""

    tag: str
    exists: bool
    image_hash: str | None  # our label on the image; None if absent or not built by Boxwright
    source_hash: str | None  # hash of the checkout; None without a source checkout
    user_supplied: bool = False  # named by the image setting and not built by Boxwright: used as is

    @property
    def current(self) -> bool:
        if not self.exists:
            return False
        return self.user_supplied or self.source_hash is None or self.image_hash == self.source_hash


def image_status(client: docker.DockerClient, settings: Settings) -> ImageStatus:
    """Whether the image exists and matches the source, without building anything."""
    tag = settings.image
    try:
        labels = client.images.get(tag).labels or {}
        exists = True
    except docker.errors.ImageNotFound:
        labels, exists = {}, False
    try:
        src: str | None = current_source_hash(repo_root())
    except ImageBuildError:
        src = None
    image_hash = labels.get(HASH_LABEL)
    user_supplied = exists and image_hash is None and "image" in settings.model_fields_set
    return ImageStatus(tag=tag, exists=exists, image_hash=image_hash, source_hash=src, user_supplied=user_supplied)


def ensure_image(client: docker.DockerClient, settings: Settings, *, progress: Progress) -> str:
    """Return the tag of an up-to-date sandbox image, building it if missing or stale.

    An image named by the image setting that Boxwright did not build (no hash label) is used as
    it is: the user chose it. Without a source checkout the image can only be used, not checked.
    """
    tag = settings.image
    with _build_lock():
        status = image_status(client, settings)
        if status.exists:
            if status.current:
                return tag
            progress(f"image: {tag} is older than the source; rebuilding (cached layers make it quick)")
        else:
            if status.source_hash is None:
                raise ImageBuildError(
                    IMAGE_NOT_FOUND,
                    f"sandbox image {tag} is not on the Docker engine, and there is no source checkout to build it",
                    hint="Build it from a checkout with 'boxwright image build', or load it "
                    f"('docker load') and set {Settings.env_name('image')} if it has another name.",
                    details={"image": tag},
                )
            progress(f"image: {tag} not found; building it (the first build takes several minutes)")
        return _build_locked(client, settings, progress=progress, no_cache=False, base_image=None)


def build_image(
    client: docker.DockerClient,
    settings: Settings,
    *,
    progress: Progress,
    no_cache: bool = False,
    base_image: str | None = None,
) -> str:
    """Build (or rebuild) the sandbox image from the checkout and return its tag."""
    with _build_lock():
        return _build_locked(client, settings, progress=progress, no_cache=no_cache, base_image=base_image)


def _build_locked(
    client: docker.DockerClient, settings: Settings, *, progress: Progress, no_cache: bool, base_image: str | None
) -> str:
    root = repo_root()
    tag = settings.image
    started = time.monotonic()
    try:
        previous = client.images.get(tag) if image_exists(client, tag) else None
        previous_id = previous.id if previous is not None else None
        base = base_image or _previous_base(client, previous, settings, progress=progress)
        base = resolve_base_image(client, base, settings, progress=progress)
        src_hash = current_source_hash(root)
        ca_bundle = find_ca_bundle(settings)
        if ca_bundle is not None:
            progress(f"build: handing {ca_bundle} to pip in the throw-away venv stage (not the final image)")
        progress(f"build: {tag} FROM {base} (context {root}, {DOCKERFILE})")
        with pack_context(root, ca_bundle) as context:
            image_id = _run_build(
                client,
                context,
                tag=tag,
                buildargs={"BASE_IMAGE": base, "BOXWRIGHT_VERSION": _project_version(root)},
                labels={HASH_LABEL: src_hash, BASE_LABEL: base},
                no_cache=no_cache,
                progress=progress,
            )
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise ImageBuildError(
            IMAGE_BUILD_FAILED,
            f"the Docker engine failed while building {tag}: {' '.join(str(exc).split())[:300]}",
            hint="Check that the Docker engine runs ('docker info', 'boxwright doctor') and has free disk "
            "space, then run 'boxwright image build' again.",
            details={"image": tag},
        ) from exc
    if previous_id and previous_id != image_id:
        _prune_replaced(client)
    progress(f"build: {tag} ready ({image_id[:19]}) in {time.monotonic() - started:.1f}s")
    return tag


def _run_build(
    client: docker.DockerClient,
    context: Any,
    *,
    tag: str,
    buildargs: dict[str, str],
    labels: dict[str, str],
    no_cache: bool,
    progress: Progress,
) -> str:
    """Send the context to the classic builder and relay its log; return the image id."""
    stream = client.api.build(
        fileobj=context,
        custom_context=True,
        dockerfile=DOCKERFILE,
        tag=tag,
        buildargs=buildargs,
        labels=labels,
        nocache=no_cache,
        rm=True,
        forcerm=True,
        pull=False,
        decode=True,
    )
    tail: list[str] = []
    image_id = ""
    for line in _log_lines(stream):
        if line.startswith("\0error\0"):
            message = line.removeprefix("\0error\0")
            raise ImageBuildError(
                IMAGE_BUILD_FAILED,
                f"building {tag} failed: {message}",
                hint="Read the build log above (details.logTail has its end); fix the cause and run "
                "'boxwright image build' again. Network errors: check the Debian mirror and PyPI are reachable.",
                details={"image": tag, "logTail": tail},
            )
        if line.startswith("\0id\0"):
            image_id = line.removeprefix("\0id\0")
            continue
        progress(line)
        tail = [*tail[-(_LOG_TAIL_LINES - 1) :], line]
    if not image_id:
        image_id = client.images.get(tag).id
    return image_id


def _log_lines(stream: Any) -> Iterator[str]:
    """Turn the engine's JSON chunks into whole log lines (chunks split and join lines freely).

    Errors and the final image id come through as ``\\0error\\0…`` / ``\\0id\\0…`` markers.
    """
    pending = ""
    for chunk in stream:
        if "error" in chunk or "errorDetail" in chunk:
            if pending.strip():
                yield pending.rstrip()
            detail = chunk.get("errorDetail") or {}
            yield "\0error\0" + " ".join(str(chunk.get("error") or detail.get("message", "")).split())
            return
        if "aux" in chunk and isinstance(chunk["aux"], dict) and "ID" in chunk["aux"]:
            yield "\0id\0" + str(chunk["aux"]["ID"])
            continue
        if "stream" in chunk:
            pending += str(chunk["stream"])
            *complete, pending = pending.replace("\r\n", "\n").split("\n")
            for line in complete:
                if line.strip():
                    yield line.rstrip()
        elif "status" in chunk and "progress" not in chunk:
            yield f"{chunk.get('id', '')} {chunk['status']}".strip()
    if pending.strip():
        yield pending.rstrip()


def _previous_base(client: docker.DockerClient, previous: Any, settings: Settings, *, progress: Progress) -> str | None:
    """The base the current image was built FROM, if the engine still has it.

    A rebuild after a code change then neither tries a pull again (which may wait out its
    timeout where registries hang) nor switches base and loses the layer cache.
    """
    labels = (previous.labels or {}) if previous is not None else {}
    base = labels.get(BASE_LABEL)
    if base and not settings.base_image and image_exists(client, base):
        progress(f"base image: {base} (the one the current image was built from)")
        return base
    return None


def _project_version(root: Path) -> str:
    """The version for the OCI label: pyproject.toml of the checkout, else the installed metadata."""
    try:
        with (root / "pyproject.toml").open("rb") as f:
            return str(tomllib.load(f)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        pass
    try:
        return metadata.version("boxwright")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def _prune_replaced(client: docker.DockerClient) -> None:
    """Drop sandbox images that rebuilds replaced (untagged, carrying our hash label).

    The engine keeps any still used by a container, running or stopped, and prunes it on a later
    build; the venv stage's cache image has no such label and stays.
    """
    with contextlib.suppress(docker.errors.APIError):
        client.images.prune(filters={"dangling": True, "label": HASH_LABEL})


@contextlib.contextmanager
def _build_lock() -> Iterator[None]:
    """One build at a time: in this process (threads) and, where possible, across processes."""
    with _process_lock, _file_lock(Path(tempfile.gettempdir()) / "boxwright-image-build.lock"):
        yield


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    try:
        import fcntl

        handle = path.open("a")
    except (ImportError, OSError):  # no fcntl (Windows) or a lock file we may not open: go without
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
