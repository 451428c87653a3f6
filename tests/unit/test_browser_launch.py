"""Chromium's launch flags (sandbox_image.browser.launch, issue 12: memory per browsing sandbox).

Chromium honours only the last --disable-features / --enable-features switch, and Playwright passes its
own lists before ours: ours must repeat Playwright's, or its fixes (HTTPS upgrades off, screenshots on a
new surface, ...) would silently go. Checked against the installed Playwright driver's own source, so an
upgrade that changes its lists fails here; then the launched browser is checked for what the flags cut.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import playwright
import pytest
from aiohttp import web

from sandbox_image.browser import launch
from sandbox_image.config import SandboxSettings
from tests.unit.browser_harness import CHROMIUM, our_browser_pids

DRIVER_BUNDLE = Path(playwright.__file__).parent / "driver" / "package" / "lib" / "coreBundle.js"


def _playwright_list(name: str) -> set[str]:
    """The feature names in Playwright's `<name> = [...]` (or `= () => [...]`) list, comments dropped."""
    source = DRIVER_BUNDLE.read_text()
    found = re.search(rf"\b{name} = (?:\(\) => )?\[(.*?)\]\.filter\(Boolean\)", source, re.S)
    assert found, f"{name} not found in {DRIVER_BUNDLE}: Playwright changed how it passes Chromium features"
    body = "\n".join(line.split("//", 1)[0] for line in found.group(1).splitlines())
    return set(re.findall(r'"([A-Za-z0-9]+)"', body))


def _switch(name: str) -> set[str]:
    [value] = [a.split("=", 1)[1] for a in launch.LAUNCH_ARGS if a.startswith(f"--{name}=")]
    return set(value.split(","))


def test_our_feature_switches_repeat_playwrights() -> None:
    disabled, enabled = _playwright_list("disabledFeatures"), _playwright_list("enabledFeatures")
    assert "HttpsUpgrades" in disabled and "CDPScreenshotNewSurface" in enabled  # the parse found them
    assert disabled <= _switch("disable-features"), disabled - _switch("disable-features")
    assert enabled <= _switch("enable-features"), enabled - _switch("enable-features")
    assert set(launch.PLAYWRIGHT_DISABLED_FEATURES) == disabled  # the copy is exact, nothing stale
    assert set(launch.PLAYWRIGHT_ENABLED_FEATURES) == enabled


def test_chromium_keeps_its_site_isolation_and_the_flags_stay_few() -> None:
    joined = " ".join(launch.LAUNCH_ARGS)
    for weakening in ("site-per-process", "IsolateOrigins", "site-isolation", "no-zygote", "single-process"):
        assert weakening not in joined
    # Certificates are checked everywhere but the sandbox's own loopback.
    assert "--allow-insecure-localhost" in launch.LAUNCH_ARGS and "ignore-certificate-errors" not in joined


def _processes_of(browser_pid: int) -> list[bytes]:
    """Command lines of the browser process's descendants."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_bytes()
            except OSError:
                continue
            children.setdefault(int(stat[stat.rfind(b")") + 2 :].split()[1]), []).append(int(name))
    out, todo = [], [browser_pid]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            todo.append(child)
            try:
                out.append(Path(f"/proc/{child}/cmdline").read_bytes())
            except OSError:
                continue
    return out


def _driver_environ(browser_pid: int) -> list[bytes]:
    """The environment of the browser's parent: Playwright's driver."""
    driver = int(Path(f"/proc/{browser_pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])
    return Path(f"/proc/{driver}/environ").read_bytes().split(b"\0")


@pytest.mark.chromium
async def test_the_launched_browser_has_no_omnibox_renderer_spare_renderer_or_network_process() -> None:
    from sandbox_image.browser.service import BrowserService

    service = BrowserService(SandboxSettings(chromium=CHROMIUM))
    before = set(our_browser_pids())
    before_env = {name: os.environ.get(name) for name in launch.DRIVER_ENV}
    try:
        session = service.sessions.get(None)
        tab = await session.active_tab()
        assert tab.page is not None
        await tab.page.goto("data:text/html,<h1>hello</h1>")
        assert len(await tab.page.screenshot()) > 1000  # still renders
        [pid] = set(our_browser_pids()) - before
        processes = _processes_of(pid)
        renderers = [c for c in processes if b"--type=renderer" in c]
        assert len(renderers) == 1, renderers  # the tab's own; no omnibox WebUI, no idle spare
        assert not [c for c in processes if b"network.mojom.NetworkService" in c]
        assert [c for c in processes if b"--type=gpu-process" in c]  # software GL stays (WebGL, canvas)
        # Playwright's driver (the browser's parent) got DRIVER_ENV; this process's environment did not keep it.
        environ = _driver_environ(pid)
        for name, value in launch.DRIVER_ENV.items():
            if name not in os.environ:
                assert f"{name}={value}".encode() in environ
        assert {name: os.environ.get(name) for name in launch.DRIVER_ENV} == before_env
        cdp = await (await service.engine.browser()).new_browser_cdp_session()
        targets = (await cdp.send("Target.getTargets"))["targetInfos"]
        assert [t["url"] for t in targets if t["type"] != "page"] == []
    finally:
        await service.on_cleanup(web.Application())


async def test_a_launch_at_the_pids_limit_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """With every process of the sandbox taken, the driver cannot be forked (EAGAIN): that was answered as a
    broken image ("recreate the sandbox") while code_run said PROCESS_LIMIT_REACHED."""
    from rpc.errors import BoxwrightError, ErrorCode
    from sandbox_image.browser import engine as engine_module

    async def no_fork() -> None:
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(engine_module, "_start_driver", no_fork)
    engine = engine_module.Engine(SandboxSettings(chromium=CHROMIUM))
    with pytest.raises(BoxwrightError) as refused:
        await engine.browser()
    assert refused.value.code is ErrorCode.PROCESS_LIMIT_REACHED, refused.value
    await engine.close()
