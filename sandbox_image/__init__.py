"""Boxwright's in-container side: the agent (aiohttp JSON-RPC server) and the code runner daemon.

The agent runs as user `agent`; code from `code.run` runs in a separate daemon as user `runner`
(`python3 -m sandbox_image.code.daemon`), because a process without capabilities cannot switch
uid. Both speak the contract in `rpc/` through the same `Dispatcher`.
"""

AGENT_VERSION = "0.1.0"

__all__ = ["AGENT_VERSION"]
