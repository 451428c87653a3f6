"""The README states what the code decides; these tests keep the two from drifting apart.

A failing test prints the block the README should hold: paste it over the old one.
"""

from __future__ import annotations

from pathlib import Path

from pydantic_core import PydanticUndefined

from host.config import Settings
from rpc.deadline import LADDER
from rpc.settings import EnvSettings
from sandbox_image.code.runner import CLEANUP_S
from sandbox_image.config import SandboxSettings

README = Path(__file__).resolve().parents[2] / "README.md"


def _s(seconds: float) -> str:
    return f"{seconds:g} s"


def ladder_table() -> str:
    rows = [
        ("layer", "its deadline", "when it passes"),
        ("---", "---", "---"),
        (
            "the operation in the sandbox (a code run, a browser step)",
            f"its own `timeoutMs`, and {_s(LADDER.operation_s)} before its handler's "
            f"(a code run {_s(LADDER.operation_s + CLEANUP_S)}, to kill what it started)",
            "a structured answer: `timedOut: true`, `NAVIGATION_TIMEOUT`, `ELEMENT_NOT_FOUND`, …",
        ),
        (
            "the agent's handler",
            f"{_s(LADDER.handler_s)} (at most {LADDER.handler_share:.0%} of its budget) before the agent's",
            "`OPERATION_TIMEOUT`",
        ),
        (
            "the agent (`deadlineMs`)",
            "the operation's `timeoutMs` (plus `waitMs`, or scrape's `waitFor` and `wait` actions) + "
            + _s(LADDER.agent_slack_s),
            "",
        ),
        ("the host's call to the agent", f"{_s(LADDER.transport_s)} after the agent's", "`RPC_TIMEOUT`"),
        ("the MCP tool", f"{_s(LADDER.tool_s)} after the host's call", "`TOOL_TIMEOUT`"),
    ]
    return "\n".join("| " + " | ".join(row).replace("  ", " ") + " |" for row in rows)


def test_the_timeouts_section_states_the_ladder() -> None:
    table = ladder_table()
    assert table in README.read_text(), f"README's Timeouts section should hold:\n\n{table}\n"


def _default(settings: type[EnvSettings], name: str) -> str:
    field = settings.model_fields[name]
    if field.default is None or field.default is PydanticUndefined:
        return ""
    return f"`{str(field.default).lower() if isinstance(field.default, bool) else field.default}`"


def env_table(settings: type[EnvSettings]) -> str:
    rows = ["| variable | default | |", "| --- | --- | --- |"]
    for name, field in settings.model_fields.items():
        rows.append(f"| `{settings.env_name(name)}` | {_default(settings, name)} | {field.description} |")
    return "\n".join(rows)


def test_the_environment_tables_are_the_settings() -> None:
    text = README.read_text()
    for settings in (Settings, SandboxSettings):
        table = env_table(settings)
        assert table in text, f"README should hold the table of {settings.__name__}:\n\n{table}\n"


def _layout() -> str:
    text = README.read_text()
    return text[text.index("## Layout") :]


def test_the_layout_section_names_every_module() -> None:
    """Every package and module of the three top-level packages (the browser's operations aside: its
    docstring lists them) is named in the README's Layout section."""
    layout = _layout()
    root = README.parent
    missing = []
    for top in ("host", "rpc", "sandbox_image"):
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root)
            if path.name == "__init__.py" or rel.parts[:2] == ("sandbox_image", "browser"):
                continue
            if f"`{path.stem}`" not in layout:
                missing.append(str(rel))
        for package in sorted(p for p in (root / top).rglob("*") if (p / "__init__.py").is_file()):
            if f"`{package.name}/`" not in layout and package != root / top:
                missing.append(f"{package.relative_to(root)}/")
    assert not missing, f"README's Layout section does not name: {missing}"
