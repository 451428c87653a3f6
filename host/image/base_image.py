"""Pick or make the Debian base image the sandbox image is built FROM.

Development machines reach no container registry and start with no images, yet must build the
image from package repositories alone. So: use the wanted base if the engine has it, else try a
(time-bounded) pull, else reuse a base we made before, else make one with debootstrap from a
Debian mirror and ``docker import`` it. Users with a registry never get past the pull.
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import docker.errors

from host.config import DEFAULT_MIRROR, Settings

from .errors import IMAGE_BUILD_FAILED, ImageBuildError

Progress = Callable[[str], None]

DEFAULT_BASE_IMAGE = "debian:bookworm-slim"
LOCAL_BASE_IMAGE = "boxwright/debian-base:bookworm"
DEFAULT_SECURITY_MIRROR = "http://deb.debian.org/debian-security"
SUITE = "bookworm"

# A pull that says nothing for settings.pull_timeout seconds is taken as hanging (a real pull
# reports progress every few hundred ms); the total cap is a backstop. A pull that fails because no
# registry resolves returns in well under a second.
PULL_TOTAL_TIMEOUT_S = 30 * 60.0

_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# What debian:*-slim leaves out (docs, man pages, locales); keeps the imported base comparable.
_DPKG_EXCLUDES = """\
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
"""
_IMPORT_CHANGES = [
    'ENV PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"',
    'ENV LANG="C.UTF-8"',
    'CMD ["/bin/bash"]',
    'LABEL io.boxwright.debootstrap="--variant=minbase bookworm"',
]


def image_exists(client: docker.DockerClient, ref: str) -> bool:
    """Whether the engine has ``ref`` locally (never pulls)."""
    try:
        client.images.get(ref)
    except docker.errors.ImageNotFound:
        return False
    return True


def resolve_base_image(
    client: docker.DockerClient, wanted: str | None, settings: Settings, *, progress: Progress
) -> str:
    """Return a base image reference that exists locally, making one if need be.

    ``wanted`` (or the base_image setting) names an explicit base: it is used if present or
    pullable, and its absence is an error rather than a silent switch to another base.
    """
    explicit = wanted or settings.base_image
    candidate = explicit or DEFAULT_BASE_IMAGE
    if image_exists(client, candidate):
        progress(f"base image: {candidate} (present locally)")
        return candidate
    if pull_image(client, candidate, idle_timeout=settings.pull_timeout, progress=progress):
        return candidate
    if explicit and explicit not in (DEFAULT_BASE_IMAGE, LOCAL_BASE_IMAGE):
        raise ImageBuildError(
            IMAGE_BUILD_FAILED,
            f"base image {explicit} is not on the Docker engine and could not be pulled",
            hint=f"Load it ('docker load' / 'docker pull'), or build without --base / "
            f"{Settings.env_name('base_image')} to let Boxwright make {LOCAL_BASE_IMAGE} with debootstrap.",
            details={"baseImage": explicit},
        )
    if image_exists(client, LOCAL_BASE_IMAGE):
        progress(f"base image: {LOCAL_BASE_IMAGE} (made earlier with debootstrap)")
        return LOCAL_BASE_IMAGE
    return make_debootstrap_base(client, settings, progress=progress)


def pull_image(client: docker.DockerClient, ref: str, *, idle_timeout: float, progress: Progress) -> bool:
    """Try to pull ``ref``; False (never an exception, never a hang) when it cannot be had.

    The SDK's pull has no socket timeout, so it runs in a daemon thread that we stop waiting for
    after ``idle_timeout`` seconds without news (or PULL_TOTAL_TIMEOUT_S overall).
    """
    repository, _, tag = ref.rpartition(":") if ":" in ref.split("/")[-1] else (ref, "", "latest")
    progress(f"base image: {ref} not present locally; trying to pull it")
    events: queue.Queue[tuple[str, Any]] = queue.Queue()

    def worker() -> None:
        try:
            for event in client.api.pull(repository, tag=tag, stream=True, decode=True):
                events.put(("event", event))
            events.put(("done", None))
        except Exception as exc:  # reported to the waiting thread, which decides
            events.put(("error", exc))

    started = time.monotonic()
    threading.Thread(target=worker, name=f"boxwright-pull-{ref}", daemon=True).start()
    last_status = ""
    while True:
        remaining = PULL_TOTAL_TIMEOUT_S - (time.monotonic() - started)
        try:
            kind, payload = events.get(timeout=max(0.1, min(idle_timeout, remaining)))
        except queue.Empty:
            progress(f"base image: pull of {ref} gave no news for {idle_timeout:.0f}s; giving up")
            return False
        if kind == "error":
            progress(f"base image: pull of {ref} failed: {_one_line(payload)}")
            return False
        if kind == "done":
            break
        if "error" in payload:
            progress(f"base image: pull of {ref} failed: {_one_line(payload['error'])}")
            return False
        status = str(payload.get("status", ""))
        if status and status != last_status and "progress" not in payload:
            progress(f"pull: {payload.get('id', '')} {status}".replace("  ", " "))
            last_status = status
    if not image_exists(client, ref):
        progress(f"base image: pull of {ref} ended but the image is not there")
        return False
    progress(f"base image: pulled {ref} in {time.monotonic() - started:.1f}s")
    return True


def make_debootstrap_base(client: docker.DockerClient, settings: Settings, *, progress: Progress) -> str:
    """debootstrap a minimal bookworm and import it as LOCAL_BASE_IMAGE; returns that tag."""
    debootstrap = shutil.which("debootstrap") or _first_file("/usr/sbin/debootstrap", "/sbin/debootstrap")
    no_base = f"No base image: {DEFAULT_BASE_IMAGE} is not on the Docker engine and cannot be pulled"
    if debootstrap is None:
        raise ImageBuildError(
            IMAGE_BUILD_FAILED,
            f"{no_base}, and debootstrap (to make one from a Debian mirror) is not installed",
            hint=f"Install debootstrap (apt-get install debootstrap) and run again as root, or make "
            f"{DEFAULT_BASE_IMAGE} available ('docker pull' / 'docker load').",
        )
    if os.geteuid() != 0:
        raise ImageBuildError(
            IMAGE_BUILD_FAILED,
            f"{no_base}, and making one with debootstrap needs root",
            hint=f"Run 'boxwright image build' once as root (e.g. with sudo) to create "
            f"{LOCAL_BASE_IMAGE}, or make {DEFAULT_BASE_IMAGE} available ('docker pull' / 'docker load').",
        )
    mirror = settings.debian_mirror
    security = settings.debian_security_mirror
    if security is None:
        # Only pair the default mirror with the default security archive: a custom mirror is often
        # there because deb.debian.org is unreachable, and apt fails on an unreachable source.
        security = DEFAULT_SECURITY_MIRROR if mirror.rstrip("/") == DEFAULT_MIRROR else ""
    workdir = Path(tempfile.mkdtemp(prefix="boxwright-debootstrap-", dir=_scratch_dir(settings)))
    target = workdir / "rootfs"
    started = time.monotonic()
    progress(f"base image: making {LOCAL_BASE_IMAGE} with debootstrap from {mirror} (about a minute)")
    try:
        _run_streamed(
            [debootstrap, "--variant=minbase", SUITE, str(target), mirror],
            progress=progress,
            prefix="debootstrap: ",
        )
        _trim_rootfs(target, mirror=mirror, security=security)
        progress(f"base image: importing {target} into the Docker engine")
        _import_rootfs(client, target)
    finally:
        _remove_tree(workdir, progress=progress)
    if not image_exists(client, LOCAL_BASE_IMAGE):
        raise ImageBuildError(
            IMAGE_BUILD_FAILED,
            f"docker import finished but {LOCAL_BASE_IMAGE} is not on the engine",
            hint="Check 'docker images' and the engine's log; then run 'boxwright image build' again.",
        )
    progress(f"base image: made {LOCAL_BASE_IMAGE} in {time.monotonic() - started:.0f}s")
    return LOCAL_BASE_IMAGE


def _trim_rootfs(target: Path, *, mirror: str, security: str) -> None:
    """Make the debootstrapped tree look like debian:bookworm-slim where it matters to us."""
    sources = [
        f"Types: deb\nURIs: {mirror}\nSuites: {SUITE} {SUITE}-updates\nComponents: main\nSigned-By: {_KEYRING}\n"
    ]
    if security:
        sources.append(
            f"Types: deb\nURIs: {security}\nSuites: {SUITE}-security\nComponents: main\nSigned-By: {_KEYRING}\n"
        )
    (target / "etc/apt/sources.list.d/debian.sources").write_text("\n".join(sources))
    (target / "etc/apt/sources.list").unlink(missing_ok=True)
    (target / "etc/dpkg/dpkg.cfg.d/docker-slim").write_text(_DPKG_EXCLUDES)
    (target / "etc/apt/apt.conf.d/docker-no-languages").write_text('Acquire::Languages "none";\n')
    _slim_existing_files(target)
    for pattern in ("var/cache/apt/archives/*.deb", "var/cache/apt/*.bin", "var/lib/apt/lists/*"):
        for path in target.glob(pattern):
            _remove_path(path)
    # The engine provides these at run time; the host's copies must not leak into the image.
    for name in ("etc/resolv.conf", "etc/hostname"):
        (target / name).unlink(missing_ok=True)


def _slim_existing_files(target: Path) -> None:
    """Delete what _DPKG_EXCLUDES keeps out of later installs from the packages debootstrap
    already installed (docs but their copyright files, man pages, locales: ~45 MB)."""
    for rel in (
        "usr/share/man",
        "usr/share/groff",
        "usr/share/info",
        "usr/share/lintian",
        "usr/share/linda",
        "usr/share/locale",
    ):
        for child in (target / rel).glob("*"):
            _remove_path(child)
    for package_dir in (target / "usr/share/doc").glob("*"):
        if package_dir.is_dir() and not package_dir.is_symlink():
            for child in package_dir.iterdir():
                if child.name != "copyright":
                    _remove_path(child)


def _remove_path(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _import_rootfs(client: docker.DockerClient, target: Path) -> None:
    """Stream ``tar`` of the tree into the engine (no temporary tarball on disk)."""
    tar_cmd = [
        "tar",
        "--numeric-owner",
        "--xattrs",
        "-C",
        str(target),
        "-cf",
        "-",
        "--exclude=./dev/*",
        "--exclude=./proc/*",
        "--exclude=./sys/*",
        ".",
    ]
    proc = subprocess.Popen(tar_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout = proc.stdout
    assert stdout is not None

    def chunks() -> Iterator[bytes]:
        while chunk := stdout.read(1 << 20):
            yield chunk

    repository, _, tag = LOCAL_BASE_IMAGE.rpartition(":")
    try:
        answer = client.api.import_image_from_stream(chunks(), repository=repository, tag=tag, changes=_IMPORT_CHANGES)
    finally:
        stdout.close()
        stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        code = proc.wait()
    if code != 0:
        raise ImageBuildError(
            IMAGE_BUILD_FAILED,
            f"tar of the debootstrapped tree failed (exit {code}): {stderr.strip()[-500:]}",
            hint=f"Check free disk space in the scratch directory ({Settings.env_name('scratch_dir')}) and retry.",
        )
    if "error" in str(answer).lower():
        raise ImageBuildError(
            IMAGE_BUILD_FAILED,
            f"docker import of the debootstrapped tree failed: {_one_line(answer)}",
            hint="Check the Docker engine's log and free disk space, then retry.",
        )


def _run_streamed(cmd: list[str], *, progress: Progress, prefix: str) -> None:
    """Run ``cmd``, passing each output line to ``progress``; raise with the tail on failure."""
    tail: list[str] = []
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    assert proc.stdout is not None
    for raw in proc.stdout:
        line = raw.rstrip()
        if line:
            progress(prefix + line)
            tail = [*tail[-19:], line]
    code = proc.wait()
    if code != 0:
        raise ImageBuildError(
            IMAGE_BUILD_FAILED,
            f"{Path(cmd[0]).name} failed (exit {code}): {tail[-1] if tail else 'no output'}",
            hint="Check that the Debian mirror is reachable (" + Settings.env_name("debian_mirror") + ", default "
            f"{DEFAULT_MIRROR}) and that there is free disk space; then retry.",
            details={"command": cmd, "outputTail": tail},
        )


def _remove_tree(path: Path, *, progress: Progress) -> None:
    """Delete the scratch tree, but never through a mount debootstrap may have left behind."""
    mounts = _mounts_under(path)
    for mount in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", mount], check=False, capture_output=True)
    if _mounts_under(path):
        progress(f"base image: left {path} in place: something is still mounted under it")
        return
    shutil.rmtree(path, ignore_errors=True)


def _mounts_under(path: Path) -> list[str]:
    prefix = str(path.resolve()) + "/"
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    points = (line.split()[1].replace("\\040", " ") for line in lines if len(line.split()) > 1)
    return [point for point in points if point.startswith(prefix)]


def _scratch_dir(settings: Settings) -> str:
    """Where the rootfs is made: needs exec and device nodes, so not a noexec /tmp."""
    if settings.scratch_dir is not None:
        return str(settings.scratch_dir)
    return "/var/tmp" if os.path.isdir("/var/tmp") else tempfile.gettempdir()


def _first_file(*candidates: str) -> str | None:
    return next((c for c in candidates if os.path.isfile(c) and os.access(c, os.X_OK)), None)


def _one_line(value: object) -> str:
    return " ".join(str(value).split())[:300]
