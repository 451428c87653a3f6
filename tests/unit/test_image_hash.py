"""The image's source-hash label: what changes it, what must not, and that it hashes the context."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from host.image.build_context import DOCKERFILE, context_paths, current_source_hash, repo_root
from host.image.source_hash import is_hashed, source_hash


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return _tree(
        tmp_path,
        {
            DOCKERFILE: "FROM scratch\n",
            ".dockerignore": "*\n!Dockerfile.sandbox\n!rpc\n!sandbox_image\n**/__pycache__\n**/*.py[co]\n",
            "rpc/__init__.py": "X = 1\n",
            "sandbox_image/__main__.py": "print('hi')\n",
            "sandbox_image/requirements.txt": "aiohttp==3.14.5\n",
            "tests/test_x.py": "def test(): pass\n",
            "README.md": "readme\n",
        },
    )


def test_same_content_same_hash_regardless_of_order_and_mtime(checkout: Path) -> None:
    paths = ["rpc/__init__.py", "sandbox_image/__main__.py"]
    first = source_hash(checkout, paths)
    (checkout / "rpc/__init__.py").touch()
    assert source_hash(checkout, list(reversed(paths))) == first
    assert first.startswith("sha256:")


def test_content_or_name_change_changes_hash(checkout: Path) -> None:
    before = current_source_hash(checkout)
    (checkout / "sandbox_image/__main__.py").write_text("print('bye')\n")
    edited = current_source_hash(checkout)
    assert edited != before
    (checkout / "sandbox_image/__main__.py").rename(checkout / "sandbox_image/main2.py")
    assert current_source_hash(checkout) != edited


def test_content_moved_between_files_changes_hash(tmp_path: Path) -> None:
    a = _tree(tmp_path / "a", {"x": "12", "y": "3"})
    b = _tree(tmp_path / "b", {"x": "1", "y": "23"})
    assert source_hash(a, ["x", "y"]) != source_hash(b, ["x", "y"])


def test_requirements_dockerfile_and_dockerignore_count(checkout: Path) -> None:
    for rel in ("sandbox_image/requirements.txt", DOCKERFILE, ".dockerignore"):
        before = current_source_hash(checkout)
        (checkout / rel).write_text((checkout / rel).read_text() + "# changed\n")
        assert current_source_hash(checkout) != before, rel


def test_bytecode_and_files_outside_the_context_do_not_count(checkout: Path) -> None:
    before = current_source_hash(checkout)
    _tree(
        checkout,
        {
            "rpc/__pycache__/__init__.cpython-311.pyc": "junk",
            "sandbox_image/stray.pyc": "junk",
            "tests/test_y.py": "def test(): pass\n",
            "README.md": "changed\n",
            "host/cli.py": "pass\n",
        },
    )
    assert current_source_hash(checkout) == before


def test_bytecode_ignored_even_without_dockerignore(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"rpc/a.py": "a", "rpc/__pycache__/a.cpython-311.pyc": "b"})
    assert source_hash(root, ["rpc/a.py", "rpc/__pycache__/a.cpython-311.pyc"]) == source_hash(root, ["rpc/a.py"])
    assert not is_hashed("x/__pycache__/y.txt")
    assert not is_hashed("x/y.pyc")
    assert is_hashed("sandbox_image/server.py")


def test_context_is_only_what_the_dockerfile_needs(checkout: Path) -> None:
    files = {p for p in context_paths(checkout) if (checkout / p).is_file()}
    assert DOCKERFILE in files
    assert "rpc/__init__.py" in files and "sandbox_image/requirements.txt" in files
    assert not any(p.startswith(("tests/", ".git")) or p == "README.md" for p in files)


def test_real_checkout_context_excludes_dev_files() -> None:
    root = repo_root()
    paths = context_paths(root)
    assert not any(p.split("/")[0] in {".git", "tests", "host", ".venv", "venv"} for p in paths)
    assert not any("__pycache__" in p for p in paths)


def test_dockerfile_default_version_matches_pyproject() -> None:
    root = repo_root()
    version = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    match = re.search(r"^ARG BOXWRIGHT_VERSION=(\S+)$", (root / DOCKERFILE).read_text(), re.MULTILINE)
    assert match is not None and match.group(1) == version
