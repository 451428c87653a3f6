"""A sandbox ends itself once its TTL is over, even when no server is left to remove it.

The server removes a sandbox when it expires; if that server is gone for good (killed, its machine
lost), nobody else may — other servers never touch a running sandbox they did not make. So the agent
exits a grace period (`BOXWRIGHT_EXPIRY_GRACE`, a minute) after the expiry it was started with
(`BOXWRIGHT_EXPIRES_AT`), which stops the container (the agent is tini's only child); a stopped,
long-expired sandbox may then be removed by any server of the namespace. The grace lets the server's
own reaper (every 15 s by default) remove it first and absorbs clock skew with a remote engine. The
watch is a thread, so a busy or blocked event loop cannot delay it.
"""

from __future__ import annotations

import logging
import os
import threading
import time

log = logging.getLogger("boxwright.agent")


def watch_expiry(expires_at: float, grace_s: float) -> threading.Thread:
    """Start the thread that ends this process at `expires_at` + `grace_s` (epoch seconds)."""

    def run() -> None:
        while (left := expires_at + grace_s - time.time()) > 0:
            time.sleep(min(left, 60.0))
        log.warning("sandbox expired %.0f s ago: the agent exits, which stops the sandbox", time.time() - expires_at)
        logging.shutdown()
        os._exit(0)

    thread = threading.Thread(target=run, name="expiry", daemon=True)
    thread.start()
    return thread
