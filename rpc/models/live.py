"""The live view's WebSocket messages: a person's browser ↔ the host's relay ↔ the agent's `/live`.

The agent serves `GET /live?sessionId=…` as a WebSocket (the sandbox's bearer token, like /rpc). It
streams the session's active tab as JPEG frames (Chromium's screencast) and status (tabs, URL), and
takes input: mouse, wheel, keys, typed text, navigation, tab switches. The host relays both ways,
checks every input against these models, adds `agent` (a tool call is acting on the session) and
keeps `done` (the person finished a login) to itself.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from rpc.models.base import Params, Result

LIVE_PATH = "/live"
# The close code of the agent's live WebSocket when the session it shows was closed: the host then ends
# the view (its link and cookie), since nothing will ever be shown in it again.
SESSION_CLOSED_CODE = 4404
MAX_COORD = 20_000.0
Modifiers = Annotated[int, Field(0, ge=0, le=15, description="Alt=1, Ctrl=2, Meta=4, Shift=8")]
Coord = Annotated[float, Field(ge=-MAX_COORD, le=MAX_COORD)]


# -- input: person → agent ----------------------------------------------------------------------
class MouseInput(Params):
    type: Literal["mouse"]
    event: Literal["mousePressed", "mouseReleased", "mouseMoved"]
    x: Coord
    y: Coord
    button: Literal["none", "left", "middle", "right"] = "none"
    buttons: int = Field(0, ge=0, le=31, description="Buttons held, as in MouseEvent.buttons")
    clickCount: int = Field(0, ge=0, le=3)
    modifiers: Modifiers = 0


class WheelInput(Params):
    type: Literal["wheel"]
    x: Coord
    y: Coord
    deltaX: Coord = 0.0
    deltaY: Coord = 0.0
    modifiers: Modifiers = 0


class KeyInput(Params):
    type: Literal["key"]
    event: Literal["down", "up"]
    key: str = Field(max_length=32, description="KeyboardEvent.key")
    code: str = Field("", max_length=32, description="KeyboardEvent.code")
    keyCode: int = Field(0, ge=0, le=255, description="KeyboardEvent.keyCode (the Windows virtual key code)")
    text: str = Field("", max_length=4, description="What the key types (empty for Enter-less control keys)")
    location: int = Field(0, ge=0, le=3)
    modifiers: Modifiers = 0


class TextInput(Params):
    """Text typed at once (paste, IME): inserted as if typed, without key events."""

    type: Literal["text"]
    text: str = Field(min_length=1, max_length=10_000, repr=False)


class NavigateInput(Params):
    type: Literal["navigate"]
    url: str = Field(min_length=1, max_length=8192)


class HistoryInput(Params):
    type: Literal["history"]
    action: Literal["back", "forward", "reload"]


class TabInput(Params):
    type: Literal["tab"]
    action: Literal["select", "new", "close"]
    tabId: str | None = Field(None, min_length=1, max_length=64)


class DialogInput(Params):
    type: Literal["dialog"]
    accept: bool = True
    promptText: str | None = Field(None, max_length=10_000)


class DoneInput(Params):
    """The person pressed Done (a login): handled by the host, never sent to the agent."""

    type: Literal["done"]


AgentInput = Annotated[
    MouseInput | WheelInput | KeyInput | TextInput | NavigateInput | HistoryInput | TabInput | DialogInput,
    Field(discriminator="type"),
]
ViewerInput = Annotated[
    MouseInput | WheelInput | KeyInput | TextInput | NavigateInput | HistoryInput | TabInput | DialogInput | DoneInput,
    Field(discriminator="type"),
]
AGENT_INPUT: TypeAdapter[AgentInput] = TypeAdapter(AgentInput)
VIEWER_INPUT: TypeAdapter[ViewerInput] = TypeAdapter(ViewerInput)


# -- output: agent/host → person ----------------------------------------------------------------
class LiveTab(Result):
    tabId: str
    url: str
    title: str
    active: bool


class StatusMessage(Result):
    type: Literal["status"] = "status"
    sessionId: str
    tabs: list[LiveTab]
    activeTabId: str | None
    url: str = Field(description="URL of the tab on screen")
    title: str
    dialog: str | None = Field(None, description="A JavaScript dialog waiting on the tab: its type and message")


class FrameMessage(Result):
    """One screencast frame (sent as is; the page draws it at width × height CSS pixels)."""

    type: Literal["frame"] = "frame"
    tabId: str
    data: str = Field(repr=False, description="Base64 JPEG")
    width: float
    height: float


class AgentActivity(Result):
    type: Literal["agent"] = "agent"
    acting: bool = Field(description="A tool call is acting on this session right now")
    tool: str | None = None


class NoticeMessage(Result):
    """Something the person should read: a refused input, the session closing, a finished login."""

    type: Literal["notice"] = "notice"
    level: Literal["info", "error"] = "info"
    message: str
    final: bool = Field(False, description="The view ends after this message")
