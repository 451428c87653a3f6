"""The host's entry points without Docker: Services reconciles on start and cleans up on stop; the
CLI reads settings (refusing bad ones by name), lists and removes sandboxes, and makes tokens."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from host.cli import main
from host.config import Settings
from host.mcp.auth import TokenStore
from host.sandboxes.manager import SandboxManager
from host.sandboxes.models import Caller
from host.services import Services
from host.testing.fake_backend import FakeBackend
from rpc.auth import token_sha256

ALICE = Caller(owner="alice")


async def test_services_destroy_their_sandboxes_on_stop_unless_keeping(
    host_settings: Settings, fake: FakeBackend
) -> None:
    async with Services(host_settings, backend=fake).running() as services:
        await services.manager.create(ALICE)
        assert services.image is None  # a backend passed in brings its own images
    assert fake.list_sandboxes("unit") == []

    keeping = host_settings.replace(keep_on_exit=True)
    async with Services(keeping, backend=fake).running() as services:
        kept = await services.manager.create(ALICE)
    assert [i.sandbox_id for i in fake.list_sandboxes("unit")] == [kept.id]
    async with Services(host_settings, backend=fake).running() as services:  # adopted at start
        assert [r.id for r in services.manager.list(ALICE)] == [kept.id]
    assert fake.list_sandboxes("unit") == []


def _env(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    monkeypatch.setenv("BOXWRIGHT_STATE_DIR", str(settings.state_dir))
    monkeypatch.setenv("BOXWRIGHT_NAMESPACE", settings.namespace)


async def test_ls_shows_what_the_labels_say_and_rm_removes(
    sandbox_manager: SandboxManager,
    host_settings: Settings,
    fake: FakeBackend,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _env(monkeypatch, host_settings)
    rec = await sandbox_manager.create(ALICE, name="demo")
    assert main(["ls"], make_backend=lambda _: fake) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == [
        "SANDBOX", "OWNER", "NAME", "STATUS", "NETWORK", "SERVER", "MANAGED", "CREATED", "EXPIRES"
    ]  # fmt: skip
    assert row.split()[:8] == [rec.id, "alice", "demo", "running", "public", "this", "one", "yes"]
    assert rec.expires_at.strftime("%Y-%m-%d %H:%M:%SZ") in row

    assert main(["rm", rec.id], make_backend=lambda _: fake) == 1  # a live server manages it
    assert "managed by a running server" in capsys.readouterr().err
    assert main(["rm", "sbx_nope"], make_backend=lambda _: fake) == 1
    assert main(["rm", "--force", rec.id], make_backend=lambda _: fake) == 0
    assert capsys.readouterr().out.strip() == f"{rec.id}: removed"
    assert fake.list_sandboxes("unit") == []


def test_bad_settings_stop_every_command_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BOXWRIGHT_MAX_SANDBOXES", "lots")
    assert main(["ls"]) == 2
    assert "BOXWRIGHT_MAX_SANDBOXES" in capsys.readouterr().err
    monkeypatch.delenv("BOXWRIGHT_MAX_SANDBOXES")
    assert main(["--log-level", "chatty", "ls"]) == 2
    assert "BOXWRIGHT_LOG_LEVEL" in capsys.readouterr().err


def test_token_add_prints_once_and_stores_only_the_hash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tokens.json"
    assert main(["token", "add", "alice", "--token-file", str(path)]) == 0
    token = capsys.readouterr().out.strip()
    assert token.startswith("bxw_") and token not in path.read_text()
    assert json.loads(path.read_text())["tokens"][0]["owner"] == "alice"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert main(["token", "add", "not an owner!", "--token-file", str(path)]) == 2


def test_token_add_refuses_the_local_owner_and_a_name_with_a_newline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tokens.json"
    assert main(["token", "add", "local", "--token-file", str(path)]) == 2
    assert "stdio and the command line" in capsys.readouterr().err
    assert main(["token", "add", "alice\n", "--token-file", str(path)]) == 2
    assert not path.exists()
    # A hand-edited file naming them lets nobody in as those owners; its other tokens still work.
    path.write_text(
        json.dumps(
            {
                "tokens": [
                    {"owner": "local", "sha256": token_sha256("t-local")},
                    {"owner": "alice\n", "sha256": token_sha256("t-nl")},
                    {"owner": "bob", "sha256": token_sha256("t-bob")},
                ]
            }
        )
    )
    store = TokenStore.load(path)
    assert store.owner_of("Bearer t-local") is None and store.owner_of("Bearer t-nl") is None
    assert store.owner_of("Bearer t-bob") == "bob"
