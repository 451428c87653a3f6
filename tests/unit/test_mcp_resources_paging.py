"""resources/list pagination (host.mcp.resources.page_of): keyset cursors, stable under change."""

from __future__ import annotations

import pytest
from mcp import MCPError

from host.mcp.resources import page_of
from host.runs.artifacts import StoredArtifact
from rpc.models.tasks import ArtifactRef


def entry(run: str, n: int, ended: int) -> StoredArtifact:
    ref = ArtifactRef(artifactId=f"art_{run}_{n}", type="json", name=f"a{n}.json", size=1, mimeType="application/json")
    return StoredArtifact(run_id=run, owner="alice", ref=ref, ended_at=ended)


def walk(entries: list[StoredArtifact], size: int) -> list[str]:
    seen, cursor = [], None
    while True:
        page, cursor = page_of(entries, cursor, size)
        seen += [e.artifact_id for e in page]
        if cursor is None:
            return seen


def test_pages_cover_everything_once_newest_run_first() -> None:
    entries = [entry(f"run{r}", n, 1000 + r) for r in range(7) for n in range(3)]
    seen = walk(entries, 4)
    assert len(seen) == len(set(seen)) == 21
    assert seen[:3] == ["art_run6_0", "art_run6_1", "art_run6_2"]
    assert page_of(entries, None, 21)[1] is None and page_of(entries, None, 20)[1] is not None
    assert page_of([], None, 5) == ([], None)


def test_changes_between_pages_shift_nothing() -> None:
    entries = [entry(f"run{r}", 0, 1000 + r) for r in range(6)]
    first, cursor = page_of(entries, None, 2)
    # The newest listed artifact expires and a newer run arrives before the next page is asked for.
    changed = [e for e in entries if e is not first[0]] + [entry("run9", 0, 5000)]
    rest = walk_from(changed, cursor, 2)
    assert [e.artifact_id for e in first] + rest == [f"art_run{r}_0" for r in (5, 4, 3, 2, 1, 0)]


def walk_from(entries: list[StoredArtifact], cursor: str | None, size: int) -> list[str]:
    seen: list[str] = []
    while cursor is not None:
        page, cursor = page_of(entries, cursor, size)
        seen += [e.artifact_id for e in page]
    return seen


# …, [1e3080,"a","b"] (an OverflowError came out as "cannot convert float infinity"), [1.5,"a","b"], [true,"a","b"]
@pytest.mark.parametrize(
    "cursor",
    ["x", "bm90IGpzb24", "WzEsMl0", "WyJhIiwiYiIsImMiXQ", "WzFlMzA4MCwiYSIsImIiXQ", "WzEuNSwiYSIsImIiXQ",
     "W3RydWUsImEiLCJiIl0"],
)  # fmt: skip
def test_bad_cursors_are_invalid_params(cursor: str) -> None:
    with pytest.raises(MCPError, match="invalid cursor"):
        page_of([entry("run1", 0, 1)], cursor, 2)
