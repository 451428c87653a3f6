"""The README states what the code decides; these tests keep the two from drifting apart.

A failing test prints the block the README should hold: paste it over the old one.
"""

from __future__ import annotations

from pathlib import Path

from rpc.deadline import LADDER

README = Path(__file__).resolve().parents[2] / "README.md"


def _s(seconds: float) -> str:
    return f"{seconds:g} s"


def ladder_table() -> str:
    rows = [
        ("layer", "its deadline", "when it passes"),
        ("---", "---", "---"),
        (
            "the operation in the sandbox (a code run, a browser step)",
            f"its own `timeoutMs`, and {_s(LADDER.operation_s)} before its handler's",
            "a structured answer: `timedOut: true`, `NAVIGATION_TIMEOUT`, `ELEMENT_NOT_FOUND`, …",
        ),
        (
            "the agent's handler",
            f"{_s(LADDER.handler_s)} (at most {LADDER.handler_share:.0%} of its budget) before the agent's",
            "`OPERATION_TIMEOUT`",
        ),
        (
            "the agent (`deadlineMs`)",
            f"the operation's `timeoutMs` (plus `waitMs`) + {_s(LADDER.agent_slack_s)}",
            "",
        ),
        ("the host's call to the agent", f"{_s(LADDER.transport_s)} after the agent's", "`RPC_TIMEOUT`"),
        ("the MCP tool", f"{_s(LADDER.tool_s)} after the host's call", "`TOOL_TIMEOUT`"),
    ]
    return "\n".join("| " + " | ".join(row).replace("  ", " ") + " |" for row in rows)


def test_the_timeouts_section_states_the_ladder() -> None:
    table = ladder_table()
    assert table in README.read_text(), f"README's Timeouts section should hold:\n\n{table}\n"
