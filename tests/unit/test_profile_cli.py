"""`boxwright profile …` and `boxwright login` without Docker: the profile commands on a real store, and a
login over a FakeBackend whose live view a person opens in this machine's Chromium and then closes."""

from __future__ import annotations

import json
import stat
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from playwright.async_api import Browser, async_playwright

from host.cli import main
from host.config import Settings
from host.profiles.login import LoginRequest, run_login
from host.profiles.store import ProfileStore
from host.services import Services
from host.testing.fake_backend import FakeBackend
from rpc.errors import BoxwrightError, ErrorCode
from sandbox_image.browser.launch import LAUNCH_ARGS
from tests.unit.browser_harness import CHROMIUM
from tests.unit.test_live_view import until
from tests.unit.test_profile_sessions import eventually

SECRET = "cookie-value-never-printed"
COOKIE = {"name": "sid", "value": SECRET, "domain": ".example.test", "path": "/", "expires": -1, "httpOnly": True}
STATE = {"cookies": [COOKIE | {"secure": True, "sameSite": "Lax"}], "origins": []}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("BOXWRIGHT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("BOXWRIGHT_NAMESPACE", "unit")
    return Settings()


def test_profile_commands(env: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "state.json"
    source.write_text(json.dumps(STATE))
    assert main(["profile", "import", str(source), "--profile", "work"]) == 0
    assert "published, version 1" in capsys.readouterr().err
    assert main(["profile", "import", str(source), "--profile", "work"]) == 0
    assert "unchanged, version 1" in capsys.readouterr().err

    assert main(["profile", "list"]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["PROFILE", "VERSION", "UPDATED", "COOKIES", "DOMAINS", "LOGIN"]
    assert row.split()[:2] == ["work", "1"] and "example.test" in row

    assert main(["profile", "show", "work"]) == 0
    shown = capsys.readouterr()
    summary = json.loads(shown.out)
    assert summary["cookieDomains"] == ["example.test"] and summary["version"] == 1
    assert SECRET not in shown.out + shown.err

    out = tmp_path / "exported.json"
    assert main(["profile", "export", "--profile", "work", "-o", str(out)]) == 0
    assert json.loads(out.read_text()) == STATE and stat.S_IMODE(out.stat().st_mode) == 0o600
    assert main(["profile", "list", "--owner", "bob"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == []  # bob has none

    assert main(["profile", "rm", "work"]) == 0
    capsys.readouterr()
    assert main(["profile", "show", "work"]) == 1
    assert "[PROFILE_NOT_FOUND]" in capsys.readouterr().err
    assert main(["profile", "show", "../x"]) == 1
    assert "[INVALID_PARAMETER]" in capsys.readouterr().err
    source.write_text('{"cookies": {}}')
    assert main(["profile", "import", str(source)]) == 1
    assert "is not a Playwright storageState" in capsys.readouterr().err
    assert main(["profile", "import", str(tmp_path / "missing.json")]) == 2


def test_export_never_makes_a_profile_and_never_leaves_a_readable_file(
    env: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["profile", "export", "--profile", "typo"]) == 1  # reading makes a profile: not for a typo
    assert "[PROFILE_NOT_FOUND]" in capsys.readouterr().err and not ProfileStore(env).exists("local", "typo")
    source = tmp_path / "state.json"
    source.write_text(json.dumps(STATE))
    assert main(["profile", "import", str(source), "--profile", "work"]) == 0
    old = tmp_path / "old.json"
    old.write_text("{}")
    old.chmod(0o644)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("kept")
    link = tmp_path / "link.json"
    link.symlink_to(elsewhere)
    for target in (old, link):
        assert main(["profile", "export", "--profile", "work", "-o", str(target)]) == 0
        assert stat.S_IMODE(target.stat().st_mode) == 0o600 and json.loads(target.read_text()) == STATE
    assert not link.is_symlink() and elsewhere.read_text() == "kept"  # the link was replaced, not followed
    assert main(["profile", "export", "--profile", "work", "-o", str(tmp_path / "no" / "dir.json")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_a_damaged_profile_is_listed_as_damaged_and_hides_no_other(
    env: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = ProfileStore(env)
    store.import_state("local", "good", STATE, writer="test")
    store.import_state("local", "broken", STATE, writer="test")
    (store.paths.profile_dir("local", "broken") / "meta.json").write_text("{not json")
    listed = {p.profileId: p for p in store.list("local")}
    assert listed["good"].cookieCount == 1 and listed["good"].damaged is None
    assert "meta.json" in (listed["broken"].damaged or "")
    assert main(["profile", "list"]) == 0
    assert any(line.split()[:3] == ["broken", "-", "DAMAGED"] for line in capsys.readouterr().out.splitlines())
    with pytest.raises(BoxwrightError) as info:
        store.read("local", "broken")
    assert info.value.code is ErrorCode.INTERNAL_ERROR and "profile import" in info.value.hint
    assert main(["profile", "show", "broken"]) == 1  # an error and its hint, no traceback
    assert "is damaged" in capsys.readouterr().err
    assert store.import_state("local", "broken", STATE, writer="test").outcome == "published"  # new state mends it
    assert store.read("local", "broken").state == STATE


def test_profile_settings_have_one_name_and_one_order_of_precedence(
    env: Settings,
    fake: FakeBackend,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """TC-18, as it applies here: the seed splits its settings into `mmh.browser.*` and `mmh.scrape.*`
    and asks that both read consistently. Here each setting has one name (BOXWRIGHT_ + field), read by
    one Settings class that the CLI and the server share; a flag wins over the variable, the variable
    over the default — and both entry points find the same profiles."""
    source = tmp_path / "state.json"
    source.write_text(json.dumps(STATE))
    root = tmp_path / "elsewhere"
    monkeypatch.setenv("BOXWRIGHT_SNAPSHOT_ROOT", str(root))
    monkeypatch.setenv("BOXWRIGHT_DEFAULT_PROFILE_ID", "team")
    assert main(["profile", "import", str(source)]) == 0  # the variable names the profile
    assert main(["profile", "import", str(source), "--profile", "work"]) == 0  # the flag wins
    capsys.readouterr()
    assert sorted(p.name for p in (root / "local").iterdir() if p.is_dir()) == ["team", "work"]
    assert not (env.state_dir / "profiles").exists()  # the root's variable wins over the state dir's default

    server = Services(Settings(), backend=fake)  # what `boxwright serve` builds from the same env
    assert [p.profileId for p in server.profiles.store.list("local")] == ["team", "work"]
    assert server.settings.default_profile_id == "team"

    monkeypatch.setenv("BOXWRIGHT_DEFAULT_PROFILE_ID", "../team")
    assert main(["profile", "list"]) == 2
    assert "BOXWRIGHT_DEFAULT_PROFILE_ID" in capsys.readouterr().err  # a bad value is named, nothing is read
    monkeypatch.setenv("BOXWRIGHT_DEFAULT_PROFILE_ID", "team")
    monkeypatch.setenv("BOXWRIGHT_PROFILE_ID_REGEX", "^[a-z]{1,8}$")  # a stricter pattern, on top of the fixed one
    assert main(["profile", "show", "Work"]) == 1
    assert "[INVALID_PARAMETER]" in capsys.readouterr().err


@pytest.fixture
async def viewer() -> AsyncIterator[Browser]:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=list(LAUNCH_ARGS))
        yield browser
        await browser.close()


@pytest.mark.chromium
async def test_a_login_ends_when_its_page_is_closed(
    tmp_path: Path, fake: FakeBackend, viewer: Browser, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(
        state_dir=tmp_path / "state", namespace="unit", image="boxwright-sandbox:unit", login_refresh_interval_ms=500
    )
    store = ProfileStore(settings)
    services = Services(settings, backend=fake)
    store.import_state("local", "p1", STATE, writer="t")  # a login refreshes what is there
    request = LoginRequest(owner="local", profile_id="p1", url=None, network=None, open_browser=False)
    outcome: list[int] = []

    async def login() -> None:
        outcome.append(await run_login(settings, request, services=services))

    async with anyio.create_task_group() as tg:
        tg.start_soon(login)
        link = ""
        with anyio.fail_after(30):
            while not link:
                await anyio.sleep(0.1)
                link = next((line for line in capsys.readouterr().out.splitlines() if "#token=" in line), "")
        page = await viewer.new_page()
        await page.goto(link)
        await until(page, "window.liveView.frames > 0")
        assert await page.is_visible("#done")
        with pytest.raises(BoxwrightError) as busy:
            await run_login(settings, request)  # the profile is held (nothing started: fails first)
        assert busy.value.code is ErrorCode.PROFILE_BUSY
        exports = services.profiles.publisher.exports
        # Saved on the refresh interval, again and again, with nobody asking.
        await eventually(lambda: services.profiles.publisher.exports >= exports + 2, 30)
        await page.close()  # the person closes the page: the login ends, a few seconds later
    assert outcome == [0]
    err = capsys.readouterr().err
    assert "finished (the live view was closed)" in err and "unchanged (version 1)" in err, err
    assert SECRET not in err
    assert fake.list_sandboxes("unit") == []  # the login's sandbox is gone
    with store.login_lock("local", "p1"):  # and the profile free again
        pass


async def test_a_login_whose_link_expires_unused_ends_and_says_so(
    tmp_path: Path, fake: FakeBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    """The link's time ran out with nobody opening it: the login went on (its sandbox up) until the login
    timeout, then said "the sandbox went away" and exited 0 as if someone had logged in."""
    settings = Settings(state_dir=tmp_path / "state", namespace="unit", image="boxwright-sandbox:unit")
    services = Services(settings, backend=fake)
    request = LoginRequest(owner="local", profile_id="p2", url=None, network=None, open_browser=False)
    outcome: list[int] = []

    async def login() -> None:
        outcome.append(await run_login(settings, request, services=services))

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(login)
            await eventually(lambda: bool(services.live.views._views), 30)
            [view] = services.live.views._views.values()
            view.expires_at = time.monotonic()  # the link's ten minutes, gone
    assert outcome == [1]
    err = capsys.readouterr().err
    assert "link expired before it was opened" in err and "BOXWRIGHT_LIVE_VIEW_LINK_TTL" in err, err
    assert "went away" not in err and not fake._containers  # its sandbox is gone too
