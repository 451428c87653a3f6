"""The `scrape` MCP tool over a FakeBackend (real agents and the host's Chromium in this process, no
Docker): its schema, the throw-away sandbox that is always removed, bad inputs that open nothing, the
login profiles (loaded into the page's context, what it ends with saved back), and image content for
screenshots. The real engine and image: tests/integration."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from host.mcp.registry import PortableSchema
from host.sandboxes.models import Caller
from host.services import Services
from host.testing.fake_backend import FakeBackend
from rpc.models.scrape import ScrapeOutput, ScrapeRequest
from tests.unit.test_mcp_tools import serving

pytestmark = pytest.mark.chromium  # launches the host's Chromium

SECRET = "cookie-value-never-returned"
PAGE = """<!doctype html><html lang="en"><head><title>Tool page</title></head><body>
<nav><a href="/">Home</a></nav><main><article><h1>Scraped through MCP</h1>
<p>This paragraph is the main content of the page and it is long enough to be kept by the extractor.</p>
<p>A second paragraph, so the article has some body to it and reads like one.</p></article></main></body></html>"""


BUTTON = """<!doctype html><html lang="en"><head><title>Button</title></head><body><main><h1>Button page</h1>
<p id="out">Nothing shown yet on this page.</p><button id="show"
onclick="document.getElementById('out').textContent = 'Shown after the click, with words enough to read.'">Show</button>
</main></body></html>"""
ARRIVED, RELEASE = asyncio.Event(), asyncio.Event()
LOADS = [0]  # /changing: how often it was loaded  # /held: the page waits until the test lets it answer


@pytest.fixture
async def page_url() -> AsyncIterator[str]:
    async def article(_request: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    async def button(_request: web.Request) -> web.Response:
        return web.Response(text=BUTTON, content_type="text/html")

    async def pdf(_request: web.Request) -> web.Response:
        return web.Response(body=b"%PDF-1.4\n", content_type="application/pdf")

    async def set_cookie(_request: web.Request) -> web.Response:
        response = web.Response(text="<title>Set</title><h1>Welcome</h1>", content_type="text/html")
        response.set_cookie("member", SECRET, httponly=True, path="/")
        return response

    async def members(request: web.Request) -> web.Response:
        who = "Member area" if request.cookies.get("member") == SECRET else "Please log in"
        return web.Response(text=f"<title>Members</title><h1>{who}</h1>", content_type="text/html")

    async def changing(_request: web.Request) -> web.Response:
        LOADS[0] += 1  # each load of the page says which load it is: parts of two loads would not match
        paras = "".join(f"<p>Load {LOADS[0]}, paragraph {i}: {'words of the article ' * 8}</p>" for i in range(60))
        return web.Response(
            text=f"<title>Changing</title><main><h1>Changing</h1>{paras}</main>", content_type="text/html"
        )

    async def signed_in_only(_request: web.Request) -> web.Response:
        return web.Response(status=401, text="<title>Sign in</title><h1>Sign in first</h1>", content_type="text/html")

    async def held(request: web.Request) -> web.Response:
        ARRIVED.set()
        await RELEASE.wait()
        return await set_cookie(request)

    async def moved(_request: web.Request) -> web.Response:
        raise web.HTTPFound("/")

    app = web.Application()
    app.router.add_get("/", article)
    app.router.add_get("/held", held)
    app.router.add_get("/set", set_cookie)
    app.router.add_get("/members", members)
    app.router.add_get("/signed-in-only", signed_in_only)
    app.router.add_get("/changing", changing)
    app.router.add_get("/file.pdf", pdf)
    app.router.add_get("/button", button)
    app.router.add_get("/moved", moved)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/"  # type: ignore[union-attr]
    await runner.cleanup()


def test_schemas_derive_from_the_models() -> None:
    schema = ScrapeRequest.model_json_schema(schema_generator=PortableSchema)
    assert '"oneOf"' not in json.dumps(schema) and '"discriminator"' not in json.dumps(schema)
    props = schema["properties"]
    assert schema["required"] == ["url"]
    assert set(props) == {
        "url", "format", "onlyMainContent", "waitFor", "timeoutMs", "offset", "maxChars", "includeTags", "excludeTags",
        "mobile", "locale", "timezone", "geolocation", "skipTlsVerification", "userAgent", "httpAuth", "proxy",
        "headers", "headersOrigin",
        "blockAds", "blockResources", "blockCookieBanners",
        "includeIframes", "profileId", "sandboxId", "maxAge", "actions",
    }  # fmt: skip
    given = props["headers"]["anyOf"][0]
    assert given["type"] == "object" and given["additionalProperties"] == {"type": "string"}
    assert given["maxProperties"] == 32
    kinds = [ref["$ref"].rsplit("/", 1)[1] for ref in props["actions"]["anyOf"][0]["items"]["anyOf"]]
    assert kinds == [
        "ClickAction", "WriteAction", "PressAction", "ScrollAction", "WaitAction", "HoverAction", "SelectAction",
        "ScriptAction",
    ]  # fmt: skip
    assert schema["$defs"]["ClickAction"]["properties"]["type"]["const"] == "click"
    assert props["offset"]["minimum"] == 0 and props["offset"]["default"] == 0
    assert props["includeIframes"]["default"] is False
    assert props["format"]["default"] == "markdown" and props["onlyMainContent"]["default"] is True
    assert (props["waitFor"]["minimum"], props["waitFor"]["maximum"]) == (0, 60000)
    assert props["profileId"]["default"] == "master" and props["profileId"]["maxLength"] == 64
    assert "screenshot" not in ScrapeOutput.model_json_schema()["properties"]  # image content instead


@pytest.mark.parametrize("profile_id", ["../x", "a/b", "a\\b", "..", "x" * 65, "", "a b", "é"])
def test_bad_profile_ids_are_refused_by_the_model(profile_id: str) -> None:
    with pytest.raises(ValueError, match="profileId"):
        ScrapeRequest(url="https://example.org/", profileId=profile_id)


async def test_scrape_on_a_login_profile(services: Services, fake: FakeBackend, page_url: str) -> None:
    """The page's context starts from the caller's profile and what it ends with is saved back (compare-and-set
    on the version read before); other profiles and other owners see none of it; no state in the answer."""
    store = services.profiles.store
    who = ["alice"]
    async with serving(services, lambda _ctx: Caller(owner=who[0], session=who[0])) as alice:
        before = await alice.ok("scrape", {"url": page_url + "members", "profileId": "work"})
        assert "Please log in" in before["markdown"] and store.read("alice", "work").version == 0
        answer = await alice.client.call_tool("scrape", {"url": page_url + "set", "profileId": "work"})
        assert not answer.is_error and SECRET not in str(answer.content) + str(answer.structured_content)
        saved = store.read("alice", "work")
        assert saved.version == 1 and [c["name"] for c in saved.state["cookies"]] == ["member"]
        after = await alice.ok("scrape", {"url": page_url + "members", "profileId": "work"})
        assert "Member area" in after["markdown"]  # a new throw-away sandbox, logged in from the profile
        assert store.read("alice", "work").version == 1  # nothing changed: no new version
        default = await alice.ok("scrape", {"url": page_url + "members"})
        assert "Please log in" in default["markdown"] and store.read("alice", "master").version == 0
        # A scrape that started from version 1 ends after a new login published version 2: its state is
        # dropped (compare-and-set), the newer login stays.
        async with asyncio.TaskGroup() as tg:
            late = tg.create_task(alice.ok("scrape", {"url": page_url + "held", "profileId": "work"}))
            await asyncio.wait_for(ARRIVED.wait(), 30)
            store.publish("alice", "work", {"cookies": [], "origins": []}, base_version=None, writer="a new login")
            RELEASE.set()
        assert late.result()["title"] == "Set"
        assert store.read("alice", "work").version == 2 and store.read("alice", "work").state["cookies"] == []
        who[0] = "bob"
        theirs = await alice.ok("scrape", {"url": page_url + "members", "profileId": "work"})
        assert "Please log in" in theirs["markdown"]  # bob's "work" is his own
        assert store.read("bob", "work").version == 0
    assert fake.list_sandboxes("unit") == []


async def test_scrape_in_a_throw_away_sandbox(services: Services, fake: FakeBackend, page_url: str) -> None:
    async with serving(services) as mcp:
        tools = {t.name: t for t in (await mcp.client.list_tools()).tools}
        assert tools["scrape"].input_schema == ScrapeRequest.model_json_schema(schema_generator=PortableSchema)
        assert tools["scrape"].output_schema == ScrapeOutput.model_json_schema()

        out = await mcp.ok("scrape", {"url": page_url})
        assert out["title"] == "Tool page" and out["status"] == 200 and out["url"] == page_url
        assert "# Scraped through MCP" in out["markdown"] and "Home" not in out["markdown"]
        assert out["metadata"]["language"] == "en"
        assert fake.list_sandboxes("unit") == [] and (await mcp.ok("sandbox_list"))["sandboxes"] == []

        part = await mcp.client.call_tool("scrape", {"url": page_url, "maxChars": 40})
        first = part.content[0].text.split("\n", 1)[0]  # type: ignore[union-attr]
        assert part.structured_content is not None and part.structured_content["nextOffset"] is not None
        total, offset = part.structured_content["totalChars"], part.structured_content["nextOffset"]
        assert first.endswith(
            f"markdown, {offset} chars of {total}, main content (truncated; offset={offset} reads on)"
        )

        shot = await mcp.client.call_tool("scrape", {"url": page_url, "format": "screenshot"})
        assert not shot.is_error and "screenshot" not in shot.structured_content
        png = next(block for block in shot.content if block.type == "image")
        assert base64.b64decode(png.data)[:8] == b"\x89PNG\r\n\x1a\n"

        locked = await mcp.client.call_tool("scrape", {"url": page_url + "signed-in-only"})
        line = locked.content[0].text.split("\n", 1)[0]  # type: ignore[union-attr]
        assert not locked.is_error and "[401]" in line and "httpAuth" in line and "profileId" in line, line

        failed = await mcp.error("scrape", {"url": page_url + "file.pdf"})
        assert failed.code == "UNSUPPORTED_CONTENT_TYPE" and "sandboxId" not in failed.data["details"]
        assert fake.list_sandboxes("unit") == []


async def test_bad_inputs_open_nothing(services: Services, fake: FakeBackend, page_url: str) -> None:
    bad = [
        ({"url": "ftp://example.org/"}, "url"),
        ({"url": "file:///etc/passwd"}, "url"),
        ({"url": "javascript:alert(1)"}, "url"),
        ({"url": "http://127.0.0.1:99999/"}, "url"),  # port out of range: refused here, not by the browser
        ({"url": page_url, "format": "pdf"}, "format"),
        ({"url": page_url, "waitFor": -1}, "waitFor"),
        ({"url": page_url, "waitFor": 60001}, "waitFor"),
        ({"url": page_url, "profileId": "../x"}, "profileId"),
        ({"url": page_url, "profileId": "a/b"}, "profileId"),
        ({"url": page_url, "profileId": "p" * 65}, "profileId"),
        ({"url": page_url, "timeoutMs": 10}, "timeoutMs"),
        ({"url": page_url, "extra": 1}, "extra"),
        ({"url": page_url, "actions": [{"type": "click", "selector": "ref_2"}]}, "actions.0.click.selector"),
        ({"url": page_url, "actions": [{"type": "jump"}]}, "actions.0"),
        ({"url": page_url, "actions": [{"type": "wait", "milliseconds": 30_000}] * 3}, "actions"),
        ({"url": page_url, "headers": {"Host": "elsewhere.test"}}, "headers"),
        ({"url": page_url, "headers": {"Authorization": "Bearer s3cret-tok\r\nX-Injected: 1"}}, "headers"),
        ({"url": page_url, "headersOrigin": "https://elsewhere.test"}, "(arguments)"),
        ({}, "url"),
    ]
    async with serving(services) as mcp:
        for args, field in bad:
            err = await mcp.error("scrape", args)
            assert err.code == "INVALID_PARAMETER", (args, err.data)
            assert [e["field"] for e in err.data["details"]["errors"]] == [field], (args, err.data)
            assert "s3cret-tok" not in err.text  # a header's value is a secret: not echoed back
        assert fake.list_sandboxes("unit") == []
    assert not services.settings.profiles_root.exists()  # no bad profile id reached the disk


async def test_in_a_given_sandbox_and_not_in_anothers(services: Services, fake: FakeBackend, page_url: str) -> None:
    async with serving(services, lambda _ctx: Caller(owner="alice", session="a")) as alice:
        sid = (await alice.ok("sandbox_create"))["sandboxId"]
        links = await alice.ok("scrape", {"url": page_url, "format": "links", "sandboxId": sid})
        assert links["links"] == [page_url]
        assert [c.sandbox_id for c in fake.list_sandboxes("unit")] == [sid]  # no other sandbox was made
    async with serving(services, lambda _ctx: Caller(owner="bob", session="b")) as bob:
        theirs = await bob.error("scrape", {"url": page_url, "sandboxId": sid, "profileId": "work"})
        assert theirs.code == "SANDBOX_NOT_FOUND"
    assert not (services.settings.profiles_root / "bob").exists()  # refused before a profile was read


async def test_a_sign_in_page_says_what_gets_past_it(services: Services, page_url: str) -> None:
    async with serving(services) as mcp:
        await mcp.ok("sandbox_create")
        goto = await mcp.call("browser_goto", {"url": page_url + "signed-in-only"})
        assert "[401]" in goto.summary and "httpAuth" in goto.summary, goto.summary
        plain = await mcp.call("browser_goto", {"url": page_url})
        assert plain.summary == f"browser_goto ok: {page_url} (Tool page) [200]"


async def test_a_page_that_moved_says_the_headers_did_not_follow(services: Services, page_url: str) -> None:
    token = {"Authorization": "Bearer tool-test"}
    async with serving(services) as mcp:
        sid = (await mcp.ok("sandbox_create"))["sandboxId"]
        moved = await mcp.call("scrape", {"url": page_url + "moved", "sandboxId": sid, "headers": token})
        assert f"the page moved to {page_url}; the headers went to {page_url[:-1]}" in moved.summary, moved.summary
        there = await mcp.call("scrape", {"url": page_url, "sandboxId": sid, "headers": token})
        plain = await mcp.call("scrape", {"url": page_url + "moved", "sandboxId": sid})
        assert "moved" not in there.summary and "moved" not in plain.summary, (there.summary, plain.summary)
        assert "tool-test" not in moved.text + there.text


async def test_the_parts_of_a_long_text_come_from_one_reading(services: Services, page_url: str) -> None:
    """A text cut into parts is read once: the next parts (offset > 0, the same arguments) are cut from that
    reading at once — the page is not loaded again, so nothing shifts — and add up to it; another owner's
    call, other arguments or a first part load the page afresh."""
    who = ["alice"]
    url = page_url + "changing"
    async with serving(services, lambda _ctx: Caller(owner=who[0], session=who[0])) as mcp:
        loads = LOADS[0]
        first = await mcp.ok("scrape", {"url": url, "maxChars": 1500})
        assert first["nextOffset"] is not None and not first["reused"] and LOADS[0] == loads + 1
        parts, answer = [first["markdown"]], first
        while answer["nextOffset"] is not None:
            answer = await mcp.ok("scrape", {"url": url, "maxChars": 1500, "offset": answer["nextOffset"]})
            assert answer["reused"] and answer["totalChars"] == first["totalChars"] and answer["title"] == "Changing"
            parts.append(answer["markdown"])
        text = "".join(parts)
        assert LOADS[0] == loads + 1 and len(parts) > 3 and len(text) == first["totalChars"]
        assert f"Load {loads + 1}, paragraph 59" in text and f"Load {loads + 2}" not in text
        call = await mcp.client.call_tool("scrape", {"url": url, "maxChars": 1500, "offset": first["nextOffset"]})
        assert "reused" in call.content[0].text.split("\n", 1)[0]  # type: ignore[union-attr]
        # A different maxChars is the same reading; a first part again, or other arguments, a new one.
        other_size = await mcp.ok("scrape", {"url": url, "maxChars": 700, "offset": first["nextOffset"]})
        assert (
            other_size["reused"]
            and other_size["markdown"] == text[first["nextOffset"] :][: len(other_size["markdown"])]
        )
        whole_page = await mcp.ok("scrape", {"url": url, "onlyMainContent": False, "offset": 10})
        assert not whole_page["reused"] and LOADS[0] == loads + 2
        again = await mcp.ok("scrape", {"url": url, "maxChars": 1500})
        assert not again["reused"] and LOADS[0] == loads + 3 and f"Load {loads + 3}" in again["markdown"]
        who[0] = "bob"  # the same arguments from another owner: never alice's reading
        theirs = await mcp.ok("scrape", {"url": url, "maxChars": 1500, "offset": first["nextOffset"]})
        assert not theirs["reused"] and LOADS[0] == loads + 4


async def test_max_age_answers_from_a_recent_reading(services: Services, page_url: str) -> None:
    """maxAge: a first call answered from the owner's own reading of the same arguments if it is no older; the
    default (0), an older reading, other arguments or another owner load the page."""
    who = ["alice"]
    url = page_url + "changing"
    async with serving(services, lambda _ctx: Caller(owner=who[0], session=who[0])) as mcp:
        loads = LOADS[0]
        read = await mcp.ok("scrape", {"url": url, "onlyMainContent": False})
        assert not read["reused"] and read["ageMs"] is None and LOADS[0] == loads + 1
        call = await mcp.call("scrape", {"url": url, "onlyMainContent": False, "maxAge": 60_000, "maxChars": 500})
        again = call.data
        assert again["reused"] and LOADS[0] == loads + 1 and 0 <= again["ageMs"] < 60_000, again
        assert again["markdown"] == read["markdown"][: len(again["markdown"])] and again["totalChars"] == len(
            read["markdown"]
        )
        assert "reused: from a reading" in call.summary, call.summary
        fresh = await mcp.ok("scrape", {"url": url, "onlyMainContent": False})  # maxAge 0: always loaded
        assert not fresh["reused"] and LOADS[0] == loads + 2 and f"Load {loads + 2}" in fresh["markdown"]
        await asyncio.sleep(0.05)
        old = await mcp.ok("scrape", {"url": url, "onlyMainContent": False, "maxAge": 10})  # older than 10 ms
        assert not old["reused"] and LOADS[0] == loads + 3
        links = await mcp.ok("scrape", {"url": url, "format": "links"})
        kept = await mcp.ok("scrape", {"url": url, "format": "links", "maxAge": 60_000})
        assert kept["reused"] and kept["links"] == links["links"] and LOADS[0] == loads + 4
        html = await mcp.ok("scrape", {"url": url, "format": "html", "maxAge": 60_000})  # another format
        assert not html["reused"] and LOADS[0] == loads + 5
        who[0] = "bob"
        theirs = await mcp.ok("scrape", {"url": url, "onlyMainContent": False, "maxAge": 60_000})
        assert not theirs["reused"] and LOADS[0] == loads + 6
        bad = await mcp.error("scrape", {"url": url, "maxAge": 600_001})
        assert bad.code == "INVALID_PARAMETER" and bad.data["details"]["errors"][0]["field"] == "maxAge"


async def test_actions_come_before_the_reading_and_are_part_of_what_is_kept(services: Services, page_url: str) -> None:
    url = page_url + "button"
    clicked = {"url": url, "onlyMainContent": False, "actions": [{"type": "click", "selector": "#show"}]}
    async with serving(services) as mcp:
        plain = await mcp.ok("scrape", {"url": url, "onlyMainContent": False})
        assert "Nothing shown yet" in plain["markdown"] and plain["actions"] is None
        call = await mcp.call("scrape", clicked)
        assert "Shown after the click" in call.data["markdown"], call.data
        assert call.data["actions"] == [
            {"type": "click", "times": 1, "navigated": False, "opened": False, "url": url, "value": None}
        ]
        assert call.summary.endswith(", after 1 action"), call.summary
        # A kept reading answers only the same actions: the plain one is not the clicked one, nor the reverse.
        again = await mcp.ok("scrape", {**clicked, "maxAge": 60_000})
        assert again["reused"] and "Shown after the click" in again["markdown"]
        without = await mcp.ok("scrape", {"url": url, "onlyMainContent": False, "maxAge": 60_000})
        assert without["reused"] and "Nothing shown yet" in without["markdown"]
        skipped = await mcp.call(
            "scrape", {"url": url, "actions": [{"type": "click", "selector": "#gone", "optional": True}]}
        )
        assert skipped.summary.endswith(", after 1 action (1 had nothing to act on)"), skipped.summary
        missing = await mcp.error(
            "scrape", {"url": url, "timeoutMs": 5000, "actions": [{"type": "click", "selector": "#gone"}]}
        )
        assert missing.code == "ELEMENT_NOT_FOUND" and missing.data["details"]["action"] == 0, missing.data
        assert "optional" in missing.data["recoverHint"]


async def test_a_script_action_is_for_local_callers_only(services: Services, fake: FakeBackend, page_url: str) -> None:
    script = {"url": page_url + "button", "actions": [{"type": "script", "script": "document.title"}]}
    async with serving(services, lambda _ctx: Caller(owner="bob", session="b", trust="remote")) as remote:
        refused = await remote.error("scrape", script)
        assert refused.code == "TRUST_LEVEL_NOT_ALLOWED" and "a script action" in refused.data["error"]
        assert fake.list_sandboxes("unit") == []  # refused before a sandbox was made
    async with serving(services) as local:
        done = await local.ok("scrape", script)
        assert done["actions"][0]["value"] == "Button"
