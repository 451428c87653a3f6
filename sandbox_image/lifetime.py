"""A sandbox ends itself once its TTL is over, even when no server is left to remove it.

The server removes a sandbox when it expires; if that server is gone for good (killed, its machine
lost), nobody else may — other servers never touch a running sandbox they did not make. So the agent
exits a grace period (`BOXWRIGHT_EXPIRY_GRACE`, a minute) after the expiry it was started with
(`BOXWRIGHT_EXPIRES_AT`), which stops the container (the agent is tini's only child); a stopped,
long-expired sandbox may then be removed by any server of the namespace. The host moves the expiry
when it claims a pooled sandbox or extends one (sandbox.claim, sandbox.extend). The grace lets the server's
own reaper (every 15 s by default) remove it first and absorbs clock skew with a remote engine. The
watch is a thread, so a busy or blocked event loop cannot delay it.
"""

from __future__ import annotations

import logging
import os
import threading
import time

log = logging.getLogger("boxwright.agent")


class Lifetime:
    """The expiry the watch thread ends this process at; the host moves it (a pooled sandbox's claim,
    sandbox_keepalive) with sandbox.claim / sandbox.extend."""

    def __init__(self, expires_at: float, grace_s: float) -> None:
        self.expires_at = expires_at
        self.grace_s = grace_s

    def left(self) -> float:
        return self.expires_at + self.grace_s - time.time()


# The running agent's lifetime (None: started without an expiry, e.g. in tests or by hand).
CURRENT: Lifetime | None = None


def watch_expiry(expires_at: float, grace_s: float) -> threading.Thread:
    """Start the thread that ends this process at the expiry (`expires_at` + `grace_s`, epoch seconds,
    as moved later through CURRENT); it looks again at least every minute."""
    global CURRENT
    lifetime = CURRENT = Lifetime(expires_at, grace_s)

    def run() -> None:
        while (left := lifetime.left()) > 0:
            time.sleep(min(left, 60.0))
        log.warning(
            "sandbox expired %.0f s ago: the agent exits, which stops the sandbox", time.time() - lifetime.expires_at
        )
        logging.shutdown()
        os._exit(0)

    thread = threading.Thread(target=run, name="expiry", daemon=True)
    thread.start()
    return thread


def move_expiry(expires_at: int | None) -> None:
    """The host set a new expiry (epoch seconds)."""
    if expires_at is not None and CURRENT is not None:
        CURRENT.expires_at = expires_at
