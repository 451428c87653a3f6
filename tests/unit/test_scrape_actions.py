"""scrape's actions — what a visitor does on the page before it is read — on the real Chromium of this machine,
through the agent's dispatcher, on pages of this module's own server: "Load more" until the list is whole, an
endless list scrolled to its end, a search form that goes to another page, a late element waited for,
select / hover / press; and every way an action can fail, each naming the action, nothing left open."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from pydantic import ValidationError

from rpc import methods
from rpc.deadline import LADDER
from rpc.models.scrape import MAX_ACTIONS, ScrapePageParams, ScrapeRequest
from sandbox_image.scrape import actions as scrape_actions
from tests.unit.browser_harness import BrowserDriver
from tests.unit.test_scrape_pdf import REPORT_PDF
from tests.unit.test_scrape_service import png_size, scraper, serve_routes  # noqa: F401 (fixture)

# A listing: five items come with the page, five more per "Load more" (fetched), twice; then the button goes.
LIST = """<!doctype html><html lang="en"><head><title>Fox list</title></head><body><main><h1>Fox list</h1>
<ul id="items"></ul><button id="more">Load more</button></main>
<script>
let batch = 0;
async function more() {
  batch += 1;
  const items = await (await fetch("/items?batch=" + batch)).json();
  for (const text of items) {
    const li = document.createElement("li"); li.textContent = text; document.getElementById("items").append(li);
  }
  if (batch >= 3) document.getElementById("more").remove();
}
more();
document.getElementById("more").onclick = more;
</script></body></html>"""
# An endless list: a 1500 px batch more each time its end comes into view, four batches in all.
ENDLESS = """<!doctype html><html lang="en"><head><title>Endless</title></head><body><main><h1>Endless</h1>
<div id="feed"></div><div id="end" style="height: 10px"></div></main>
<script>
let batch = 0;
function add() {
  batch += 1;
  const section = document.createElement("section");
  section.style.height = "1500px";
  section.innerHTML = "<h2>Batch " + batch + "</h2><p>Words of batch number " + batch + " in the endless list.</p>";
  document.getElementById("feed").append(section);
  if (batch >= 4) seen.disconnect();
}
const seen = new IntersectionObserver((entries) => {
  if (entries.some((entry) => entry.isIntersecting)) setTimeout(add, 100);
});
add();
seen.observe(document.getElementById("end"));
</script></body></html>"""
# Three questions whose answers open on a click each (a fourth button is hidden, and stays so).
FAQ = (
    """<!doctype html><html lang="en"><head><title>FAQ</title></head><body><main><h1>Questions</h1>
"""
    + "".join(
        f"""<section><h2>Question {n}</h2><button onclick="this.nextElementSibling.hidden = false">Show answer</button>
<p hidden>Answer {n}: foxes sleep in dens by day and hunt at dusk.</p></section>"""
        for n in (1, 2, 3)
    )
    + """<button style="display: none">Show answer</button></main></body></html>"""
)
SEARCH = """<!doctype html><html lang="en"><head><title>Search</title></head><body><main><h1>Search foxes</h1>
<form action="/results"><input id="q" name="q" placeholder="Search foxes"><button>Go</button></form>
<p>Go fast.</p><p>Go fast.</p></main></body></html>"""
# A shop card: the price follows the size chosen, a menu opens on hover, keys pressed are written down; a
# paragraph comes 1.5 s after load (no request: the smart wait has settled before it).
SHOP = """<!doctype html><html lang="en"><head><title>Shop</title></head><body><main><h1>Walnut desk</h1>
<label for="size">Size</label><select id="size"><option value="s">Small</option><option value="m">Medium</option>
</select>
<p id="price">Price 10 euros</p><div id="menu">Menu <span id="sub" hidden>Submenu words</span></div>
<input id="find" value="old" onkeyup="document.getElementById('found').textContent = 'Finding ' + this.value">
<p id="found">Nothing found yet</p><p id="keys">Keys:</p><button id="checkout" disabled>Checkout</button>
<div id="ad" style="position: fixed; top: 0; width: 100%; height: 40px; background: white; z-index: 9">Ad</div>
<button id="top" style="position: fixed; top: 5px; left: 5px">Top</button></main>
<script>
const size = document.getElementById("size"), price = document.getElementById("price");
size.onchange = () => { price.textContent = "Price " + (size.value === "m" ? 12 : 10) + " euros"; };
document.getElementById("menu").onmouseenter = () => { document.getElementById("sub").hidden = false; };
document.addEventListener("keydown", (e) => { document.getElementById("keys").textContent += " " + e.key; });
setTimeout(() => {
  const p = document.createElement("p"); p.id = "late"; p.textContent = "Late words, here after a while";
  document.querySelector("main").append(p);
}, 1500);
</script></body></html>"""


def html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, content_type="text/html", status=status)


async def items(request: web.Request) -> web.Response:
    await asyncio.sleep(0.2)
    batch = int(request.query.get("batch", "1"))
    return web.json_response([f"Fox item {batch}.{n}" for n in range(1, 6)])


# Headlines whose links open the story in a new window (target=_blank), and a button that opens an empty one.
NEWS = """<!doctype html><title>News</title><main><h1>News</h1>
<p><a href="/story" target="_blank">Read the story</a></p><p><a href="/gone-story" target="_blank">Old story</a></p>
<p><button onclick="window.open('about:blank')">Empty window</button></p>
<p><a href="/story" onclick="window.open('/gone-story')">Story with a pop-under</a></p></main>"""


def results(request: web.Request) -> web.Response:
    query = request.query.get("q", "")
    found = query != "nothing"
    return html(f"<title>Results</title><main><h1>Results for {query}</h1></main>", 200 if found else 404)


ROUTES: dict[str, Any] = {
    "/list": lambda _r: html(LIST),
    "/items": items,
    "/endless": lambda _r: html(ENDLESS),
    "/search": lambda _r: html(SEARCH),
    "/results": results,
    "/shop": lambda _r: html(SHOP),
    "/report.pdf": lambda _r: web.Response(body=REPORT_PDF, content_type="application/pdf"),
    "/faq": lambda _r: html(FAQ),
    "/news": lambda _r: html(NEWS),
    "/story": lambda _r: html(
        "<title>The story</title><main><h1>The whole story</h1><p>Foxes crossed the river at dawn.</p>"
        "<button id='more' onclick=\"this.insertAdjacentHTML('afterend', '<p>And came back at dusk.</p>')\">"
        "More</button></main>"
    ),
    "/gone-story": lambda _r: html("<title>Gone</title><main><h1>No such story</h1></main>", 404),
    "/links": lambda r: html(
        f"<title>Links</title><main><h1>Links</h1><a id='dead' href='{r.query['dead']}'>Dead link</a> "
        "<a id='search' href='/search'>Search page</a></main>"
    ),
}


@pytest.fixture(scope="module")
async def site() -> AsyncIterator[str]:
    async with serve_routes(ROUTES) as base:
        yield base


async def scrape(driver: BrowserDriver, url: str, **params: Any) -> dict[str, Any]:
    return await driver.call("scrape.page", url=url, onlyMainContent=False, **params)


async def test_load_more_until_the_list_is_whole(scraper: BrowserDriver, site: str) -> None:  # noqa: F811
    first = (await scrape(scraper, f"{site}/list"))["markdown"]
    assert "Fox item 1.5" in first and "Fox item 2.1" not in first
    whole = await scrape(scraper, f"{site}/list", actions=[{"type": "click", "selector": "#more", "repeat": 10}])
    # Two clicks brought the rest; the button went with the last batch, so the third was not tried.
    assert whole["actions"] == [
        {"type": "click", "times": 2, "navigated": False, "opened": False, "url": f"{site}/list", "value": None}
    ]
    assert all(f"Fox item {b}.{n}" in whole["markdown"] for b in (1, 2, 3) for n in range(1, 6)), whole["markdown"]
    assert "Load more" not in whole["markdown"]
    # The same in a picture of the page: the actions come before the capture.
    shot = await scrape(scraper, f"{site}/list", format="screenshot", actions=[{"type": "click", "selector": "#more"}])
    assert shot["actions"][0]["times"] == 1 and png_size(base64.b64decode(shot["screenshot"])) == (1280, 720)


async def test_every_answer_of_a_faq_is_opened(scraper: BrowserDriver, site: str) -> None:  # noqa: F811
    closed = (await scrape(scraper, f"{site}/faq"))["markdown"]
    assert "Answer 1" not in closed and "Question 3" in closed
    opened = await scrape(scraper, f"{site}/faq", actions=[{"type": "click", "text": "Show answer", "all": True}])
    assert all(f"Answer {n}: foxes" in opened["markdown"] for n in (1, 2, 3)), opened["markdown"]
    assert opened["actions"][0]["times"] == 3  # the hidden fourth button is not clicked
    none = await scraper.error(
        methods.SCRAPE_PAGE.name, url=f"{site}/faq", actions=[{"type": "click", "selector": ".gone", "all": True}]
    )
    assert none.code.value == "ELEMENT_NOT_FOUND" and none.details["action"] == 0
    skipped = await scrape(
        scraper, f"{site}/faq", actions=[{"type": "click", "selector": ".gone", "all": True, "optional": True}]
    )
    assert skipped["actions"][0]["times"] == 0


async def test_an_endless_list_is_scrolled_to_its_end(scraper: BrowserDriver, site: str) -> None:  # noqa: F811
    assert "Batch 2" not in (await scrape(scraper, f"{site}/endless"))["markdown"]
    got = await scrape(scraper, f"{site}/endless", actions=[{"type": "scroll", "repeat": 30}])
    assert all(f"## Batch {n}" in got["markdown"] for n in range(1, 5)), got["markdown"]
    # It stopped where the page no longer moved: 4 batches of 1500 px are a few viewports, not 30.
    assert 4 <= got["actions"][0]["times"] < 30, got["actions"]


async def test_a_form_sends_the_page_on_and_the_page_it_went_to_is_read(
    scraper: BrowserDriver,  # noqa: F811
    site: str,
) -> None:
    got = await scrape(
        scraper, f"{site}/search", actions=[{"type": "write", "selector": "#q", "text": "red fox", "submit": True}]
    )
    assert got["actions"] == [
        {
            "type": "write",
            "times": 1,
            "navigated": True,
            "opened": False,
            "url": f"{site}/results?q=red+fox",
            "value": None,
        }
    ]
    assert got["url"] == f"{site}/results?q=red+fox" and got["title"] == "Results"
    assert got["markdown"].startswith("# Results for red fox") and got["status"] == 200
    # The status is the document's the actions ended on, not the one first loaded.
    none = await scrape(
        scraper, f"{site}/search", actions=[{"type": "write", "selector": "#q", "text": "nothing", "submit": True}]
    )
    assert none["status"] == 404 and "Results for nothing" in none["markdown"]


async def test_a_link_that_opens_a_new_window_is_followed_there(
    scraper: BrowserDriver,  # noqa: F811
    site: str,
) -> None:
    before = scraper.service.engine.open_counts()
    got = await scrape(
        scraper,
        f"{site}/news",
        actions=[{"type": "click", "text": "Read the story"}, {"type": "click", "text": "More"}],
    )
    assert got["actions"] == [
        {"type": "click", "times": 1, "navigated": True, "opened": True, "url": f"{site}/story", "value": None},
        {"type": "click", "times": 1, "navigated": False, "opened": False, "url": f"{site}/story", "value": None},
    ]  # the second action was done in the window the first opened
    assert got["url"] == f"{site}/story" and got["title"] == "The story" and got["status"] == 200
    assert "Foxes crossed the river" in got["markdown"] and "came back at dusk" in got["markdown"]
    gone = await scrape(scraper, f"{site}/news", actions=[{"type": "click", "text": "Old story"}])
    assert gone["status"] == 404 and gone["url"] == f"{site}/gone-story"  # the opened window's own status
    # A window that never shows a web page is not where reading goes on.
    empty = await scrape(scraper, f"{site}/news", actions=[{"type": "click", "text": "Empty window"}])
    assert empty["actions"][0]["opened"] is False and empty["url"] == f"{site}/news" and "# News" in empty["markdown"]
    # Nor a window opened beside a link that took the page on itself (a pop-under): the link's page is read.
    under = await scrape(scraper, f"{site}/news", actions=[{"type": "click", "text": "Story with a pop-under"}])
    assert under["actions"][0]["opened"] is False and under["actions"][0]["navigated"] is True
    assert under["url"] == f"{site}/story" and under["status"] == 200
    assert scraper.service.engine.open_counts() == before  # the windows went with the scrape's context


async def test_elements_by_what_a_reader_sees(scraper: BrowserDriver, site: str) -> None:  # noqa: F811
    """A caller who has read the markdown knows a button's text and a field's label, not the page's CSS."""
    whole = await scrape(scraper, f"{site}/list", actions=[{"type": "click", "text": "Load more", "repeat": 10}])
    assert whole["actions"][0]["times"] == 2 and "Fox item 3.5" in whole["markdown"]
    found = await scrape(
        scraper, f"{site}/search", actions=[{"type": "write", "label": "Search foxes", "text": "den", "submit": True}]
    )
    assert found["url"] == f"{site}/results?q=den" and found["markdown"].startswith("# Results for den")
    chosen = await scrape(
        scraper,
        f"{site}/shop",
        actions=[{"type": "select", "label": "Size", "values": ["m"]}, {"type": "wait", "text": "Price 12 euros"}],
    )
    assert "Price 12 euros" in chosen["markdown"] and [a["times"] for a in chosen["actions"]] == [1, 1]
    # The same text on two shown elements is no one element.
    two = await scraper.error(
        methods.SCRAPE_PAGE.name, url=f"{site}/search", actions=[{"type": "click", "text": "Go fast."}]
    )
    assert two.code.value == "INVALID_PARAMETER" and two.details["matches"] == 2, two
    assert two.message.startswith("action 0 (click text 'Go fast.'): ")
    # A whole text: "Go" is the button's, not the paragraphs' "Go fast." (it submits the empty search).
    go = await scrape(scraper, f"{site}/search", actions=[{"type": "click", "text": "Go"}])
    assert go["actions"][0]["navigated"] and go["url"] == f"{site}/results?q="
    missing = await scraper.error(
        methods.SCRAPE_PAGE.name,
        url=f"{site}/shop",
        timeoutMs=5000,
        actions=[{"type": "hover", "text": "Submenu words"}],
    )  # there, but hidden: not counted, so not found
    assert missing.code.value == "ELEMENT_NOT_FOUND" and missing.details["selector"] == "text 'Submenu words'"
    assert missing.details["action"] == 0 and missing.hint == scrape_actions.HINT


async def test_select_hover_press_and_wait(scraper: BrowserDriver, site: str) -> None:  # noqa: F811
    plain = (await scrape(scraper, f"{site}/shop"))["markdown"]
    assert "Price 10 euros" in plain and "Submenu words" not in plain and "Late words" not in plain
    got = await scrape(
        scraper,
        f"{site}/shop",
        actions=[
            {"type": "select", "selector": "#size", "values": ["Medium"]},
            {"type": "hover", "selector": "#menu"},
            {"type": "press", "key": "k"},
            {"type": "press", "key": "x", "selector": "#size"},
            {"type": "wait", "selector": "#late"},
            {"type": "wait", "milliseconds": 50},
        ],
    )
    text = got["markdown"]
    assert "Price 12 euros" in text and "Submenu words" in text and "Late words" in text, text
    assert "Keys: k x" in text
    assert [a["times"] for a in got["actions"]] == [1] * 6 and not any(a["navigated"] for a in got["actions"])


async def test_a_script_runs_in_the_page_and_its_value_comes_back(scraper: BrowserDriver, site: str) -> None:  # noqa: F811
    got = await scrape(
        scraper,
        f"{site}/list",
        actions=[
            {"type": "script", "script": "document.querySelectorAll('li').length"},
            {"type": "script", "script": "document.getElementById('more').remove(); return {gone: true}"},
            {"type": "click", "selector": "#more", "optional": True},
        ],
    )
    assert [a["value"] for a in got["actions"]] == [5, {"gone": True}, None], got["actions"]
    assert "Load more" not in got["markdown"] and got["actions"][2]["times"] == 0
    went = await scrape(scraper, f"{site}/list", actions=[{"type": "script", "script": "location.href = '/search'"}])
    assert went["actions"][0]["navigated"] and went["url"] == f"{site}/search", went["actions"]
    broken = await scraper.error(
        methods.SCRAPE_PAGE.name, url=f"{site}/list", actions=[{"type": "script", "script": "no_such_name()"}]
    )
    assert broken.code.value == "EXECUTION_ERROR" and broken.details["action"] == 0 and "no_such_name" in broken.message


async def test_keystrokes_for_a_page_that_listens_to_keys(scraper: BrowserDriver, site: str) -> None:  # noqa: F811
    filled = await scrape(scraper, f"{site}/shop", actions=[{"type": "write", "selector": "#find", "text": "desk"}])
    assert "Nothing found yet" in filled["markdown"]  # filled in at once: no key was pressed
    typed = await scrape(
        scraper, f"{site}/shop", actions=[{"type": "write", "selector": "#find", "text": "desk", "keystrokes": True}]
    )
    assert "Finding desk" in typed["markdown"], typed["markdown"]  # the old value went first


async def test_optional_actions_are_skipped_when_their_element_is_not_there(
    scraper: BrowserDriver,  # noqa: F811
    site: str,
) -> None:
    # Within 5 s (3.5 s for the actions): an optional click that waited for its element would have left the
    # select no time at all.
    got = await scrape(
        scraper,
        f"{site}/shop",
        actions=[
            {"type": "click", "selector": "#cookie-notice button", "optional": True},
            {"type": "click", "selector": "#sub", "optional": True},  # there, but hidden
            {"type": "select", "selector": "#size", "values": ["m"]},
            {"type": "wait", "selector": "#never", "optional": True},  # waited for while there is time
        ],
        timeoutMs=5000,
    )
    assert [a["times"] for a in got["actions"]] == [0, 0, 1, 0] and "Price 12 euros" in got["markdown"]


async def test_a_failing_action_names_itself_and_leaves_nothing_open(
    scraper: BrowserDriver,  # noqa: F811
    site: str,
) -> None:
    before = scraper.service.engine.open_counts()
    ambiguous = await scraper.error(
        methods.SCRAPE_PAGE.name,
        url=f"{site}/list",
        actions=[{"type": "wait", "milliseconds": 1}, {"type": "click", "selector": "li"}],
    )
    assert ambiguous.code.value == "INVALID_PARAMETER" and ambiguous.details["action"] == 1, ambiguous
    assert ambiguous.details["matches"] == 5 and ambiguous.hint == scrape_actions.AMBIGUOUS_HINT
    assert ambiguous.message.startswith("action 1 (click 'li'): ")

    missing = await scraper.error(
        methods.SCRAPE_PAGE.name, url=f"{site}/shop", timeoutMs=5000, actions=[{"type": "click", "selector": "#buy"}]
    )
    assert missing.code.value == "ELEMENT_NOT_FOUND" and missing.details == {
        "selector": "#buy",
        "timeoutMs": missing.details["timeoutMs"],
        "action": 0,
        "type": "click",
        "pageUrl": f"{site}/shop",
    }
    assert missing.hint == scrape_actions.HINT

    never = await scraper.error(
        methods.SCRAPE_PAGE.name, url=f"{site}/shop", timeoutMs=5000, actions=[{"type": "wait", "selector": "#never"}]
    )
    assert never.code.value == "ELEMENT_NOT_FOUND" and never.details["action"] == 0 and "was shown" in never.message

    wrong = await scraper.error(
        methods.SCRAPE_PAGE.name,
        url=f"{site}/shop",
        timeoutMs=5000,
        actions=[{"type": "select", "selector": "#size", "values": ["XL"]}],
    )
    assert wrong.code.value == "INVALID_PARAMETER" and wrong.details["action"] == 0 and "XL" in wrong.message

    # The first action waits out what the call has; the second has no time left, and says so.
    late = await scraper.error(
        methods.SCRAPE_PAGE.name,
        url=f"{site}/shop",
        timeoutMs=4000,
        actions=[{"type": "wait", "selector": "#never", "optional": True}, {"type": "click", "selector": "#size"}],
    )
    assert late.code.value == "OPERATION_TIMEOUT" and late.details["action"] == 1, late
    assert "timeoutMs" in late.hint

    disabled = await scraper.error(
        methods.SCRAPE_PAGE.name,
        url=f"{site}/shop",
        timeoutMs=5000,
        actions=[{"type": "click", "selector": "#checkout"}],
    )
    assert disabled.code.value == "EXECUTION_ERROR" and disabled.hint == scrape_actions.DISABLED_HINT, disabled
    covered = await scraper.error(
        methods.SCRAPE_PAGE.name, url=f"{site}/shop", timeoutMs=5000, actions=[{"type": "click", "selector": "#top"}]
    )
    assert covered.code.value == "EXECUTION_ERROR" and covered.hint == scrape_actions.COVERED_HINT, covered

    pdf = await scraper.error(
        methods.SCRAPE_PAGE.name, url=f"{site}/report.pdf", actions=[{"type": "click", "selector": "a"}]
    )
    assert pdf.code.value == "UNSUPPORTED_CONTENT_TYPE" and "without actions" in pdf.hint
    # A selector the browser cannot parse is refused before the page is loaded.
    bad = await scraper.error(
        methods.SCRAPE_PAGE.name,
        url=f"{site}/shop",
        actions=[{"type": "hover", "selector": "#menu"}, {"type": "click", "selector": "div["}],
    )
    assert bad.code.value == "INVALID_PARAMETER" and bad.details["errors"][0]["field"] == "actions.1.click.selector"
    assert scraper.service.engine.open_counts() == before


async def test_where_the_actions_took_the_page_is_said_when_one_fails(
    scraper: BrowserDriver,  # noqa: F811
    site: str,
) -> None:
    with socket.socket() as closed:  # a port nothing listens on (bound, never listening)
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}/"
        links = f"{site}/links?dead={dead}"
        err = await scraper.error(methods.SCRAPE_PAGE.name, url=links, actions=[{"type": "click", "text": "Dead link"}])
    assert err.code.value == "HOST_UNREACHABLE" and err.details["sentFrom"] == f"{site}/links", err  # query left out
    assert f"then action 0 (click text 'Dead link') sent the browser to {dead}" in err.message
    # The first click went on to the search page: the second looks for its element there, and says where it was.
    lost = await scraper.error(
        methods.SCRAPE_PAGE.name,
        url=links,
        timeoutMs=5000,
        actions=[{"type": "click", "selector": "#search"}, {"type": "click", "selector": "#dead"}],
    )
    assert lost.code.value == "ELEMENT_NOT_FOUND" and lost.details["action"] == 1
    assert lost.details["pageUrl"] == f"{site}/search"


def test_bad_actions_are_refused_by_the_model() -> None:
    def refused(actions: Any) -> str:
        with pytest.raises(ValidationError) as caught:
            ScrapeRequest.model_validate({"url": "http://127.0.0.1:1/", "actions": actions})
        return json.dumps(caught.value.errors(include_url=False, include_context=False), default=str)

    assert "a ref (ref_12)" in refused([{"type": "click", "selector": "ref_4"}])
    assert "a wait action takes one of milliseconds, selector, text" in refused([{"type": "wait"}])
    assert "not milliseconds and selector together" in refused([{"type": "wait", "milliseconds": 5, "selector": "p"}])
    assert "a click action takes one of selector, text" in refused([{"type": "click", "repeat": 2}])
    assert "a write action takes one of selector, label" in refused([{"type": "write", "text": "fox"}])
    assert "at most 200 characters" in refused([{"type": "click", "text": "x" * 201}])
    assert "does not match any of the expected tags" in refused([{"type": "jump"}])
    assert "Extra inputs" in refused([{"type": "click", "selector": "p", "times": 3}])
    assert "less than or equal to 50" in refused([{"type": "click", "selector": "p", "repeat": 51}])
    assert "scrolled into view once" in refused([{"type": "scroll", "selector": "#end", "repeat": 2}])
    assert "not both" in refused([{"type": "click", "text": "More", "all": True, "repeat": 2}])
    assert "at most 20 items" in refused([{"type": "press", "key": "a"}] * (MAX_ACTIONS + 1))
    assert "add up to 60001 ms" in refused(
        [{"type": "wait", "milliseconds": 30_000}] * 2 + [{"type": "wait", "milliseconds": 1}]
    )


def test_wait_actions_add_to_the_calls_time() -> None:
    plain = ScrapePageParams(url="http://127.0.0.1:1/", waitFor=1000)
    waits = ScrapePageParams(
        url="http://127.0.0.1:1/",
        waitFor=1000,
        actions=[{"type": "wait", "milliseconds": 2500}, {"type": "wait", "selector": "p"}],  # type: ignore[list-item]
    )
    assert waits.waits_ms == 3500
    budget = LADDER.agent_budget_ms(methods.SCRAPE_PAGE, waits)
    assert budget - LADDER.agent_budget_ms(methods.SCRAPE_PAGE, plain) == 2500
