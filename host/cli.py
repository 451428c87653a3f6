"""`boxwright` — serve MCP, build the image, inspect and clean up sandboxes, manage HTTP tokens.

Each command gets the parsed arguments and the settings; `ls` and `rm` reach sandboxes through
`args.make_backend(settings)` (Docker, unless `main` is handed another backend, as tests do).
"""

from __future__ import annotations

import argparse
import shutil
import socket
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import anyio
from docker.errors import DockerException

from host import __version__, labels, logs
from host.config import Settings
from host.identity import IdentityError
from host.mcp.auth import LOCAL_OWNER, TokenStore, default_token_file, owner_problem
from rpc.errors import BoxwrightError
from rpc.settings import SettingsError

if TYPE_CHECKING:
    from host.backends.base import SandboxBackend
    from host.profiles.store import ProfileStore

MakeBackend = Callable[[Settings], "SandboxBackend"]


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from host.mcp.server import TOOLSETS, serve_http, serve_stdio
    from host.services import Services

    settings = settings.replace(
        backend=args.backend,
        keep_on_exit=True if args.keep_sandboxes else None,
        toolsets=args.toolsets,
        allowed_hosts=args.allowed_host,
        allowed_origins=args.allowed_origin,
    )
    unknown = set(settings.toolsets or ()) - set(TOOLSETS)
    if unknown:
        print(f"unknown toolset(s) {sorted(unknown)}; choose from {sorted(TOOLSETS)}", file=sys.stderr)
        return 2
    if args.http:
        problem = _listen_problem(args.host, args.port)
        if problem is not None:  # before any sandbox (a warm pool) is started for a server that cannot listen
            print(f"error: cannot serve on {args.host}:{args.port}: {problem}", file=sys.stderr)
            return 1
    services = Services(settings)
    if args.http:
        tokens = TokenStore.load(Path(args.token_file))
        anyio.run(lambda: serve_http(services, host=args.host, port=args.port, tokens=tokens))
    else:
        anyio.run(serve_stdio, services)
    return 0


def _listen_problem(host: str, port: int) -> str | None:
    """Why the HTTP server could not listen on host:port (in use, no such address), or None. Bound and
    released as uvicorn will bind it (SO_REUSEADDR), so only a real conflict is reported."""
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"cannot resolve the address ({exc.strerror})"
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                return exc.strerror or str(exc)
    return None


def _port(text: str) -> int:
    """A TCP port for --port (argparse's usage error rather than a traceback from the listener)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1 to 65535, not {port}")
    return port


def cmd_image_build(args: argparse.Namespace, settings: Settings) -> int:
    from host.backends.docker_backend import docker_client
    from host.image.builder import build_image, ensure_image

    client = docker_client()
    if args.if_needed:
        tag = ensure_image(client, settings, progress=_progress)
    else:
        tag = build_image(client, settings, progress=_progress, no_cache=args.no_cache, base_image=args.base)
    print(tag)
    return 0


def cmd_image_push_nodes(args: argparse.Namespace, settings: Settings) -> int:
    from host.backends.docker_backend import docker_client
    from host.backends.swarm_backend import SwarmBackend
    from host.backends.swarm_images import push_image

    backend = SwarmBackend(settings.replace(backend="swarm"))
    backend.ping()
    loaded = push_image(docker_client(), backend.node_engines(), settings.image, progress=_progress)
    print(
        f"{settings.image} loaded on: {', '.join(sorted(loaded))}" if loaded else f"{settings.image} was on every node"
    )
    return 0


def _backend(settings: Settings) -> SandboxBackend:
    from host.backends import make_backend

    return make_backend(settings)


def _ts(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%SZ") if moment else "-"


def cmd_ls(args: argparse.Namespace, settings: Settings) -> int:
    from host import identity
    from host.sandboxes.locks import OwnershipLocks
    from host.sandboxes.overlay import OverlayStore

    backend = args.make_backend(settings.replace(backend=args.backend))
    locks = OwnershipLocks(settings.state_dir, settings.namespace)
    overlays = OverlayStore(settings.state_dir, settings.namespace)
    mine = identity.find(settings.state_dir)
    header = ("SANDBOX", "OWNER", "NAME", "STATUS", "NETWORK", "SERVER", "MANAGED", "CREATED", "EXPIRES")
    rows, pooled = [header], [header]
    for info in backend.list_sandboxes(settings.namespace):
        lab = labels.decode(info.labels)
        if mine is not None and labels.adoptable(info.labels, mine, settings.adoptable_instances):
            server = "this one"
            managed = "no (orphan)" if locks.try_acquire(info.sandbox_id) else "yes"
            locks.release(info.sandbox_id, forget=False)
        elif mine is not None and labels.made_by(info.labels, mine):  # this identity, on another host
            server, managed = f"this one, instance {info.labels.get(labels.INSTANCE)}", "?"
        else:
            server, managed = lab.server_id or "(older version)", "?"
        # What changed since the labels were written (a pooled sandbox's claim, a longer TTL) is in its overlay.
        over = overlays.load(info.sandbox_id)
        row = (
            info.sandbox_id,
            over.owner if over else ("-" if lab.pooled else lab.owner or "?"),
            (over.name if over else lab.name) or "-",
            info.status,
            lab.network or "?",
            server,
            managed,
            _ts(over.createdAt if over else lab.created_at),
            _ts(over.expiresAt if over else lab.expires_at),
        )
        (pooled if lab.pooled and over is None else rows).append(row)
    _print_table(rows)
    if len(pooled) > 1:
        print(f"\nwarm pool (ready, never used): {len(pooled) - 1}")
        _print_table(pooled)
    return 0


def _print_table(rows: Sequence[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


def cmd_rm(args: argparse.Namespace, settings: Settings) -> int:
    from host import identity
    from host.sandboxes.locks import OwnershipLocks

    if not args.sandbox_ids and not args.all:
        print("error: name the sandboxes to remove (see `boxwright ls`), or --all", file=sys.stderr)
        return 2
    backend = args.make_backend(settings.replace(backend=args.backend))
    locks = OwnershipLocks(settings.state_dir, settings.namespace)
    mine = identity.find(settings.state_dir)
    known = {i.sandbox_id: i for i in backend.list_sandboxes(settings.namespace)}
    targets = list(known) if args.all else args.sandbox_ids
    status = 0
    for sid in targets:
        info = known.get(sid)
        if info is None:
            print(f"{sid}: no such sandbox in namespace {settings.namespace}", file=sys.stderr)
            status = 1
            continue
        foreign = mine is None or not labels.adoptable(info.labels, mine, settings.adoptable_instances)
        if foreign and info.status == "running" and not args.force:
            print(f"{sid}: running, made by another server (use --force)", file=sys.stderr)
            status = 1
            continue
        if not locks.try_acquire(sid) and not args.force:
            print(f"{sid}: managed by a running server (use --force, or sandbox_destroy)", file=sys.stderr)
            status = 1
            continue
        backend.remove(sid, info.container_id)
        locks.release(sid)
        print(f"{sid}: removed")
    backend.remove_network_if_unused()
    return status


def cmd_doctor(args: argparse.Namespace, settings: Settings) -> int:
    from host.backends.docker_backend import docker_client
    from host.image.builder import image_status

    ok = True
    settings = settings.replace(backend=args.backend)

    def report(good: bool, what: str, fix: str = "") -> None:
        nonlocal ok
        ok &= good
        print(f"[{'ok' if good else 'FAIL'}] {what}" + (f"\n       fix: {fix}" if fix and not good else ""))

    report(True, "settings (BOXWRIGHT_*) valid")  # bad ones stop `main` with a [FAIL] line naming them
    try:
        client = docker_client()
        version = client.version().get("Version", "?")
        report(True, f"Docker engine reachable (server {version})")
    except BoxwrightError as exc:
        if settings.backend != "swarm":
            report(False, f"Docker engine: {exc.message}", exc.hint)
            return 1
        client = None  # a fleet's server need not have an engine of its own
    if settings.backend == "swarm":
        from host.backends.swarm_checks import check_swarm

        check_swarm(settings, report, client)
        return 0 if ok else 1
    status = image_status(client, settings)
    state = "up to date" if status.current else ("out of date" if status.exists else "not built")
    report(status.current, f"sandbox image {status.tag}: {state}", "boxwright image build")
    report(
        shutil.which("debootstrap") is not None or status.exists,
        "debootstrap available (needed only when no Debian base image can be pulled)",
        "apt-get install debootstrap",
    )
    try:
        settings.state_dir.mkdir(parents=True, exist_ok=True)
        report(True, f"state dir {settings.state_dir} writable")
    except OSError as exc:
        report(False, f"state dir {settings.state_dir}: {exc}", f"set {Settings.env_name('state_dir')}")
    tokens = TokenStore.load(Path(default_token_file()))
    print(f"[info] HTTP bearer tokens configured: {len(tokens)}")
    return 0 if ok else 1


def cmd_login(args: argparse.Namespace, settings: Settings) -> int:
    from pydantic import ValidationError

    from host.profiles.login import LoginRequest, run_login
    from rpc.models.network import NetworkPolicy

    network = None
    if args.network or args.allow_host:
        mode: Literal["public", "none", "allowlist"] = args.network or "allowlist"
        if mode == "allowlist" and not args.allow_host:
            print("error: --network allowlist needs at least one --allow-host HOST", file=sys.stderr)
            return 2
        if mode != "allowlist":
            print(f"error: --allow-host applies only to --network allowlist, not {mode}", file=sys.stderr)
            return 2
        try:
            network = NetworkPolicy(mode=mode, allowHosts=args.allow_host)
        except ValidationError as exc:
            problems = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors(include_url=False))
            print(f"error: --allow-host: {problems}", file=sys.stderr)
            return 2
    request = LoginRequest(
        owner=args.owner,
        profile_id=args.profile or settings.default_profile_id,
        url=args.url,
        network=network,
        open_browser=not args.no_browser,
    )
    return anyio.run(run_login, settings, request)


def _profile_store(settings: Settings) -> ProfileStore:
    from host.profiles.store import ProfileStore

    return ProfileStore(settings)


def cmd_profile_list(args: argparse.Namespace, settings: Settings) -> int:
    rows = [("PROFILE", "VERSION", "UPDATED", "COOKIES", "DOMAINS", "LOGIN")]
    for p in _profile_store(settings).list(args.owner):
        domains = ", ".join(p.cookieDomains[:3]) + (" …" if len(p.cookieDomains) > 3 else "")
        if p.damaged:
            rows.append((p.profileId, "-", "DAMAGED", "-", p.damaged, "running" if p.loginInProgress else "-"))
            continue
        rows.append((p.profileId, str(p.version), p.updatedAt, str(p.cookieCount), domains or "-",
                     "running" if p.loginInProgress else "-"))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return 0


def cmd_profile_show(args: argparse.Namespace, settings: Settings) -> int:
    summary = _profile_store(settings).summary(args.owner, args.profile or settings.default_profile_id)
    print(summary.model_dump_json(indent=2))
    return 0


def cmd_profile_import(args: argparse.Namespace, settings: Settings) -> int:
    import json

    from host.profiles.store import writer_id

    profile_id = args.profile or settings.default_profile_id
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
        data = json.loads(text)
    except (OSError, ValueError) as exc:
        print(f"error: cannot read a JSON storageState from {args.file}: {type(exc).__name__}", file=sys.stderr)
        return 2
    outcome = _profile_store(settings).import_state(args.owner, profile_id, data, writer=writer_id("import"))
    print(f"profile {profile_id!r}: {outcome.outcome}, version {outcome.version}", file=sys.stderr)
    return 0


def cmd_profile_export(args: argparse.Namespace, settings: Settings) -> int:
    import json

    from host.profiles.files import write_atomic

    store, profile_id = _profile_store(settings), args.profile or settings.default_profile_id
    if not store.exists(args.owner, profile_id):  # reading makes a profile on first use: not for a typo
        raise store.not_found(profile_id)
    snapshot = store.read(args.owner, profile_id)
    text = json.dumps(snapshot.state, indent=2, ensure_ascii=False) + "\n"
    if args.output in (None, "-"):
        sys.stdout.write(text)
        return 0
    target = Path(args.output)
    try:  # a new file of mode 600 renamed over the target: an existing file (or a symlink) keeps no old mode
        write_atomic(target, text.encode(), tmp_dir=target.parent, mode=0o600)
    except OSError as exc:
        print(f"error: cannot write {args.output}: {exc.strerror or type(exc).__name__}", file=sys.stderr)
        return 2
    print(f"version {snapshot.version} written to {args.output} (mode 600)", file=sys.stderr)
    return 0


def cmd_profile_rm(args: argparse.Namespace, settings: Settings) -> int:
    _profile_store(settings).remove(args.owner, args.profile)
    print(f"profile {args.profile!r} removed", file=sys.stderr)
    return 0


def cmd_token_add(args: argparse.Namespace, settings: Settings) -> int:
    problem = owner_problem(args.owner)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    token = TokenStore.add(Path(args.token_file), args.owner)
    print(f"token for {args.owner} (shown once; only its hash is stored in {args.token_file}):", file=sys.stderr)
    print(token)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="boxwright", description="Disposable, isolated sandboxes for AI agents over MCP")
    p.add_argument("--version", action="version", version=f"boxwright {__version__}")
    p.add_argument(
        "--log-level", default=None, help=f"DEBUG, INFO (default), WARNING, ERROR; or {Settings.env_name('log_level')}"
    )
    sub = p.add_subparsers(dest="command", required=True)

    on = argparse.ArgumentParser(add_help=False)
    on.add_argument(
        "--backend",
        choices=["docker", "swarm"],
        default=None,
        help=f"where sandboxes run ({Settings.env_name('backend')})",
    )
    s = sub.add_parser("serve", parents=[on], help="run the MCP server (stdio by default; --http for streamable HTTP)")
    s.add_argument("--http", action="store_true", help="serve streamable HTTP at /mcp instead of stdio")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=_port, default=8765)
    s.add_argument("--token-file", default=str(default_token_file()), help="bearer tokens for --http")
    s.add_argument(
        "--toolsets", default=None, help="comma-separated: sandbox,code,files,browser,templates (default: all)"
    )
    s.add_argument("--keep-sandboxes", action="store_true", help="leave sandboxes running when the server stops")
    s.add_argument(
        "--allowed-host",
        action="append",
        metavar="HOST[:PORT]",
        help="a Host header to accept (repeatable; replaces the default list derived from --host)",
    )
    s.add_argument(
        "--allowed-origin", action="append", metavar="ORIGIN", help="an Origin header to accept (repeatable)"
    )
    s.set_defaults(func=cmd_serve)

    img = sub.add_parser("image", help="the sandbox image").add_subparsers(dest="image_command", required=True)
    b = img.add_parser("build", help="build the sandbox image (with progress)")
    b.add_argument("--no-cache", action="store_true")
    b.add_argument("--base", default=None, help="base image (default: debian:bookworm-slim, made locally if needed)")
    b.add_argument("--if-needed", action="store_true", help="only when missing or out of date")
    b.set_defaults(func=cmd_image_build)
    img.add_parser(
        "push-nodes", help="load the image from this host's engine onto every swarm sandbox node lacking it"
    ).set_defaults(func=cmd_image_push_nodes)

    sub.add_parser("ls", parents=[on], help="list the sandboxes of this namespace").set_defaults(func=cmd_ls)
    r = sub.add_parser("rm", parents=[on], help="remove sandboxes (container and workspace)")
    r.add_argument("sandbox_ids", nargs="*")
    r.add_argument("--all", action="store_true")
    r.add_argument("--force", action="store_true", help="also those a running server (this or another) manages")
    r.set_defaults(func=cmd_rm)

    sub.add_parser("doctor", parents=[on], help="check that everything needed is in place").set_defaults(
        func=cmd_doctor
    )

    t = sub.add_parser("token", help="bearer tokens for the HTTP transport").add_subparsers(
        dest="token_command", required=True
    )
    ta = t.add_parser("add", help="create a token for an owner (printed once)")
    ta.add_argument("owner")
    ta.add_argument("--token-file", default=str(default_token_file()))
    ta.set_defaults(func=cmd_token_add)

    owner_help = "whose profiles: 'local' (stdio callers, the default) or an HTTP owner's name"
    lg = sub.add_parser("login", help="log in by hand through a live view; the login is saved to a profile")
    lg.add_argument("--profile", default=None, help="profile to save to (default: master)")
    lg.add_argument("--url", default=None, help="page to open first, e.g. the site's login page")
    lg.add_argument("--owner", default=LOCAL_OWNER, help=owner_help)
    lg.add_argument("--network", choices=["public", "none", "allowlist"], default=None, help="the sandbox's network")
    lg.add_argument("--allow-host", action="append", default=None, help="with --network allowlist (repeatable)")
    lg.add_argument("--no-browser", action="store_true", help="only print the live view link")
    lg.set_defaults(func=cmd_login)

    pr = sub.add_parser("profile", help="login profiles").add_subparsers(dest="profile_command", required=True)
    pl = pr.add_parser("list", help="profiles, with versions and cookie domains")
    pl.set_defaults(func=cmd_profile_list)
    ps = pr.add_parser("show", help="a profile's metadata and cookie domains (never values)")
    ps.add_argument("profile", nargs="?", default=None)
    ps.set_defaults(func=cmd_profile_show)
    pi = pr.add_parser("import", help="import a storageState JSON from any Playwright tool ('-': stdin)")
    pi.add_argument("file")
    pi.add_argument("--profile", default=None)
    pi.set_defaults(func=cmd_profile_import)
    pe = pr.add_parser("export", help="write a profile's storageState JSON (holds cookie values: keep it safe)")
    pe.add_argument("--profile", default=None)
    pe.add_argument("--output", "-o", default=None, help="file (created mode 600); stdout if omitted")
    pe.set_defaults(func=cmd_profile_export)
    pd = pr.add_parser("rm", help="delete a profile")
    pd.add_argument("profile")
    pd.set_defaults(func=cmd_profile_rm)
    for command in (pl, ps, pi, pe, pd):
        command.add_argument("--owner", default=LOCAL_OWNER, help=owner_help)
    return p


def main(argv: list[str] | None = None, *, make_backend: MakeBackend | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.make_backend = make_backend or _backend
    try:
        settings = Settings.load(log_level=args.log_level)
    except SettingsError as exc:
        if args.func is cmd_doctor:  # the first thing doctor checks: nothing else can be checked without them
            print(f"[FAIL] settings: {exc}\n       fix: correct or unset the variable(s) named")
        else:
            print(f"error: {exc}", file=sys.stderr)
        return 2
    logs.setup(settings.log_level)
    try:
        return int(args.func(args, settings) or 0)
    except BoxwrightError as exc:
        print(f"error: {exc.message} [{exc.code.value}]\nhint: {exc.hint}", file=sys.stderr)
        return 1
    except SettingsError as exc:  # a flag that makes the settings inconsistent (--backend swarm with a quota)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except IdentityError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except DockerException as exc:  # the last resort: whatever the engine refused, said in a line
        print(f"error: the Docker engine refused: {_docker_problem(exc)}", file=sys.stderr)
        return 1


def _docker_problem(exc: DockerException) -> str:
    """The engine's own words (an APIError's explanation), else the exception's first line."""
    explanation = getattr(exc, "explanation", None)
    text = str(explanation or exc or type(exc).__name__)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
