"""Find the build context (the repository checkout) and pack it for the Docker engine.

We pack the context ourselves (``custom_context=True``) instead of letting the engine read a
directory, for one reason: the host's CA bundle can be added to the tar as an extra file without
ever writing it into the checkout. ``Dockerfile.sandbox`` copies it with a wildcard that may match
nothing, into a throw-away stage only, so a plain ``docker build`` without the CA still works.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import IO

from docker.utils.build import create_archive, exclude_paths

from host.config import Settings

from .errors import IMAGE_BUILD_FAILED, ImageBuildError
from .source_hash import source_hash

DOCKERFILE = "Dockerfile.sandbox"
DOCKERIGNORE = ".dockerignore"
# Name the Dockerfile's wildcard COPY looks for (``boxwright-build-ca*.pem``).
CA_CONTEXT_NAME = "boxwright-build-ca.pem"
_DEFAULT_CA_BUNDLES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt")


def repo_root() -> Path:
    """The checkout holding ``Dockerfile.sandbox``: the parent of the ``rpc`` package's directory.

    Works for checkouts and editable installs; a wheel install has no Dockerfile and gets a clear
    error instead of a confusing build failure.
    """
    import rpc

    location = getattr(rpc, "__file__", None)
    # A namespace package (no __init__.py yet) has no __file__, only __path__.
    pkg_dir = Path(location).resolve().parent if location else Path(next(iter(rpc.__path__))).resolve()
    root = pkg_dir.parent
    if not (root / DOCKERFILE).is_file():
        raise ImageBuildError(
            IMAGE_BUILD_FAILED,
            f"{DOCKERFILE} not found in {root} (looked next to the 'rpc' package)",
            hint="Build from a source checkout (git clone + 'pip install -e .'), or build the image "
            f"yourself and point {Settings.env_name('image')} at it.",
            details={"root": str(root)},
        )
    return root


def read_dockerignore(root: Path) -> list[str]:
    """The .dockerignore patterns, parsed the way the docker SDK and CLI read them."""
    path = root / DOCKERIGNORE
    if not path.is_file():
        return []
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def context_paths(root: Path) -> list[str]:
    """Context-relative paths (files and directories) the engine will see, after .dockerignore."""
    return sorted(exclude_paths(str(root), read_dockerignore(root), dockerfile=DOCKERFILE))


def current_source_hash(root: Path) -> str:
    """Hash of exactly what goes into the build, plus .dockerignore (which shapes it)."""
    return source_hash(root, [*context_paths(root), DOCKERIGNORE, DOCKERFILE])


def find_ca_bundle(settings: Settings) -> Path | None:
    """The CA bundle the host's own pip trusts, to hand to the build's pip.

    Order: the build_ca_bundle setting (empty: hand over nothing), PIP_CERT, REQUESTS_CA_BUNDLE,
    SSL_CERT_FILE, then the distribution's bundle. Handing over a full system bundle is harmless
    where there is no intercepting proxy: it only replaces pip's certifi list.
    """
    explicit = settings.build_ca_bundle
    if explicit is not None:
        return Path(explicit) if explicit and Path(explicit).is_file() else None
    for var in ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"):
        value = os.environ.get(var)
        if value and Path(value).is_file():
            return Path(value)
    for candidate in _DEFAULT_CA_BUNDLES:
        if Path(candidate).is_file():
            return Path(candidate)
    return None


def pack_context(root: Path, ca_bundle: Path | None) -> IO[bytes]:
    """A seekable tar of the context (honouring .dockerignore), with the CA bundle added if given."""
    extra: list[tuple[str, str]] = []
    if ca_bundle is not None:
        extra.append((CA_CONTEXT_NAME, ca_bundle.read_text(encoding="utf-8")))
    fileobj = tempfile.TemporaryFile()  # noqa: SIM115 -- returned open: the caller streams and closes it
    create_archive(str(root), files=context_paths(root), fileobj=fileobj, extra_files=extra)
    return fileobj
