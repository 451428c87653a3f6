"""The live view: a web page where a person sees a sandbox's browser session and drives it.

Modules: views (live views, their one-time links and cookies), activity (which sessions a tool call
is acting on), relay (the person's WebSocket ↔ the agent's), routes (the page, the token exchange,
the WebSocket), listener (the loopback listener of stdio and `boxwright login`), service (what the
rest of the host uses). The page itself is static/live.html, live.js and live.css.
"""

from host.live.service import LiveViewService

__all__ = ["LiveViewService"]
