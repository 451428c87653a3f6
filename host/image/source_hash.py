"""Content hash of the image's build inputs.

The image carries this hash as a label; when the source on disk hashes differently the image is
stale and gets rebuilt (Docker's layer cache makes that cheap). Only file paths and contents
count: mtimes, owners and byte-code caches change without changing what the image would be.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

HASH_LABEL = "io.boxwright.source-hash"

# Never part of the hash, whatever .dockerignore says: they change on every import or run.
_IGNORED_DIR_NAMES = frozenset({"__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache"})
_IGNORED_SUFFIXES = (".pyc", ".pyo")


def is_hashed(relpath: str) -> bool:
    """Whether a context-relative path takes part in the hash (byte-code caches do not)."""
    parts = PurePosixPath(relpath).parts
    if any(part in _IGNORED_DIR_NAMES for part in parts):
        return False
    return not relpath.endswith(_IGNORED_SUFFIXES)


def source_hash(root: Path, relpaths: Iterable[str]) -> str:
    """Hash the given files under ``root`` (order-independent; directories are skipped).

    Each entry feeds ``path NUL sha256(content) NL`` into one sha256, so renaming a file or
    moving content between files changes the result, and the order of ``relpaths`` does not.
    """
    outer = hashlib.sha256()
    for rel in sorted({PurePosixPath(p).as_posix() for p in relpaths}):
        path = root / rel
        if not is_hashed(rel) or not path.is_file():
            continue
        inner = hashlib.sha256(path.read_bytes()).hexdigest()
        outer.update(rel.encode("utf-8") + b"\0" + inner.encode("ascii") + b"\n")
    return "sha256:" + outer.hexdigest()
