"""host/readings.py, the pure part: which calls share a reading, how long and how much is kept, how old an
answer from it may be, and that a part cut by the host is the part the agent would have cut (rpc.paging)."""

from __future__ import annotations

from host.readings import Readings, key_of, part_of
from rpc.models.scrape import ScrapePageResult, ScrapeRequest
from rpc.paging import text_part

TEXT = "".join(f"line {i} of the page\n" for i in range(2000))


def whole(text: str = TEXT, **update: object) -> ScrapePageResult:
    return ScrapePageResult(
        url="https://example.org/", title="T", status=200, format="markdown", markdown=text, wait="settled",
        elapsedMs=5, totalChars=len(text), **update,  # type: ignore[arg-type]
    )  # fmt: skip


def test_calls_share_a_reading_only_when_they_read_the_same_text() -> None:
    base = ScrapeRequest(url="https://example.org/a", maxChars=100)
    same = ScrapeRequest(url="https://example.org/a", maxChars=500, offset=300, maxAge=60_000)
    assert key_of("alice", base) == key_of("alice", same)  # a part's start and length, the age asked: not the text
    assert key_of("bob", base) != key_of("alice", base)
    for other in ({"onlyMainContent": False}, {"format": "html"}, {"profileId": "work"}, {"locale": "de-DE"},
                  {"httpAuth": {"username": "a", "password": "p"}}, {"sandboxId": "sb_1"}):  # fmt: skip
        assert key_of("alice", ScrapeRequest(url="https://example.org/a", **other)) != key_of("alice", base), other
    one = ScrapeRequest(url="https://example.org/a", httpAuth={"username": "a", "password": "p"})
    two = ScrapeRequest(url="https://example.org/a", httpAuth={"username": "a", "password": "q"})
    assert key_of("alice", one) != key_of("alice", two)  # another password is another reading


def test_a_part_is_the_one_the_agent_would_cut() -> None:
    for offset, max_chars in ((0, 1000), (1000, 777), (5000, None), (len(TEXT) - 10, 50), (len(TEXT) + 5, 10)):
        part = part_of(whole(), offset, max_chars)
        expected = text_part(TEXT, offset, max_chars)
        assert (part.markdown, part.nextOffset, part.totalChars, part.truncated) == (
            expected.text, expected.next_offset, expected.total, expected.truncated
        )  # fmt: skip
    assert part_of(whole(truncated=True), 0, None).truncated  # a file's own pages cut stay said


def test_kept_for_a_while_and_within_a_size() -> None:
    now = [0.0]
    parts = Readings(ttl_s=600, max_chars=len(TEXT) * 2 + 10, clock=lambda: now[0])
    parts.keep("a", whole())
    parts.keep("b", whole())
    assert parts.get("a") is not None and parts.get("a").result.storageState is None  # type: ignore[union-attr]
    parts.keep("c", whole())  # over the size: the least recently used goes ("b"; "a" was just read)
    assert parts.get("b") is None and parts.get("a") is not None and parts.get("c") is not None
    parts.keep("huge", whole(TEXT * 3))  # larger than everything kept may be: not kept at all
    assert parts.get("huge") is None and parts.get("c") is not None
    now[0] = 601.0
    assert parts.get("a") is None and parts.get("c") is None  # expired
    parts.keep("d", whole())
    assert parts.get("d") is not None


def test_an_answer_no_older_than_asked() -> None:
    now = [100.0]
    kept = Readings(clock=lambda: now[0])
    kept.keep("a", whole())
    now[0] = 130.0  # read 30 s ago
    assert kept.get("a", max_age_ms=29_999) is None  # too old for this caller, still kept for another
    reading = kept.get("a", max_age_ms=30_000)
    assert reading is not None and kept.age_ms(reading) == 30_000
    answer = kept.reused(reading, part_of(reading.result, 0, 100))
    assert answer.reused and answer.ageMs == 30_000 and answer.elapsedMs == 0 and len(answer.markdown or "") <= 100
    links = ScrapePageResult(url="https://example.org/", title="T", status=200, format="links", wait="settled",
                             elapsedMs=5, links=["https://example.org/a", "https://example.org/b"])  # fmt: skip
    kept.keep("l", links)  # links are kept too, counted by their length
    assert kept.get("l", max_age_ms=0).result.links == links.links  # type: ignore[union-attr]
